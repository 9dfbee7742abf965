"""TF1's variable collections and their deprecated spellings: `get_local_variable`,
`model_variables`, `moving_average_variables`, `all_variables`, `initialize_all_variables`,
`tables_initializer`."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._tf1.cells.variable_store import get_variable
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import GraphKeys, Operation
from sluice.framework.ops.core import core_ops
from sluice.framework.variables import (
    Variable,
    global_variables,
    global_variables_initializer,
)


@export("get_local_variable")
def get_local_variable(
    name: str,
    shape: Any = None,
    dtype: Any = None,
    initializer: Any = None,
    regularizer: Any = None,
    trainable: bool = False,
    collections: list[str] | None = None,
    caching_device: Any = None,
    partitioner: Any = None,
    validate_shape: bool = True,
    use_resource: bool | None = None,
    custom_getter: Any = None,
    constraint: Any = None,
    synchronization: Any = None,
    aggregation: Any = None,
) -> Any:
    """`get_variable` in the LOCAL_VARIABLES collection (and not GLOBAL_VARIABLES), not
    trainable (TF1 `tf.get_local_variable`, with `get_variable`'s arguments); initialized by
    `local_variables_initializer`."""
    collections = [GraphKeys.LOCAL_VARIABLES, *(collections or [])]
    return get_variable(
        name,
        shape=shape,
        dtype=dtype,
        initializer=initializer,
        regularizer=regularizer,
        trainable=trainable,
        collections=collections,
        caching_device=caching_device,
        partitioner=partitioner,
        validate_shape=validate_shape,
        use_resource=use_resource,
        custom_getter=custom_getter,
        constraint=constraint,
        synchronization=synchronization,
        aggregation=aggregation,
    )


@export("model_variables")
def model_variables(scope: str | None = None) -> list[Variable]:
    """The MODEL_VARIABLES collection (TF1 `tf.model_variables`): variables a model's layers
    put there for inference (empty unless code adds to it)."""
    return graph_lib.get_collection(GraphKeys.MODEL_VARIABLES, scope)


@export("moving_average_variables")
def moving_average_variables(scope: str | None = None) -> list[Variable]:
    """The variables given to `ExponentialMovingAverage.apply` (TF1
    `tf.moving_average_variables`)."""
    return graph_lib.get_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, scope)


@export("all_variables")
def all_variables() -> list[Variable]:
    """TF1's deprecated name of `global_variables()`."""
    return global_variables()


@export("initialize_all_variables")
def initialize_all_variables() -> Operation:
    """TF1's deprecated name of `global_variables_initializer()`."""
    return global_variables_initializer()


@export("tables_initializer")
def tables_initializer(name: str = "init_all_tables") -> Operation:
    """The op that initializes every lookup table (TF1 `tf.tables_initializer`): sluice has no
    lookup tables, so it is a no_op, which TF1 also returns when there are none."""
    return core_ops.no_op(name=name)
