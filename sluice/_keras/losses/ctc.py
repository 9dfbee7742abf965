"""Keras 3's CTC loss (Connectionist Temporal Classification), for sequence targets whose
alignment with the predictions is unknown (speech, handwriting).

`y_true` is (batch, max_length) integer labels, 0 being the blank and the padding (so a row's
labels are its nonzero ids, at its start); `y_pred` is (batch, time, classes) logits, not
softmax-normalized. Each sample's loss is -log of the probability of all alignments of its
time steps that collapse to its labels (the op CTCLossDense, sluice/framework/ops/nn/ctc_ops.py).

>>> loss = sl.losses.ctc([[1, 0]], np.zeros((1, 2, 3), np.float32))
>>> np.round(sl.Session().run(loss), 4)   # 3 alignments of 9: (1, 1), (0, 1), (1, 0)
array([1.0986], dtype=float32)
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.losses.loss import LossFunctionWrapper, float_prediction
from sluice.framework.ir import dtypes
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, reduction_ops
from sluice.framework.ops.nn.ctc_ops import ctc_loss_dense

_MASK_INDEX = 0  # Keras 3: the blank, and the padding of y_true


@export("losses.ctc")
def ctc(y_true: Any, y_pred: Any) -> Any:
    """The CTC loss of each sample (see the module docstring).

    Raises:
      ValueError: y_true not of rank 2 or y_pred not of rank 3 (Keras 3's messages).
    """
    y_true = core_ops.convert_to_tensor(y_true)
    y_pred = float_prediction(y_pred)
    if y_true.shape.rank != 2:
        raise ValueError(
            "Targets `y_true` are expected to be a tensor of shape `(batch_size, max_length)` "
            f"in integer format. Received: y_true.shape={y_true.shape}"
        )
    if y_pred.shape.rank != 3:
        raise ValueError(
            "Logits `y_pred` are expected to be a tensor of shape `(batch_size, max_length, "
            f"num_classes)`. Received: y_pred.shape={y_pred.shape}"
        )
    labels = fill_ops.cast(y_true, dtypes.int32)
    label_length = reduction_ops.reduce_sum(
        fill_ops.cast(math_ops.not_equal(labels, _MASK_INDEX), dtypes.int32), axis=-1
    )
    shape = fill_ops.shape(y_pred, out_type=dtypes.int32)
    logit_length = fill_ops.fill(shape[:1], shape[1])
    return ctc_loss_dense(y_pred, labels, label_length, logit_length, blank_index=_MASK_INDEX)


@export("losses.CTC")
class CTC(LossFunctionWrapper):
    """The CTC loss, reduced; see `ctc`."""

    def __init__(
        self, reduction: str = "sum_over_batch_size", name: str = "ctc", dtype: Any = None
    ):
        super().__init__(ctc, reduction=reduction, name=name, dtype=dtype)
