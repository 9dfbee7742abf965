"""`DataParallel` and `ModelParallel`: how a step's batch and variables are laid out on a mesh.

Both are read by the compiled engine (`sluice.framework.compiler.sharding`): each fed batch
tensor is split along its first dimension over the mesh's batch axis, each variable is laid
out as `variable_sharding` says (replicated, or by the layout map), and XLA inserts the
collectives. The maths is the single-device program's: only where values live changes.

    distribution = DataParallel()                    # every device, batch split N ways
    with distribution.scope():                       # or set_distribution(distribution)
        model.fit(x, y, batch_size=64)

    sess = sl.Session(config=sl.SessionConfig(distribution=distribution))   # TF1 graphs
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

import jax
from jax.sharding import NamedSharding, PartitionSpec

from sluice._export import export
from sluice._keras.distribution.mesh import DeviceMesh, LayoutMap, TensorLayout

_current: list = [None]  # one per process, as Keras keeps it


@export("distribution.Distribution")
class Distribution:
    """A mesh and the name of its batch axis; variables replicated (subclasses lay them out).

    Args:
      device_mesh: the mesh the step runs on.
      batch_dim_name: the mesh axis a batch is split over (None: batches are replicated).
    """

    def __init__(self, device_mesh: DeviceMesh, batch_dim_name: str | None = None):
        if not isinstance(device_mesh, DeviceMesh):
            raise ValueError(
                f"{type(self).__name__}: device_mesh must be a "
                f"sl.distribution.DeviceMesh, got {device_mesh!r}."
            )
        if batch_dim_name is not None and not isinstance(batch_dim_name, str):
            raise ValueError(
                f"{type(self).__name__}: batch_dim_name must be a mesh axis name "
                f"(a string) or None, got {batch_dim_name!r}."
            )
        if batch_dim_name is not None and batch_dim_name not in device_mesh.axis_names:
            raise ValueError(
                f"batch_dim_name {batch_dim_name!r} is not an axis of the mesh "
                f"{device_mesh.axis_names}."
            )
        self.device_mesh = device_mesh
        self.batch_dim_name = batch_dim_name

    @property
    def mesh(self) -> Any:
        """The `jax.sharding.Mesh`."""
        return self.device_mesh.jax_mesh

    @property
    def batch_shards(self) -> int:
        """Into how many pieces a batch is split: a global batch size must be a multiple."""
        name = self.batch_dim_name
        return 1 if name is None else self.device_mesh.axis_size(name)

    def replicated(self) -> NamedSharding:
        return NamedSharding(self.mesh, PartitionSpec())

    def data_sharding(self, shape: Sequence[int], what: str = "a batch") -> NamedSharding:
        """The sharding of a batch of `shape`: split along its first dimension.

        Raises:
          ValueError: the batch size is not a multiple of the batch axis's device count.
        """
        if self.batch_dim_name is None or not shape:
            return self.replicated()
        if shape[0] % self.batch_shards:
            raise ValueError(
                f"{what} has {shape[0]} samples, which cannot be split evenly over the "
                f"{self.batch_shards} devices of the mesh's {self.batch_dim_name!r} axis: use a "
                f"batch size that is a multiple of {self.batch_shards}."
            )
        return NamedSharding(self.mesh, PartitionSpec(self.batch_dim_name))

    def get_variable_layout(self, path: str) -> TensorLayout | None:
        """The layout of the variable at `path` (None: replicated)."""
        return None

    def variable_sharding(self, path: str, shape: Sequence[int]) -> NamedSharding:
        layout = self.get_variable_layout(path)
        if layout is None:
            return self.replicated()
        return layout.sharding(self.device_mesh, shape, f"variable {path!r}")

    @contextlib.contextmanager
    def scope(self):
        """Makes this the distribution of models trained in the block."""
        previous = distribution()
        set_distribution(self)
        try:
            yield self
        finally:
            set_distribution(previous)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(mesh={self.device_mesh}, "
            f"batch_dim_name={self.batch_dim_name!r})"
        )


@export("distribution.DataParallel")
class DataParallel(Distribution):
    """Every device holds all variables; each step's batch is split over the devices, and the
    gradients are summed across them (by XLA's all-reduce).

    Args:
      device_mesh (or mesh): a one-axis mesh; its axis is the batch axis.
      devices: the devices to use (default: every device of every process).
    """

    def __init__(
        self,
        device_mesh: DeviceMesh | None = None,
        devices: Sequence[Any] | None = None,
        mesh: DeviceMesh | None = None,
        auto_shard_dataset: bool = True,
    ):
        if device_mesh is not None and mesh is not None:
            raise ValueError(
                "DataParallel: give device_mesh or mesh (the same argument), not both."
            )
        device_mesh = device_mesh if device_mesh is not None else mesh
        if isinstance(devices, str):
            raise ValueError(
                f"DataParallel: devices must be a list of devices or device names, "
                f"got the string {devices!r}; write [{devices!r}]."
            )
        if device_mesh is None:
            devices = jax.devices() if devices is None else list(devices)
            device_mesh = DeviceMesh((len(devices),), ("batch",), devices)
        elif devices is not None:
            raise ValueError("DataParallel: give a device_mesh or devices, not both.")
        elif not isinstance(device_mesh, DeviceMesh):
            raise ValueError(
                f"DataParallel: device_mesh must be a sl.distribution.DeviceMesh, "
                f"got {device_mesh!r}."
            )
        if len(device_mesh.shape) != 1:
            raise ValueError(
                f"DataParallel needs a one-axis mesh, got {device_mesh}; use "
                "ModelParallel for a mesh with a model axis."
            )
        super().__init__(device_mesh, device_mesh.axis_names[0])


@export("distribution.ModelParallel")
class ModelParallel(Distribution):
    """Variables laid out by a `LayoutMap` (split over the mesh's model axes), batches split
    over `batch_dim_name` (default: the mesh's first axis).

    Args:
      layout_map: the layouts by variable path, on the mesh the step runs on.
      batch_dim_name: the mesh axis batches are split over.
    """

    def __init__(
        self,
        *,
        layout_map: LayoutMap,
        batch_dim_name: str | None = None,
        device_mesh: DeviceMesh | None = None,
        auto_shard_dataset: bool = True,
    ):
        if not isinstance(layout_map, LayoutMap):
            raise TypeError(f"ModelParallel: layout_map must be a LayoutMap, got {layout_map!r}.")
        mesh = layout_map.device_mesh
        if device_mesh is not None and device_mesh is not mesh:
            raise ValueError("ModelParallel: device_mesh must be the layout map's mesh.")
        super().__init__(mesh, mesh.axis_names[0] if batch_dim_name is None else batch_dim_name)
        self.layout_map = layout_map

    def get_variable_layout(self, path: str) -> TensorLayout | None:
        return self.layout_map[path]


@export("distribution.distribution")
def distribution() -> Distribution | None:
    """The distribution in effect (set by `set_distribution` or a `scope()`), or None."""
    return _current[0]


@export("distribution.set_distribution")
def set_distribution(value: Distribution | None) -> None:
    """Sets the distribution models train under (None: one device)."""
    if value is not None and not isinstance(value, Distribution):
        raise TypeError(f"set_distribution takes a Distribution or None, got {value!r}.")
    _current[0] = value
