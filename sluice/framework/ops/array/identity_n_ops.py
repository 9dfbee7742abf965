"""IdentityN: several tensors passed through one op (TF1 `tf.identity_n`).

One op for several values lets one gradient function see all of their gradients at once, which
is what `sl.custom_gradient` builds on (through `gradient_override_map`, as TF1 does).
"""

from __future__ import annotations

from typing import Any, Sequence

from sluice._export import export
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import register_gradient, register_op
from sluice.framework.ops.core.core_ops import apply_op, convert_to_tensor


def _identity_n_infer(op) -> list:
    return [(t.dtype, t.shape) for t in op.inputs]


def _identity_n_kernel(*values):
    return values[0] if len(values) == 1 else tuple(values)  # one output is not a tuple


register_op("IdentityN", infer=_identity_n_infer, kernel=_identity_n_kernel, select_safe=True)


@register_gradient("IdentityN")
def _identity_n_grad(op, *grads):
    return list(grads)


@export("identity_n")
def identity_n(input: Sequence[Any], name: str | None = None) -> list[Tensor]:
    """The tensors of `input`, unchanged, as the outputs of one op.

    >>> a, b = sl.identity_n([sl.constant(1.0), sl.constant([2, 3])])
    >>> sl.Session().run([a, b])
    [array(1., dtype=float32), array([2, 3], dtype=int32)]
    """
    tensors = [convert_to_tensor(t) for t in input]
    return list(apply_op("IdentityN", tensors, name=name or "IdentityN").outputs)
