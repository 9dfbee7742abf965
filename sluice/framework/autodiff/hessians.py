"""`hessians`: second derivatives of `sum(ys)`, one `[*x.shape, *x.shape]` matrix per x (TF1's
`tf.hessians`).

TF1 differentiates each element of the flattened gradient in a while loop writing a
TensorArray; here the gradient's size must be known while the graph is built, and a Python loop
differentiates each element, so the Hessian is one `stack` of `size(x)` gradients. The graph
grows with `size(x)`: meant for the small xs Hessians are affordable for anyway.
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice.framework.autodiff.gradients import gradients
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import array_ops, join_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.core_ops import convert_to_tensor
from sluice.framework.ops.math import math_ops


@export("hessians")
def hessians(
    ys: Any,
    xs: Any,
    name: str = "hessians",
    colocate_gradients_with_ops: bool = False,
    gate_gradients: bool = False,
    aggregation_method: Any = None,
) -> list[Tensor]:
    """The Hessian of `sum(ys)` with respect to each x in `xs`.

    Args:
      ys: a Tensor or list of Tensors.
      xs: a Tensor or Variable, or a list of them, each of a fully known shape.
      name: the name scope of the ops built.
      colocate_gradients_with_ops, gate_gradients, aggregation_method: as for `gradients`.

    Returns:
      A list with one Tensor per x, of shape `[*x.shape, *x.shape]`: entry `[i..., j...]` is
      the derivative of `sum(ys)` by `x[i...]` and `x[j...]`.

    Raises:
      ValueError: an x has a shape not fully known, or `sum(ys)` does not depend on it, or
        only linearly (as TF1).
      TypeError: the gradient goes through a while loop (TF1 has no second-order gradient of
        while loops either).

    >>> x = sl.constant([1.0, 2.0])
    >>> a = sl.constant([[1.0, 2.0], [3.0, 4.0]])
    >>> y = sl.reduce_sum(sl.expand_dims(x, 1) * a * x)  # x^T A x: the Hessian is A + A^T
    >>> print(sl.Session().run(sl.hessians(y, x)[0]))
    [[2. 5.]
     [5. 8.]]
    """
    xs = list(xs) if isinstance(xs, (list, tuple)) else [xs]
    options = {
        "colocate_gradients_with_ops": colocate_gradients_with_ops,
        "gate_gradients": gate_gradients,
        "aggregation_method": aggregation_method,
    }
    first = gradients(ys, xs, **options)
    result = []
    with graph_lib.get_default_graph().name_scope(name):
        for x, gradient in zip(xs, first):
            shape = x.shape
            x_name = getattr(x, "name", repr(x))
            if not shape.is_fully_defined():
                raise ValueError(
                    f"hessians: x {x_name} has shape {shape}, which is not fully known; the "
                    "Hessian needs it (one gradient per element of x)."
                )
            if gradient is None:
                raise ValueError(
                    f"hessians: the ys do not depend on x {x_name} (its gradient is None)."
                )
            flat = array_ops.reshape(convert_to_tensor(gradient), [-1])
            rows = []
            for j in range(shape.num_elements()):
                (row,) = gradients(flat[j], x, **options)
                if row is None:  # TF1's TensorArray.write(j, None) raises here too
                    raise ValueError(
                        f"hessians: the gradient of the ys with respect to x {x_name} does not "
                        "depend on x (the ys are linear in it), so TF1 has no Hessian for it."
                    )
                rows.append(convert_to_tensor(row))
            dims = shape.as_list()
            result.append(array_ops.reshape(join_ops.stack(rows), dims + dims))
    return result


@export("python.ops.gradients_impl._hessian_vector_product")
def _hessian_vector_product(ys: Any, xs: list, v: list) -> list[Tensor | None]:
    """The product of the Hessian of `sum(ys)` by `xs` with the vectors `v` (one per x), by
    two backward passes and no Hessian: `gradients(sum(grad(ys, x) * stop_gradient(v)), xs)`
    (TF1's `gradients_impl._hessian_vector_product`).

    Raises:
      ValueError: `xs` and `v` differ in length.

    >>> x = sl.constant([1.0, 2.0])
    >>> y = sl.reduce_sum(x * x * x)  # the Hessian is diag(6 x)
    >>> print(sl.Session().run(_hessian_vector_product(y, [x], [sl.constant([1.0, 1.0])])[0]))
    [ 6. 12.]
    """
    if len(v) != len(xs):
        raise ValueError(f"xs and v must have the same length, got {len(xs)} and {len(v)}.")
    grads = gradients(ys, xs)
    products = [
        math_ops.multiply(convert_to_tensor(g), core_ops.stop_gradient(vec))
        for g, vec in zip(grads, v)
        if g is not None
    ]
    return gradients(products, xs)


__all__ = ["hessians"]
