"""`InputLayer` and `Input`: a model's entry point, a placeholder fed with each batch.

`Input` builds the placeholder in the default graph, which becomes the graph of a functional
model built on it (`Model(inputs, outputs)`). A `Sequential` given an `Input` or `InputLayer`
only reads its shape and dtype, and builds its own placeholder in its own graph.

>>> inputs = sl.Input(shape=(28, 28, 1))              # a Tensor [None, 28, 28, 1]
>>> inputs.shape
TensorShape([None, 28, 28, 1])
>>> tokens = sl.Input(shape=(None,), dtype="int32")   # variable-length token ids
>>> tokens.shape, tokens.dtype
(TensorShape([None, None]), sl.int32)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._export import export
from sluice._keras.layers import base, tracking
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.core import core_ops


@export("layers.InputLayer")
class InputLayer(base.Layer):
    """Holds the placeholder of one model input.

    Args:
      shape: the shape of one example (without the batch), None for unknown dims.
      batch_size: a fixed batch size (default: any).
      dtype: the placeholder's dtype (default "float32").
      sparse, optional: accepted for Keras signatures; must be False.
      batch_shape: the full shape, batch included (instead of `shape` and `batch_size`).
      input_tensor: an existing Tensor to use as the input instead of a new placeholder.
      name: the layer (and placeholder) name.
    """

    def __init__(
        self,
        shape: Any = None,
        batch_size: int | None = None,
        dtype: Any = None,
        sparse: bool | None = None,
        batch_shape: Any = None,
        input_tensor: Tensor | None = None,
        optional: bool = False,
        name: str | None = None,
        **kwargs: Any,
    ):
        if "input_shape" in kwargs:  # Keras 2 spelling
            shape = kwargs.pop("input_shape")
        super().__init__(name=name, dtype=dtype, **kwargs)
        if sparse or optional:
            raise NotImplementedError("Sparse and optional inputs are not supported.")
        if input_tensor is not None:
            batch_shape = input_tensor.shape.as_list()
            self._input_dtype = input_tensor.dtype
        else:  # the base Layer's reading of `dtype` (a name or a Keras DTypePolicy config)
            self._input_dtype = self._dtype
        if batch_shape is None:
            if shape is None:
                raise ValueError("An InputLayer needs a `shape` or a `batch_shape`.")
            batch_shape = (batch_size,) + tuple(
                shape if isinstance(shape, (tuple, list)) else (shape,)
            )
        self.batch_shape = _checked_shape(batch_shape, self.name)
        g = input_tensor.graph if input_tensor is not None else graph_lib.get_default_graph()
        self._enter_graph(g)
        with g.as_default(), g.name_scope(None):
            if input_tensor is None:
                input_tensor = core_ops.placeholder(
                    self._input_dtype, list(self.batch_shape), name=self.name
                )
        self.built = True
        node = tracking.Node(self, (), {}, input_tensor)
        self._nodes.append(node)
        tracking.record_node(node)

    @property
    def dtype(self) -> str:
        return self._input_dtype.name

    @property
    def output(self) -> Tensor:
        return self._nodes[0].outputs

    def call(self, inputs: Any) -> Any:
        return inputs

    def get_config(self) -> dict:
        return {"batch_shape": self.batch_shape, "dtype": self.dtype, "name": self.name}


def _checked_shape(batch_shape: Any, name: str) -> tuple:
    """`batch_shape` as a tuple of None and ints >= 0 (Keras's `standardize_shape`)."""
    dims = tuple(batch_shape) if isinstance(batch_shape, (list, tuple)) else None
    bad = [d for d in dims or () if d is not None and not _is_dim(d)]
    if dims is None or bad:
        raise ValueError(
            f"InputLayer {name!r}: cannot convert {batch_shape!r} to a shape; each dimension "
            f"must be None or an int >= 0 (found {bad[0]!r} of type {type(bad[0]).__name__})."
            if bad
            else f"InputLayer {name!r}: cannot convert {batch_shape!r} to a shape."
        )
    return tuple(None if d is None else int(d) for d in dims)


def _is_dim(d: Any) -> bool:
    return isinstance(d, (int, np.integer)) and not isinstance(d, (bool, np.bool_)) and d >= 0


@export("Input", "layers.Input")
def Input(
    shape: Any = None,
    batch_size: int | None = None,
    dtype: Any = None,
    sparse: bool | None = None,
    batch_shape: Any = None,
    name: str | None = None,
    tensor: Tensor | None = None,
    optional: bool = False,
) -> Tensor:
    """A symbolic input (a placeholder) to build a functional model on; see `InputLayer`.

    >>> x = sl.Input((8,)); model = sl.Model(x, sl.layers.Dense(1)(x))
    >>> model.output_shape
    (None, 1)
    """
    layer = InputLayer(
        shape=shape,
        batch_size=batch_size,
        dtype=dtype,
        sparse=sparse,
        batch_shape=batch_shape,
        input_tensor=tensor,
        optional=optional,
        name=name,
    )
    return layer.output


def input_layer_of(t: Any) -> InputLayer | None:
    """The InputLayer whose placeholder `t` is, or None."""
    node = tracking.producing_node(t)
    return node.layer if node is not None and isinstance(node.layer, InputLayer) else None
