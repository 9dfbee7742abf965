"""Where a session's values live under a distribution (`sluice.distribution`): the SPMD path.

A distribution gives three shardings over one device mesh (`jax.sharding.NamedSharding`):
  - `data_sharding(shape, what)`: a fed batch, split along its first dimension;
  - `variable_sharding(path, shape)`: a variable, replicated or laid out by a layout map;
  - `replicated()`: everything else (scalars, fetched values).
`StepShardings` applies them for one session: variables are placed when written (by a step, an
initializer, a restore or `load`) and stay placed between steps; feeds enter the jitted step
through its `in_shardings` (NumPy is copied straight onto the mesh); the step constrains what
it writes to the same shardings and what it returns to replicated, so every process can read a
fetched value and nothing is gathered per step except the fetches. Optimizer slots (made under
`colocate_with(var)`, see `optimizers`) take their variable's layout when their shapes agree.

Several processes: each one runs the same steps on the same fed values (the global batch);
`jax.make_array_from_callback` copies only this process's slices to its devices.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from sluice.framework.ir.graph import Graph, Tensor


class StepShardings:
    """The shardings of one session's variables, feeds and fetches under `distribution`."""

    def __init__(self, distribution: Any, graph: Graph):
        self.distribution = distribution
        self.graph = graph
        self._paths: dict[str, tuple[str, Any]] = {}  # handle -> (layout path, owner's shape)
        self._scanned = -1
        self._cache: dict[tuple, Any] = {}
        self.replicated = distribution.replicated()
        self._batch_shards = distribution.batch_shards
        self._batch = distribution.data_sharding((self._batch_shards,))

    # -- variables -------------------------------------------------------------------------
    def variable(self, handle: str, shape: tuple) -> Any:
        """The sharding of variable `handle` holding a value of `shape`."""
        key = (handle, tuple(shape))
        found = self._cache.get(key)
        if found is None:
            path, owner_shape = self._layout_path(handle)
            if owner_shape is not None and tuple(owner_shape) != tuple(shape):
                found = self.replicated  # a slot shaped unlike its variable
            else:
                found = self.distribution.variable_sharding(path, tuple(shape))
            self._cache[key] = found
        return found

    def _layout_path(self, handle: str) -> tuple[str, Any]:
        """The path a variable is laid out by: its own, or for an optimizer slot (colocated
        with its variable) the variable's, with the variable's shape to compare."""
        if handle not in self._paths and self._scanned != len(self.graph.get_operations()):
            ops = self.graph.get_operations()
            self._scanned = len(ops)
            by_name = {op.name: op for op in ops if op.type == "VarHandleOp"}
            for op in by_name.values():
                path, owner_shape = op.get_attr("shared_name"), None
                owners = [
                    g[len("loc:@") :] for g in op.colocation_groups() if g.startswith("loc:@")
                ]
                owner = by_name.get(owners[0]) if len(owners) == 1 else None
                if owner is not None and owner is not op:
                    path = owner.get_attr("shared_name")
                    owner_shape = owner.get_attr("shape").as_list()
                self._paths[op.get_attr("shared_name")] = (path, owner_shape)
        return self._paths.get(handle, (handle, None))

    def place_variable(self, handle: str, value: Any) -> Any:
        return place(value, self.variable(handle, np.shape(value)))

    def constrain_variable(self, handle: str, value: Any) -> Any:
        """Inside a traced step: `value` laid out as variable `handle` is."""
        return jax.lax.with_sharding_constraint(value, self.variable(handle, value.shape))

    # -- feeds and fetches -----------------------------------------------------------------------
    def feed_sharding(self, tensor: Tensor) -> Any:
        """A batch (the placeholder's first dimension is unknown) is split over the batch axis,
        anything else replicated."""
        return self._batch if _is_batch(tensor) else self.replicated

    def prepare_feed(self, tensor: Tensor, value: Any) -> Any:
        """`value` ready for a step whose feeds have `feed_sharding`s: NumPy stays NumPy in one
        process (the jitted call copies it to the devices on its fast path); anything else is
        placed. Raises ValueError for a batch that does not split evenly over the batch axis."""
        if _is_batch(tensor) and np.ndim(value) and np.shape(value)[0] % self._batch_shards:
            self.distribution.data_sharding(np.shape(value), f"The value fed to {tensor.name}")
        if isinstance(value, np.ndarray) and jax.process_count() == 1:
            return value
        return place(value, self.feed_sharding(tensor))

    def constrain_fetch(self, value: Any) -> Any:
        return jax.lax.with_sharding_constraint(value, self.replicated)


def _is_batch(tensor: Tensor) -> bool:
    static = tensor.shape
    return static.rank is not None and static.rank >= 1 and static[0] is None


def place(value: Any, sharding: Any) -> Any:
    """`value` (NumPy, or a jax.Array anywhere) laid out by `sharding`."""
    if isinstance(value, jax.Array):
        if value.sharding.is_equivalent_to(sharding, value.ndim):
            return value
        if not value.is_fully_addressable:  # another process holds part: move it by XLA
            return jax.jit(lambda x: x, out_shardings=sharding)(value)
        if jax.process_count() > 1:
            value = np.asarray(value)
    if jax.process_count() > 1:
        host = np.asarray(value)  # the same on every process: each copies its own slices
        return jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])
    return jax.device_put(value, sharding)


def to_local(value: Any) -> Any:
    """`value` whole on one device of this process (a collective when other processes hold parts
    of it: every process must call it, in the same order)."""
    if not isinstance(value, jax.Array) or len(value.sharding.device_set) == 1:
        return value
    if value.is_fully_replicated:
        return value.addressable_data(0)
    if value.is_fully_addressable:
        return jax.device_put(value, jax.local_devices()[0])
    mesh = value.sharding.mesh  # laid out across processes: only a NamedSharding does that here
    whole = jax.jit(
        lambda x: x, out_shardings=jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
    )(value)
    return whole.addressable_data(0)
