"""`sl.contrib`: the parts of TF1's `tf.contrib` that published TF1 programs use most.

`tf.contrib.rnn` is `sl.contrib.rnn`, `tf.contrib.legacy_seq2seq` is
`sl.contrib.legacy_seq2seq`, `tf.contrib.seq2seq.sequence_loss` is
`sl.contrib.seq2seq.sequence_loss`.
"""

from sluice.contrib import legacy_seq2seq, rnn, seq2seq

__all__ = ["legacy_seq2seq", "rnn", "seq2seq"]
