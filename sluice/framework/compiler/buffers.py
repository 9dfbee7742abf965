"""What a forward loop leaves for its backward loop in the compiled engine: a `StackBuffer` of
the values one stack received, one row per forward iteration."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax


@dataclasses.dataclass
class StackBuffer:
    """A saved stack after its forward loop: per-iteration values and the iteration count."""

    values: Any  # [max_iterations, ...] array (or pytree of them), or None when `static` is set
    count: Any
    static: Any = None  # a value known while tracing, the same in every iteration
    on_host: bool = False  # swapped out: `values` live in the device's pinned_host memory


jax.tree_util.register_pytree_node(
    StackBuffer,
    lambda s: ((s.values, s.count), (s.static, s.on_host)),
    lambda aux, children: StackBuffer(children[0], children[1], *aux),
)


def memory(kind: str) -> Any:
    """The first local device's memory of `kind` ("device", "pinned_host") as a sharding."""
    return jax.sharding.SingleDeviceSharding(jax.local_devices()[0], memory_kind=kind)
