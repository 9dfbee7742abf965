"""CTCLossDense: Connectionist Temporal Classification (Graves et al., 2006) over dense,
batch-major inputs, as Keras 3's `ops.ctc_loss`:

    loss[b] = -log sum over the alignments a of length T[b] that collapse to labels[b, :L[b]]
              of prod_t softmax(logits[b, t])[a_t]

(collapsing merges repeated classes, then drops `blank_index`). The kernel is optax's
`ctc_loss` (the forward algorithm in log space, the one Keras 3's JAX backend follows); like
TF's CTCLoss op, the op has a second output, the gradient of each loss with respect to its
logits (`backprop`), which the registered gradient scales by the incoming one.

>>> loss = ctc_loss_dense(np.zeros((1, 2, 3), np.float32), np.array([[1]]), [1], [2])
>>> round(float(sl.Session().run(loss)[0]), 4)   # alignments (1, 1), (0, 1), (1, 0): 3 / 9
1.0986
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import optax

from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import register_gradient, register_op
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import array_ops, fill_ops
from sluice.framework.ops.core.core_ops import apply_op, convert_to_tensor
from sluice.framework.ops.core.shape_rules import require_dtype, require_rank


def _ctc_infer(op) -> list:
    logits, labels, label_length, logit_length = op.inputs
    require_dtype(logits, "floating", dtypes.is_floating)
    for t in (labels, label_length, logit_length):
        require_dtype(t, "integer", dtypes.is_integer)
    require_rank(logits, 3, "logits (batch, time, classes)")
    require_rank(labels, 2, "labels (batch, max_length)")
    require_rank(label_length, 1, "label_length (batch,)")
    require_rank(logit_length, 1, "logit_length (batch,)")
    batch = logits.shape[0] if logits.shape.rank else None
    return [(logits.dtype, TensorShape([batch])), (logits.dtype, logits.shape)]


def _ctc_kernel(logits, labels, label_length, logit_length, *, blank_index):
    steps, length = logits.shape[1], labels.shape[1]
    logit_paddings = (jnp.arange(steps)[None, :] >= logit_length[:, None]).astype(logits.dtype)
    label_paddings = (jnp.arange(length)[None, :] >= label_length[:, None]).astype(logits.dtype)

    def per_sequence(x):
        return optax.ctc_loss(
            x, logit_paddings, labels.astype(jnp.int32), label_paddings, blank_id=blank_index
        )

    loss, pullback = jax.vjp(per_sequence, logits)
    (backprop,) = pullback(jnp.ones_like(loss))  # each loss depends on its own row only
    return loss.astype(logits.dtype), backprop.astype(logits.dtype)  # optax may widen


register_op("CTCLossDense", infer=_ctc_infer, kernel=_ctc_kernel)


@register_gradient("CTCLossDense")
def _ctc_grad(op, grad_loss: Tensor, grad_backprop: Tensor) -> list:
    """The logits get grad_loss * backprop; labels and lengths none. A gradient flowing into
    `backprop` itself (a second derivative) is not supported, as TF's CTCLoss."""
    from sluice.framework.ops.nn.loss_ops import _is_zero

    if not _is_zero(grad_backprop):
        raise NotImplementedError(
            f"CTCLossDense op {op.name!r}: the gradient of its backprop output (a second "
            "derivative of the CTC loss) is not implemented."
        )
    scale = array_ops.expand_dims(array_ops.expand_dims(grad_loss, -1), -1)
    return [scale * op.outputs[1], None, None, None]


def ctc_loss_dense(
    logits: Any,
    labels: Any,
    label_length: Any,
    logit_length: Any,
    blank_index: int = 0,
    name: str | None = None,
) -> Tensor:
    """The CTC loss of each sequence (see the module docstring).

    Args:
      logits: (batch, time, classes) unnormalized log-probabilities (a softmax is applied).
      labels: (batch, max_length) integer class ids, the first `label_length[b]` of row b used.
      label_length: (batch,) the length of each label sequence.
      logit_length: (batch,) the number of time steps of each sequence.
      blank_index: the class id of the blank.
      name: a name for the operation.

    Returns:
      A (batch,) Tensor of losses.
    """
    logits = convert_to_tensor(logits, name="logits")
    inputs = [logits] + [
        fill_ops.cast(convert_to_tensor(t), dtypes.int32)
        for t in (labels, label_length, logit_length)
    ]
    op = apply_op("CTCLossDense", inputs, {"blank_index": int(blank_index)}, name)
    return op.outputs[0]
