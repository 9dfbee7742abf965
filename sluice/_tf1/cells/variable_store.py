"""`get_variable`: TF1's shared variables, created once per full name and found again by it.

What `get_variable(name, ...)` does, as TF1 1.15's `variable_scope.get_variable`:

1. arguments left None take the current scope's defaults (initializer, regularizer, dtype,
   partitioner, custom_getter, constraint, ...); `trainable=None` means True;
2. with a custom getter (the call's, else the scope's), the result is
   `custom_getter(getter=<plain getter>, name=<full name>, shape=..., dtype=..., ...)`, all
   keyword arguments; a getter may change them, call `getter` several times, or wrap the result
   (`sl.identity`, `sl.cast`);
3. the plain getter returns the existing variable of that full name when the scope reuses
   (checking shape and dtype), or creates it: from the initializer called with the shape, or
   from a constant initializer (a Tensor, an array, a Python number or list: no `shape` then),
   and adds `regularizer(variable)` to the REGULARIZATION_LOSSES collection.

Every sluice variable is a resource variable and is stored whole: `use_resource` is accepted
(False too) and a `partitioner` is refused with an error naming the variable.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from sluice._export import export
from sluice._tf1.cells import initializers
from sluice._tf1.cells import scopes as vs
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import GraphKeys, Tensor
from sluice.framework.ir.tensor_shape import as_shape
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops
from sluice.framework.variables import Variable, init_scope

REGULARIZATION_LOSSES = GraphKeys.REGULARIZATION_LOSSES


@export("get_variable", "nn.rnn_cell.get_variable")
def get_variable(
    name: str,
    shape: Any = None,
    dtype: Any = None,
    initializer: Any = None,
    regularizer: Callable | None = None,
    trainable: bool | None = None,
    collections: list[str] | None = None,
    caching_device: Any = None,
    partitioner: Callable | None = None,
    validate_shape: bool = True,
    use_resource: bool | None = None,
    custom_getter: Callable | None = None,
    constraint: Callable | None = None,
    synchronization: Any = None,
    aggregation: Any = None,
) -> Any:
    """Creates the Variable `<current variable scope>/<name>`, or returns it when the scope
    reuses variables (TF1 `tf.get_variable`; see `variable_scope`'s `reuse`).

    Args:
      name: the variable's name relative to the current variable scope (may contain '/').
      shape: its shape; leave it None when `initializer` is a constant (the shape is the
        constant's) or when reusing.
      dtype: its dtype (default: the scope's, float32 at the top level).
      initializer: `initializer(shape, dtype=dtype)` returning the initial value, an
        initializer class (instantiated with no arguments), a callable of no arguments (with
        no shape), or a constant (Tensor, array, number, list). None: the scope's, else TF1's
        default, glorot_uniform for floating dtypes and zeros for integers and bools.
      regularizer: `regularizer(variable) -> Tensor or None`; the Tensor goes to the
        REGULARIZATION_LOSSES collection (`sl.losses.get_regularization_loss()`).
      trainable: adds it to the TRAINABLE_VARIABLES collection (None means True).
      collections: the collections to add it to (default [GLOBAL_VARIABLES]).
      caching_device, use_resource: accepted for TF1 signatures (sluice variables are
        resource variables, read where they are used).
      partitioner: must be None (or be used on a scalar): sluice stores whole variables.
      validate_shape: when False, the initial value's shape may be partly unknown.
      custom_getter: `custom_getter(getter, name, *args, **kwargs)` called instead of the
        plain getter (after the scope's own getter is wrapped around it).
      constraint: kept on the variable (`v.constraint`) for optimizers that project.
      synchronization, aggregation: accepted for TF1 signatures (one replica per variable);
        a synchronization named ON_READ makes `trainable=None` mean False, as in TF1.

    Returns:
      The Variable, or whatever the custom getter returns.

    Raises:
      ValueError: the name is taken (in a scope that does not reuse), it does not exist (in a
        scope that reuses), shape or dtype differ from the existing variable's, a shape given
        with a constant initializer, no shape for a new variable, an initializer whose dtype
        differs from `dtype`, or a custom getter that is not callable.
      NotImplementedError: a partitioner, for a variable of rank >= 1.

    >>> with sl.variable_scope("layer", initializer=sl.constant_initializer(0.5)):
    ...     w = sl.get_variable("w", [2])
    ...     b = sl.get_variable("b", initializer=[1.0, 2.0])
    >>> w.name, b.shape
    ('layer/w:0', TensorShape([2]))
    """
    g = graph_lib.get_default_graph()
    scope = vs.get_variable_scope()
    regularizer = scope.regularizer if regularizer is None else regularizer
    caching_device = scope.caching_device if caching_device is None else caching_device
    partitioner = scope.partitioner if partitioner is None else partitioner
    custom_getter = scope.custom_getter if custom_getter is None else custom_getter
    use_resource = scope.use_resource if use_resource is None else use_resource
    full_name = vs.join(scope.name, name)
    with g.name_scope(None):  # variable names (and a getter's ops) ignore the name scope
        if dtype is not None and initializer is not None and not callable(initializer):
            init_dtype = core_ops.convert_to_tensor(initializer).dtype
            if init_dtype != dtypes.as_dtype(dtype):
                raise ValueError(
                    f"Initializer type '{init_dtype.name}' and explicit dtype "
                    f"'{dtypes.as_dtype(dtype).name}' don't match (variable {full_name})."
                )
        initializer = scope.initializer if initializer is None else initializer
        constraint = scope.constraint if constraint is None else constraint
        dtype = scope.dtype if dtype is None else dtype
        if trainable is None:
            trainable = getattr(synchronization, "name", synchronization) != "ON_READ"
        kwargs = {
            "name": full_name, "shape": shape, "dtype": dtype, "initializer": initializer,
            "regularizer": regularizer, "reuse": scope.reuse, "trainable": trainable,
            "collections": collections, "caching_device": caching_device,
            "partitioner": partitioner, "validate_shape": validate_shape,
            "use_resource": use_resource, "synchronization": synchronization,
            "aggregation": aggregation,
        }  # fmt: skip
        if custom_getter is None:
            return _true_getter(constraint=constraint, **kwargs)
        vs._check_custom_getter(custom_getter)
        if _takes_keyword(custom_getter, "constraint"):
            kwargs["constraint"] = constraint
        return custom_getter(getter=_true_getter, **kwargs)


def _takes_keyword(fn: Callable, keyword: str) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == keyword or p.kind is p.VAR_KEYWORD for p in params)


def _true_getter(
    name: str,
    shape: Any = None,
    dtype: Any = dtypes.float32,
    initializer: Any = None,
    regularizer: Callable | None = None,
    reuse: Any = None,
    trainable: bool | None = None,
    collections: list[str] | None = None,
    caching_device: Any = None,
    partitioner: Callable | None = None,
    validate_shape: bool = True,
    use_resource: bool | None = None,
    constraint: Callable | None = None,
    synchronization: Any = None,
    aggregation: Any = None,
) -> Variable:
    """The plain getter a custom getter receives as `getter` (TF1's `_true_getter`): returns
    or creates the variable of full name `name`."""
    del caching_device, use_resource, synchronization, aggregation  # see get_variable
    is_scalar = isinstance(shape, Sequence) and not isinstance(shape, str) and len(shape) == 0
    if partitioner is not None and not is_scalar:
        if not callable(partitioner):
            raise ValueError(f"Partitioner must be callable, but received: {partitioner!r}")
        raise NotImplementedError(
            f"get_variable: variable {name} was asked for with a partitioner ({partitioner!r}); "
            "sluice stores every variable whole (one device holds it) and does not build "
            "partitioned variables. Create it without partitioner= (in get_variable and in the "
            "enclosing variable_scope)."
        )
    return _get_single_variable(
        name, shape, dtype, initializer, regularizer, reuse,
        True if trainable is None else trainable, collections, validate_shape, constraint,
    )  # fmt: skip


def _get_single_variable(
    name: str,
    shape: Any,
    dtype: Any,
    initializer: Any,
    regularizer: Callable | None,
    reuse: Any,
    trainable: bool,
    collections: list[str] | None,
    validate_shape: bool,
    constraint: Callable | None,
) -> Variable:
    g = graph_lib.get_default_graph()
    store = vs.scope_store(g)
    from_value = initializer is not None and not callable(initializer)
    if shape is not None and from_value:
        raise ValueError(
            f"If initializer is a constant, do not specify shape (variable {name}: the shape "
            "is the constant's)."
        )
    dtype = dtypes.as_dtype(dtype)
    shape = as_shape(shape)
    existing = store.variables.get(name)
    if existing is not None:
        if not reuse:
            raise ValueError(
                f"Variable {name} already exists, disallowed. Did you mean to set reuse=True or "
                "reuse=tf.AUTO_REUSE in VarScope?"
            )
        if not shape.is_compatible_with(existing.shape):
            raise ValueError(
                f"Trying to share variable {name}, but specified shape {shape} and found shape "
                f"{existing.shape}."
            )
        if dtype != existing.dtype:
            raise ValueError(
                f"Trying to share variable {name}, but specified dtype {dtype.name} and found "
                f"dtype {existing.dtype.name}."
            )
        return existing
    if reuse is True:
        raise ValueError(
            f"Variable {name} does not exist, or was not created with tf.get_variable(). Did "
            "you mean to set reuse=tf.AUTO_REUSE in VarScope?"
        )
    if initializer is None:
        initializer, from_value = _default_initializer(name, dtype), False
    if from_value:
        init_value, variable_dtype = initializer, None
    else:
        if inspect.isclass(initializer):
            initializer = initializer()
        if shape.is_fully_defined():
            dims = shape.as_list()

            def init_value() -> Any:
                return initializer(dims, dtype=dtype)

            variable_dtype = dtype
        elif _takes_no_arguments(initializer):
            init_value, variable_dtype = initializer, None
        elif shape.rank is None:
            raise ValueError(
                f"Shape of a new variable ({name}) must be fully defined, but instead was "
                f"{shape}: give get_variable a shape, or a constant initializer."
            )
        else:
            raise ValueError(
                f"Shape of a new variable ({name}) must be fully defined, but instead was {shape}."
            )
    with g.name_scope(None):
        if g.unique_name(name, mark_as_used=False) != name:
            raise ValueError(f"Variable {name}: an op of that name already exists in the graph.")
        var = Variable(
            init_value, trainable=trainable, collections=collections,
            validate_shape=validate_shape, name=name, dtype=variable_dtype,
            constraint=constraint,
        )  # fmt: skip
    store.variables[name] = var
    if regularizer is not None:
        with g.name_scope(None), g.name_scope(f"{name}/Regularizer/"), init_scope(g):
            loss = regularizer(var)
        if loss is not None:
            g.add_to_collection(REGULARIZATION_LOSSES, loss)
    return var


def _takes_no_arguments(fn: Callable) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return all(
        p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params
    )


def _default_initializer(name: str, dtype: Any) -> Callable:
    """TF1's default: glorot uniform for floating dtypes, zeros for integers and bools."""
    if dtypes.is_floating(dtype):
        return initializers.glorot_uniform_initializer()
    if dtypes.is_integer(dtype) or dtypes.is_bool(dtype):
        return initializers.zeros_initializer()
    raise ValueError(f"An initializer for variable {name} of {dtype.name} is required")


# -- partitioners: TF1's names, for code that builds one; get_variable refuses them -------------
@export("fixed_size_partitioner", "nn.rnn_cell.fixed_size_partitioner")
def fixed_size_partitioner(num_shards: int, axis: int = 0) -> Callable:
    """TF1's `tf.fixed_size_partitioner`: `num_shards` parts along `axis`.

    The partitioner computes TF1's partition list (`partitioner(shape, dtype)`), but
    `get_variable` refuses partitioned variables: sluice stores every variable whole.
    """

    def partitioner(shape: Any, dtype: Any = None) -> list[int]:
        del dtype
        partitions = [1] * len(as_shape(shape))
        partitions[axis] = min(num_shards, as_shape(shape).as_list()[axis])
        return partitions

    return partitioner


@export("min_max_variable_partitioner", "nn.rnn_cell.min_max_variable_partitioner")
def min_max_variable_partitioner(
    max_partitions: int = 1,
    axis: int = 0,
    min_slice_size: int = 256 << 10,
    bytes_per_string_element: int = 16,
) -> Callable:
    """TF1's `tf.min_max_variable_partitioner`: as many parts along `axis` as keep each at
    least `min_slice_size` bytes, at most `max_partitions` (see `fixed_size_partitioner` on
    why `get_variable` refuses them)."""

    def partitioner(shape: Any, dtype: Any) -> list[int]:
        shape = as_shape(shape)
        if not shape.is_fully_defined():
            raise ValueError(f"min_max_variable_partitioner: shape {shape} is not fully known.")
        dims = shape.as_list()
        dtype = dtypes.as_dtype(dtype)
        itemsize = bytes_per_string_element if dtype == np.dtype(object) else dtype.itemsize
        total = int(np.prod(dims)) * itemsize
        slices = max(1, min(dims[axis], max_partitions, total // min_slice_size))
        partitions = [1] * len(dims)
        partitions[axis] = slices
        return partitions

    return partitioner


@export("losses.get_regularization_losses")
def get_regularization_losses(scope: str | None = None) -> list[Tensor]:
    """The REGULARIZATION_LOSSES collection (TF1 `tf.losses.get_regularization_losses`)."""
    return graph_lib.get_collection(REGULARIZATION_LOSSES, scope)


@export("losses.get_regularization_loss")
def get_regularization_loss(
    scope: str | None = None, name: str = "total_regularization_loss"
) -> Tensor:
    """Their sum, or 0.0 when there are none (TF1 `tf.losses.get_regularization_loss`)."""
    losses = get_regularization_losses(scope)
    if not losses:
        return core_ops.constant(0.0, name=name)
    return math_ops.add_n(losses, name=name)
