"""What TF1's functional layers (`tf.layers.dense`, `tf.layers.conv2d`, ...) share: the scope a
call builds in, how it makes its weights, and `smart_cond`.

TF1 builds each call as a one-shot `tf.layers.Layer`; its visible contract is reproduced here
without the object:

* the call opens a variable scope: `name` if given (entered as is, so `name="fc", reuse=True`
  reuses `fc/kernel`), else a fresh one of the layer's snake-case name (`dense`, `dense_1`,
  ... counted under the current variable scope, as `variable_scope(None, default_name=...)`
  counts). The ops go in the name scope that variable scope opened (`dense/MatMul`);
* weights come from `get_variable`, so the enclosing scope's reuse, initializer, regularizer
  and custom getter apply; a weight's own regularizer adds its loss to REGULARIZATION_LOSSES
  only when the variable is new (a reused weight is not regularized twice);
* the weight dtype follows the inputs (float64 inputs make float64 weights).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from sluice._keras import activations as activations_lib
from sluice._tf1.cells import scopes as vs
from sluice._tf1.cells import variable_store
from sluice.framework.control_flow.cond import cond
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import GraphKeys, Tensor
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.shape_rules import constant_value
from sluice.framework.ops.math import math_ops
from sluice.framework.variables import Variable


@contextlib.contextmanager
def layer_scope(name: str | None, default_name: str, reuse: Any) -> Iterator[vs.VariableScope]:
    """The variable scope (and its name scope) of one functional-layer call (see module doc)."""
    if name is not None and not isinstance(name, (str, vs.VariableScope)):
        raise TypeError(
            f"{default_name}: name must be a string or a VariableScope, got "
            f"{type(name).__name__} ({name!r})"
        )
    if name:
        with vs.variable_scope(name, reuse=reuse) as scope:
            yield scope
    elif reuse:
        with vs.variable_scope(default_name, reuse=reuse) as scope:
            yield scope
    else:
        with vs.variable_scope(None, default_name=default_name) as scope:
            yield scope


def float_dtype(inputs: Tensor, layer: str) -> dtypes.DType:
    """The dtype of the layer's weights: the inputs' (TF1's inferred layer dtype)."""
    if not dtypes.is_floating(inputs.dtype):
        raise TypeError(
            f"Unable to build `{layer}` layer with non-floating point dtype "
            f"{inputs.dtype.name} (input {inputs.name}): cast the input to a float dtype."
        )
    return inputs.dtype


def add_weight(
    name: str,
    shape: list[int],
    dtype: Any,
    initializer: Any = None,
    regularizer: Callable | None = None,
    constraint: Callable | None = None,
    trainable: bool = True,
    collections: list[str] | None = None,
) -> Variable:
    """`get_variable(name, ...)` as a TF1 layer's `add_weight` calls it: the scope's initializer,
    else glorot uniform (TF1's default for floats); `regularizer`'s loss (under
    `<name>/Regularizer`) goes to REGULARIZATION_LOSSES when the variable is new."""
    existing = set(graph_lib.get_collection(GraphKeys.GLOBAL_VARIABLES))
    var = variable_store.get_variable(
        name, shape, dtype=dtype, initializer=initializer, trainable=trainable,
        collections=collections, constraint=constraint,
    )  # fmt: skip
    if regularizer is not None and var not in existing:
        with graph_lib.name_scope(f"{name}/Regularizer"):
            loss = regularizer(var)
        if loss is not None:
            graph_lib.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)
    return var


def finish(
    outputs: Tensor, activation: Any = None, activity_regularizer: Callable | None = None
) -> Tensor:
    """Applies the activation, then adds `activity_regularizer(outputs) / batch size` to
    REGULARIZATION_LOSSES (TF1 divides by the batch size so the strength does not depend on it)."""
    if activation is not None:
        outputs = activations_lib.get(activation)(outputs)
    if activity_regularizer is not None:
        with graph_lib.name_scope("ActivityRegularizer"):
            loss = core_ops.convert_to_tensor(activity_regularizer(outputs))
            batch = fill_ops.cast(fill_ops.shape(outputs)[0], loss.dtype)
            graph_lib.add_to_collection(
                GraphKeys.REGULARIZATION_LOSSES, math_ops.truediv(loss, batch)
            )
    return outputs


def static_bool(pred: Any) -> bool | None:
    """`pred` as a Python bool when it is known while the graph is built (a bool, a numpy bool,
    a constant Tensor), else None (a placeholder, a computed Tensor): TF1's `constant_value`."""
    if isinstance(pred, (bool, np.bool_)):
        return bool(pred)
    if isinstance(pred, int) and pred in (0, 1):
        return bool(pred)
    if isinstance(pred, Variable):
        return None
    if isinstance(pred, Tensor):
        if pred.dtype != dtypes.bool_:
            raise TypeError(
                f"training must be a Python bool or a scalar bool Tensor, got {pred.dtype.name} "
                f"Tensor {pred.name}"
            )
        value = constant_value(pred)
        return None if value is None else bool(value)
    raise TypeError(
        f"training must be a Python bool or a scalar bool Tensor, got {type(pred).__name__} "
        f"({pred!r})"
    )


def smart_cond(pred: Any, true_fn: Callable[[], Any], false_fn: Callable[[], Any]) -> Any:
    """`true_fn()` or `false_fn()` when `pred` is known now, else a `cond` on it (TF1's
    `tf_utils.smart_cond`): `training=True` builds no Switch/Merge at all."""
    known = static_bool(pred)
    if known is None:
        if isinstance(pred, Variable):
            pred = core_ops.convert_to_tensor(pred)
        return cond(pred, true_fn, false_fn)
    return true_fn() if known else false_fn()


def int_tuple(value: Any, n: int, what: str, layer: str) -> tuple[int, ...]:
    """An int or n ints as an n-tuple of positive ints (Keras' `normalize_tuple`)."""
    values = (value,) * n if isinstance(value, (int, np.integer)) else tuple(value)
    if len(values) != n or not all(isinstance(v, (int, np.integer)) and v > 0 for v in values):
        raise ValueError(
            f"{layer}: the `{what}` argument must be an int or a tuple of {n} positive ints, "
            f"got {value!r}"
        )
    return tuple(int(v) for v in values)


def padding_arg(padding: str, layer: str, allowed: tuple[str, ...] = ("valid", "same")) -> str:
    """'valid'/'same' (any case) as the op's 'VALID'/'SAME'."""
    if not isinstance(padding, str) or padding.lower() not in allowed:
        raise ValueError(f"{layer}: padding must be one of {allowed}, got {padding!r}")
    return padding.lower()


def channels_first(data_format: str, layer: str) -> bool:
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(
            f"{layer}: data_format must be 'channels_last' or 'channels_first', got {data_format!r}"
        )
    return data_format == "channels_first"


def require_rank(inputs: Tensor, rank: int, layer: str, layout: str) -> None:
    if inputs.shape.rank != rank:
        raise ValueError(
            f"Input 0 of layer {layer} is incompatible with the layer: expected ndim={rank} "
            f"({layout}), found shape {inputs.shape}"
        )
