"""TF1's `tensorflow.python.ops.tensor_array_grad`: the gradient source of a TensorArray op.

TF1 names the gradient array of a TensorArray after the `gradients` name scope that builds it,
so two `tf.gradients` calls get two gradient arrays. sluice differentiates TensorArray ops
without gradient arrays; `_GetGradSource` is here for TF1 code that calls `ta.grad` itself.

>>> from sluice.python.ops import tensor_array_grad
>>> with sl.Graph().as_default(), sl.name_scope("foo/gradients"):
...     t = sl.constant(0, name="bar")
>>> tensor_array_grad._GetGradSource(t)
'foo/gradients'
"""

from __future__ import annotations

from typing import Any

from sluice._export import export

_MODULE = "python.ops.tensor_array_grad"


@export(f"{_MODULE}._GetGradSource")
def _GetGradSource(op_or_tensor: Any) -> str:  # noqa: N802  (TF1's name)
    """The innermost `gradients` (or `gradients_N`) scope of `op_or_tensor`'s name, with the
    scopes around it: "foo/gradients_1/bar:0" gives "foo/gradients_1".

    Raises:
      ValueError: the name has no `gradients` scope (the op was not built by a gradient call).
    """
    parts = op_or_tensor.name.split("/")
    found = [i for i, part in enumerate(parts) if part.startswith("gradients")]
    if not found:
        raise ValueError(
            f"Expected op/tensor name to start with gradients (excluding scope), got: "
            f"{op_or_tensor.name}. This means that a tf.gradients op with this op in its "
            "dependency path has a custom name that does not start with 'gradients'."
        )
    return "/".join(parts[: found[-1] + 1])
