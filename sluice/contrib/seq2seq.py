"""`sl.contrib.seq2seq`: TF1's `tf.contrib.seq2seq.sequence_loss` over [batch, time] Tensors.

The implementation is sluice/_tf1/contrib/seq2seq.py."""

from sluice._tf1.contrib.seq2seq import sequence_loss

__all__ = ["sequence_loss"]
