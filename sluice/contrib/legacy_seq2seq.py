"""`sl.contrib.legacy_seq2seq`: TF1's list-of-steps decoder and sequence losses.

The implementation is sluice/_tf1/contrib/legacy_seq2seq.py."""

from sluice._tf1.contrib.legacy_seq2seq import rnn_decoder, sequence_loss, sequence_loss_by_example

__all__ = ["rnn_decoder", "sequence_loss", "sequence_loss_by_example"]
