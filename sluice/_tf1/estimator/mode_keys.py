"""`ModeKeys` (TF1 `tf.estimator.ModeKeys`): the mode an Estimator calls its model_fn in."""

from __future__ import annotations

from sluice._export import export


@export("estimator.ModeKeys")
class ModeKeys:
    """The three modes of a model_fn: `TRAIN` ('train'), `EVAL` ('eval'), `PREDICT` ('infer').

    >>> sl.estimator.ModeKeys.PREDICT
    'infer'
    """

    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"
