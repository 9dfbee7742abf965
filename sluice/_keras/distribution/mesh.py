"""Device meshes and layouts, as `keras.distribution` names them.

    mesh = DeviceMesh((2, 2), ("batch", "model"))          # 4 devices in a 2 x 2 grid
    layout_map = LayoutMap(mesh)
    layout_map["dense.*kernel"] = (None, "model")           # columns split over "model"
    layout_map["dense.*kernel"]                             # -> TensorLayout((None, "model"))

A layout names, per dimension of a variable, the mesh axis it is split over (None: not split).
A variable no key matches is replicated on every device of the mesh.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, MutableMapping, Sequence
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from sluice._export import export
from sluice._keras.distribution import checks


@export("distribution.list_devices")
def list_devices(device_type: str | None = None) -> list[str]:
    """The devices of every process, as "cpu:0", "gpu:3", ... (Keras's names). `device_type`
    ("cpu", "gpu", "tpu") picks a platform; None: the default platform's devices."""
    found = jax.devices(device_type.lower()) if device_type else jax.devices()
    return [f"{d.platform}:{d.id}" for d in found]


def _as_jax_device(device: Any) -> Any:
    """A JAX device, or its name: "cpu:1", "gpu:0", or TF1's "/cpu:1", "/device:GPU:0"."""
    if not isinstance(device, str):
        return device
    name = device.lower().lstrip("/")
    name = name[len("device:") :] if name.startswith("device:") else name
    platform, _, index = name.partition(":")
    for d in jax.devices():
        if d.platform == platform and str(d.id) == index:
            return d
    raise ValueError(f"No device {device!r}; the devices are {list_devices()}.")


def _dimensions(shape: Any) -> tuple[int, ...]:
    """A mesh shape as ints: `int()` would turn 1.7 into 1, so only integers pass (NumPy's too)."""
    if isinstance(shape, (str, bytes)) or not isinstance(shape, Sequence | np.ndarray):
        raise ValueError(
            f"DeviceMesh: shape must be a sequence of integers, e.g. (2, 4); got {shape!r}."
        )
    return tuple(
        checks.integer(s, f"DeviceMesh: shape[{i}] (of shape {tuple(shape)})")
        for i, s in enumerate(shape)
    )


def _names(names: Any, what: str) -> tuple[str, ...]:
    """Axis names as a tuple of non-empty strings; a bare string would become its letters."""
    if isinstance(names, str) or not isinstance(names, Sequence | np.ndarray):
        raise ValueError(
            f"{what} must be a sequence of axis names, e.g. ('batch', 'model'); got {names!r}."
        )
    for name in names:
        if not isinstance(name, str) or not name:
            raise ValueError(f"{what} must hold non-empty strings; got {name!r} in {names!r}.")
    return tuple(names)


@export("distribution.DeviceMesh")
class DeviceMesh:
    """Devices arranged in a grid with named axes (a `jax.sharding.Mesh`).

    Args:
      shape: the grid's shape, e.g. (8,) or (2, 4); its product is the number of devices.
      axis_names: one name per axis, e.g. ("batch",) or ("batch", "model").
      devices: the devices (JAX devices or names like "cpu:0"); default every device of every
        process, in JAX's global order.

    Raises:
      ValueError: shape and axis_names of different lengths, repeated names, no devices, a
        device listed twice, or a device count that is not the shape's product.
    """

    def __init__(
        self, shape: Sequence[int], axis_names: Sequence[str], devices: Sequence[Any] | None = None
    ):
        shape = _dimensions(shape)
        axis_names = _names(axis_names, "DeviceMesh: axis_names")
        if isinstance(devices, str):
            raise ValueError(
                f"DeviceMesh: devices must be a list of devices or device names, "
                f"got the string {devices!r}; write [{devices!r}]."
            )
        if len(shape) != len(axis_names):
            raise ValueError(
                f"DeviceMesh: shape {shape} and axis_names {axis_names} must have the same length."
            )
        if len(set(axis_names)) != len(axis_names):
            raise ValueError(f"DeviceMesh: axis names must differ, got {axis_names}.")
        found = [_as_jax_device(d) for d in (jax.devices() if devices is None else devices)]
        if not found or min(shape) < 1:
            raise ValueError(
                f"DeviceMesh: a mesh needs at least one device on every axis; got "
                f"shape {shape} and {len(found)} devices."
            )
        if int(np.prod(shape)) != len(found):
            raise ValueError(
                f"DeviceMesh: shape {shape} holds {int(np.prod(shape))} devices, "
                f"but {len(found)} devices were given."
            )
        if len(set(found)) != len(found):
            raise ValueError(f"DeviceMesh: a device is listed twice in {found}.")
        self.shape, self.axis_names = shape, axis_names
        self.devices = np.array(found, dtype=object).reshape(shape)
        self.jax_mesh = Mesh(self.devices, axis_names)

    def axis_size(self, name: str) -> int:
        return self.shape[self.axis_names.index(name)]

    def __repr__(self) -> str:
        return f"DeviceMesh(shape={self.shape}, axis_names={self.axis_names})"


@export("distribution.TensorLayout")
class TensorLayout:
    """Per dimension of a tensor, the mesh axis it is split over, or None (not split).

    >>> TensorLayout((None, "model")).axes
    (None, 'model')
    """

    def __init__(self, axes: Sequence[str | None], device_mesh: DeviceMesh | None = None):
        if isinstance(axes, str) or not isinstance(axes, Sequence):
            raise ValueError(
                f"TensorLayout: axes must be a sequence of mesh axis names or None "
                f"(one per dimension), e.g. (None, 'model'); got {axes!r}."
            )
        for axis in axes:
            if axis is not None and (not isinstance(axis, str) or not axis):
                raise ValueError(
                    f"TensorLayout: an axis is a mesh axis name or None; got {axis!r} in {axes!r}."
                )
        if device_mesh is not None and not isinstance(device_mesh, DeviceMesh):
            raise ValueError(
                f"TensorLayout: device_mesh must be a DeviceMesh or None, got {device_mesh!r}."
            )
        self.axes = tuple(axes)
        self.device_mesh = device_mesh

    def sharding(self, mesh: DeviceMesh, shape: Sequence[int], what: str) -> NamedSharding:
        """The sharding of a tensor of `shape` under this layout, checked against `mesh`."""
        if len(self.axes) != len(shape):
            raise ValueError(
                f"The layout {self.axes} of {what} has {len(self.axes)} dimensions; "
                f"{what} has shape {tuple(shape)}."
            )
        for axis, size in zip(self.axes, shape):
            if axis is None:
                continue
            if axis not in mesh.axis_names:
                raise ValueError(
                    f"The layout {self.axes} of {what} names the axis {axis!r}, "
                    f"which the mesh {mesh.axis_names} does not have."
                )
            if size is not None and size % mesh.axis_size(axis):
                raise ValueError(
                    f"{what} has shape {tuple(shape)}: its dimension of size {size} cannot be "
                    f"split evenly over the {mesh.axis_size(axis)} devices of mesh axis "
                    f"{axis!r} (layout {self.axes})."
                )
        return NamedSharding(mesh.jax_mesh, PartitionSpec(*self.axes))

    def __repr__(self) -> str:
        return f"TensorLayout({self.axes})"


@export("distribution.LayoutMap")
class LayoutMap(MutableMapping):
    """Layouts of variables by path: a key is a regular expression searched in a variable's
    path ("dense/kernel", "lstm/lstm_cell/kernel", ...); an exact key wins, and two keys that
    both match one path are an error.

    >>> layout_map = LayoutMap(DeviceMesh((1,), ("model",), devices=jax.devices()[:1]))
    >>> layout_map["dense.*kernel"] = (None, "model")
    >>> layout_map["dense_1/kernel"].axes
    (None, 'model')
    >>> layout_map["dense/bias"] is None
    True
    """

    def __init__(self, device_mesh: DeviceMesh):
        if not isinstance(device_mesh, DeviceMesh):
            raise ValueError(f"LayoutMap: device_mesh must be a DeviceMesh, got {device_mesh!r}.")
        self.device_mesh = device_mesh
        self._layouts: dict[str, TensorLayout] = {}

    def __setitem__(self, key: str, layout: Any) -> None:
        if not isinstance(key, str):
            raise ValueError(f"LayoutMap: a key is a regular expression (a string), got {key!r}.")
        if key in self._layouts:
            raise ValueError(f"LayoutMap: {key!r} already has the layout {self._layouts[key]}.")
        if not isinstance(layout, TensorLayout):
            if not isinstance(layout, (tuple, list)):
                raise ValueError(
                    f"LayoutMap: a layout is a tuple of mesh axis names or None, or "
                    f"a TensorLayout; got {layout!r} for {key!r}."
                )
            layout = TensorLayout(layout, self.device_mesh)
        re.compile(key)  # a bad pattern fails here, not when a variable is placed
        self._layouts[key] = layout

    def __getitem__(self, path: str) -> TensorLayout | None:
        if path in self._layouts:
            return self._layouts[path]
        matches = [key for key in self._layouts if re.search(key, path)]
        if len(matches) > 1:
            raise ValueError(
                f"LayoutMap: the path {path!r} matches more than one key: {matches}."
                " Make the keys specific enough that at most one matches."
            )
        return self._layouts[matches[0]] if matches else None

    def __delitem__(self, key: str) -> None:
        del self._layouts[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._layouts)

    def __len__(self) -> int:
        return len(self._layouts)
