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

With a partitioner (the call's or the scope's) and a shape of rank >= 1, the getter returns a
`PartitionedVariable` of parts `<full name>/part_<i>` (`_get_partitioned_variable`); a scope
that reuses returns the same object, and asking it again with another partitioning raises.
Every sluice variable runs as a resource variable; `use_resource=True` (here or in the scope)
makes it a `ResourceVariable`, as TF1 code checks with `isinstance`.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from sluice._export import export
from sluice._tf1.cells import initializers, partitioners
from sluice._tf1.cells import scopes as vs
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import GraphKeys, Tensor
from sluice.framework.ir.tensor_shape import as_shape
from sluice.framework.ops.array import slicing_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops
from sluice.framework.partitioned_variables import (
    PartitionedVariable,
    PartitionInfo,
    iter_slices,
    mark_as_part,
    slice_axis,
)
from sluice.framework.variables import (
    SaveSliceInfo,
    Variable,
    VariableAggregation,
    VariableSynchronization,
    init_scope,
)

REGULARIZATION_LOSSES = GraphKeys.REGULARIZATION_LOSSES


def _sync_and_aggregation(synchronization: Any, aggregation: Any, name: str) -> tuple:
    """TF1's `validate_synchronization_aggregation_trainable`: None means AUTO and NONE; other
    values must be the enums' members (or their values)."""
    out = []
    for value, kind, default in (
        (synchronization, VariableSynchronization, VariableSynchronization.AUTO),
        (aggregation, VariableAggregation, VariableAggregation.NONE),
    ):
        if value is None:
            value = default
        elif not isinstance(value, kind):
            try:
                value = kind(value) if not isinstance(value, str) else kind[value.upper()]
            except (ValueError, KeyError):
                what = "synchronization" if kind is VariableSynchronization else "aggregation"
                raise ValueError(
                    f"Invalid variable {what} mode: {value!r} for variable: {name}"
                ) from None
        out.append(value)
    return tuple(out)


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
      caching_device: the device of the variable's reads (`v.value()`), as TF1's.
      use_resource: True makes a `sl.ResourceVariable` (None: the scope's, else TF1's
        default); every sluice variable runs as a resource either way.
      partitioner: `partitioner(shape=, dtype=) -> parts per axis` (`sl.fixed_size_partitioner`,
        ...): the variable is then a `PartitionedVariable` split along one axis (ignored for a
        scalar). Its initializer is called per part with the part's shape and
        `partition_info` (where it sits); a Tensor or constant initializer is sliced.
      validate_shape: when False, the initial value's shape may be partly unknown.
      custom_getter: `custom_getter(getter, name, *args, **kwargs)` called instead of the
        plain getter (after the scope's own getter is wrapped around it).
      constraint: kept on the variable (`v.constraint`) for optimizers that project.
      synchronization, aggregation: `sl.VariableSynchronization` / `sl.VariableAggregation`
        members (None: AUTO and NONE, as custom getters see them); sluice keeps one value per
        variable, and ON_READ makes `trainable=None` mean False, as in TF1.

    Returns:
      The Variable (a PartitionedVariable with a partitioner), or what the custom getter returns.

    Raises:
      ValueError: the name is taken (in a scope that does not reuse), it does not exist (in a
        scope that reuses), shape or dtype differ from the existing variable's, a shape given
        with a constant initializer, no shape for a new variable, an initializer whose dtype
        differs from `dtype`, or a custom getter that is not callable; with a partitioner, a
        shape not fully defined, a partitioning that differs from the existing one's, a name
        taken by an unpartitioned variable (and the reverse), or a partitioner that does not
        return one count >= 1 per axis with one axis split at most.

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
        synchronization, aggregation = _sync_and_aggregation(
            synchronization, aggregation, full_name
        )
        if trainable is None:
            trainable = synchronization is not VariableSynchronization.ON_READ
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
    is_scalar = isinstance(shape, Sequence) and not isinstance(shape, str) and len(shape) == 0
    trainable = True if trainable is None else trainable
    if partitioner is not None and not is_scalar:
        if not callable(partitioner):
            raise ValueError(f"Partitioner must be callable, but received: {partitioner!r}")
        return _get_partitioned_variable(
            name, partitioner, shape, dtype, initializer, regularizer, reuse, trainable,
            collections, validate_shape, constraint,
        )  # fmt: skip
    if reuse is True and partitioner is None and name in vs.scope_store().partitioned_variables:
        # TF1: a reusing scope finds a partitioned variable without naming its partitioner
        return _get_partitioned_variable(
            name, None, shape, dtype, initializer, regularizer, reuse, trainable, collections,
            validate_shape, constraint,
        )  # fmt: skip
    if f"{name}/part_0" in vs.scope_store().variables:
        raise ValueError(
            "No partitioner was provided, but a partitioned version of the variable was found: "
            f"{name}/part_0. Perhaps a variable of the same name was already created with "
            "partitioning?"
        )
    return _get_single_variable(
        name, shape, dtype, initializer, regularizer, reuse, trainable, collections,
        validate_shape, constraint, use_resource=use_resource, caching_device=caching_device,
        synchronization=synchronization, aggregation=aggregation,
    )  # fmt: skip


def _get_partitioned_variable(
    name: str,
    partitioner: Callable | None,
    shape: Any,
    dtype: Any,
    initializer: Any,
    regularizer: Callable | None,
    reuse: Any,
    trainable: bool,
    collections: list[str] | None,
    validate_shape: bool,
    constraint: Callable | None,
) -> PartitionedVariable:
    """TF1's `_VariableStore._get_partitioned_variable`: the existing PartitionedVariable of
    full name `name` (when the scope reuses), or a new one of parts `name/part_<i>`."""
    store = vs.scope_store()
    if name in store.variables:
        raise ValueError(
            "A partitioner was provided, but an unpartitioned version of the variable was "
            f"found: {name}. Perhaps a variable of the same name was already created without "
            "partitioning?"
        )
    dtype = dtypes.as_dtype(dtype)
    shape = as_shape(shape)
    # a Tensor, Variable or constant initializer gives the full value: each part gets its slice
    init_tensor = initializer is not None and not callable(initializer)
    if init_tensor:
        with init_scope(graph_lib.get_default_graph()):
            as_tensor = isinstance(initializer, Tensor) or hasattr(initializer, "_as_tensor")
            initializer = core_ops.convert_to_tensor(
                initializer, dtype=None if as_tensor else dtype
            )
        shape = shape.merge_with(initializer.shape)
        dtype = initializer.dtype  # the parts take the value's dtype (TF1: a Tensor's)
    partitions = None
    if not reuse or partitioner:
        partitions = partitioners.call_partitioner(partitioner, shape, dtype)
    existing = store.partitioned_variables.get(name)
    if existing is not None:
        if not reuse:
            raise ValueError(
                f"Partitioned variable with name {name} already exists. Did you mean to set "
                "reuse=True or reuse=tf.AUTO_REUSE in VarScope?"
            )
        if not shape.is_compatible_with(existing.get_shape()):
            raise ValueError(
                f"Trying to reuse partitioned variable {name}, but specified shape {shape} and "
                f"found shape {existing.get_shape()}."
            )
        if dtype != existing.dtype:
            raise ValueError(
                f"Trying to reuse partitioned variable {name}, but specified dtype {dtype.name} "
                f"and found dtype {existing.dtype.name}."
            )
        if partitions is not None and existing.partitions != partitions:
            raise ValueError(
                f"Trying to reuse partitioned variable {name}, but specified partitions "
                f"{partitions} and found partitions {existing.partitions}."
            )
        return existing
    if reuse is True:
        raise ValueError(
            f"PartitionedVariable {name} does not exist, or was not created with "
            "tf.get_variable(). Did you mean to set reuse=False or reuse=tf.AUTO_REUSE in "
            "VarScope?"
        )
    axis, num_slices = slice_axis(partitions)
    if num_slices > shape.as_list()[axis]:
        raise ValueError(
            f"Cannot create {num_slices} slices for size {shape.as_list()[axis]} (variable "
            f"{name}). shape: {shape}, partitions: {partitions}"
        )
    if f"{name}/part_0" in store.variables:
        if f"{name}/part_{num_slices - 1}" not in store.variables:
            raise ValueError(
                f"Partitioner returned a different partitioning than what was already found. "
                f"Partitioner returned {num_slices} shards, and shard {name}/part_0 was found, "
                f"but {name}/part_{num_slices - 1} was not."
            )
        if f"{name}/part_{num_slices}" in store.variables:
            raise ValueError(
                f"Partitioner returned a different partitioning than what was already found. "
                f"Partitioner returned {num_slices} shards, and shard {name}/part_0 was found, "
                f"but so was the extra shard {name}/part_{num_slices}."
            )
    full_shape = shape.as_list()
    parts = []
    for i, (offset, part_shape) in enumerate(iter_slices(full_shape, num_slices, axis)):
        part_name = f"{name}/part_{i}"
        if init_tensor:
            part_init = _slice_of(initializer, offset, part_shape)
            part_dtype, init_shape = initializer.dtype, None
        else:
            part_init = initializer
            if part_init is None:
                part_init = _default_initializer(name, dtype)
            part_dtype, init_shape = dtype, part_shape
        var = _get_single_variable(
            part_name, init_shape, part_dtype, part_init, regularizer, reuse, trainable,
            collections, validate_shape, constraint,
            partition_info=PartitionInfo(full_shape, offset),
        )  # fmt: skip
        mark_as_part(var, SaveSliceInfo(name, full_shape, offset, part_shape))
        parts.append(var)
    partitioned = PartitionedVariable(name, shape, parts[0].dtype, parts, partitions)
    store.partitioned_variables[name] = partitioned
    return partitioned


def _slice_of(value: Tensor, offset: list[int], size: list[int]) -> Callable:
    """The initial value of a part: its slice of a full-shape Tensor, built in the part's own
    initializer scope."""

    def init() -> Tensor:
        return slicing_ops.slice(value, offset, size)

    return init


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
    partition_info: PartitionInfo | None = None,
    use_resource: bool | None = None,
    caching_device: Any = None,
    synchronization: Any = None,
    aggregation: Any = None,
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
            kwargs = {}
            if partition_info is not None and _takes_keyword(initializer, "partition_info"):
                kwargs["partition_info"] = partition_info

            def init_value() -> Any:
                return initializer(dims, dtype=dtype, **kwargs)

            variable_dtype = dtype
        elif _takes_no_arguments(initializer):
            init_value, variable_dtype = initializer, None
        else:
            raise ValueError(
                "The initializer passed is not valid. It should be a callable with no arguments "
                "and the shape should not be provided or an instance of "
                "`tf.keras.initializers.*' and `shape` should be fully defined. (Variable "
                f"{name}: the shape {shape} must be fully defined; give get_variable a shape, "
                "or a constant initializer.)"
            )
    with g.name_scope(None):
        if g.unique_name(name, mark_as_used=False) != name:
            raise ValueError(f"Variable {name}: an op of that name already exists in the graph.")
        var = Variable(
            init_value, trainable=trainable, collections=collections,
            validate_shape=validate_shape, name=name, dtype=variable_dtype,
            constraint=constraint, use_resource=use_resource, caching_device=caching_device,
            synchronization=synchronization or VariableSynchronization.AUTO,
            aggregation=aggregation or VariableAggregation.NONE,
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
    """TF1's default: glorot uniform for floating dtypes, zeros for integers, bools and
    strings (the empty string)."""
    if dtypes.is_floating(dtype):
        return initializers.glorot_uniform_initializer()
    if dtypes.is_integer(dtype) or dtypes.is_bool(dtype) or dtype == dtypes.string:
        return initializers.zeros_initializer()
    raise ValueError(f"An initializer for variable {name} of {dtype.name} is required")


@export("python.ops.variable_scope.EagerVariableStore")
class EagerVariableStore:
    """A store of variables apart from the graph's (TF1's `variable_scope.EagerVariableStore`):
    inside `as_default()`, `get_variable` finds and creates variables in this store instead of
    the graph's, so the same names can be made again; collections are filled as usual.

    sluice builds graphs only, so this is TF1's store in graph mode: TF1's eager-only `copy`
    (new variables holding the same values) is not provided.

    >>> store = EagerVariableStore()
    >>> with store.as_default():
    ...     v = sl.get_variable("v", [], trainable=False)
    >>> store.variables() == [v], store.trainable_variables()
    (True, [])
    """

    def __init__(self, store: EagerVariableStore | None = None):
        if store is not None and not isinstance(store, EagerVariableStore):
            raise ValueError(
                "Cannot construct EagerVariableStore from a VariableStore object that does not "
                f"hold eager variables, got {store!r}."
            )
        self._variables: dict[str, Variable] = {} if store is None else store._variables
        self._partitioned: dict[str, Any] = {} if store is None else store._partitioned

    @contextlib.contextmanager
    def as_default(self) -> Iterator[None]:
        """`get_variable` uses this store in the block (the default graph's)."""
        scopes = vs.scope_store()
        saved = scopes.variables, scopes.partitioned_variables
        scopes.variables, scopes.partitioned_variables = self._variables, self._partitioned
        try:
            yield
        finally:
            scopes.variables, scopes.partitioned_variables = saved

    def variables(self) -> list[Variable]:
        """The store's variables, by name."""
        return sorted(self._variables.values(), key=lambda v: v.name)

    def trainable_variables(self) -> list[Variable]:
        return [v for v in self.variables() if v.trainable]

    def non_trainable_variables(self) -> list[Variable]:
        return [v for v in self.variables() if not v.trainable]


@export("create_partitioned_variables")
def create_partitioned_variables(
    shape: Sequence[int],
    slicing: Sequence[int],
    initializer: Any,
    dtype: Any = dtypes.float32,
    trainable: bool = True,
    collections: list[str] | None = None,
    name: str | None = None,
    reuse: Any = None,
) -> list[Variable]:
    """The parts of a new partitioned variable, sliced as `slicing` says (TF1's deprecated
    `tf.create_partitioned_variables`; `get_variable(..., partitioner=...)` is the current way).

    Args:
      shape: the full shape.
      slicing: the number of parts per axis (one axis split at most); the first parts of an
        uneven split are one longer.
      initializer: a full-shape Tensor (each part gets its slice) or an initializer called
        per part with the part's shape.
      dtype: the parts' dtype (a Tensor initializer's own dtype wins).
      trainable, collections: as `get_variable`'s.
      name: the full variable's name (default "PartitionedVariable", made unique).
      reuse: as `variable_scope`'s.

    Returns:
      The list of part Variables, in order.

    Raises:
      ValueError: shape and slicing of different lengths, a scalar shape, more slices than
        rows, or more than one axis sliced.

    >>> parts = create_partitioned_variables([5, 2], [2, 1], sl.zeros([5, 2]), name="table")
    >>> [p.name for p in parts], parts[1]._save_slice_info.spec
    (['table/part_0:0', 'table/part_1:0'], '5 2 3,2:0,2')
    """
    if len(shape) != len(slicing):
        raise ValueError(
            "The 'shape' and 'slicing' of a partitioned Variable must have the length: "
            f"shape: {list(shape)}, slicing: {list(slicing)}"
        )
    if len(shape) < 1:
        raise ValueError(f"A partitioned Variable must have rank at least 1: shape: {shape}")
    slicing = list(slicing)

    def partitioner(**unused: Any) -> list[int]:
        return slicing

    with vs.variable_scope(name, "PartitionedVariable", reuse=reuse):
        scope = vs.get_variable_scope()
        with graph_lib.get_default_graph().name_scope(None):
            partitioned = _get_partitioned_variable(
                scope.name, partitioner, shape, dtype, initializer, None, scope.reuse,
                trainable, collections, True, None,
            )  # fmt: skip
    return list(partitioned)


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
