"""Device names, TF1 style: `DeviceSpec`, and the canonical strings ops carry in `op.device`.

A device name lists some of five fields, each optional:

    /job:localhost/replica:0/task:0/device:CPU:1

The short forms `/cpu:1`, `/gpu:0`, `/GPU:0`, `CPU:0` and `/device:GPU:0` parse too, and `*` as an
index means any device of that type. Every name prints in one canonical form (`to_string`): the
fields that are set, in the order above, the device as `device:TYPE:INDEX` with the type in upper
case (`device:CPU:*` when only the type is known).
"""

from __future__ import annotations

import re
from typing import Any

from sluice._export import export

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_SHORT_TYPES = frozenset({"CPU", "GPU", "TPU"})  # types that may be written without `device:`
_FIELDS = ("job", "replica", "task", "device_type", "device_index")


@export("DeviceSpec")
class DeviceSpec:
    """An immutable, possibly partial, device name (TF1's `tf.DeviceSpec`).

    Args:
      job: the job name (`"localhost"`, `"worker"`), or None.
      replica: the replica number, or None.
      task: the task number, or None.
      device_type: `"CPU"`, `"GPU"`, `"TPU"` or another type; kept in upper case. None: any.
      device_index: the device number within its type, or None for any.

    Raises:
      ValueError: a field is not of its form (a negative number, a job name with a `/`).

    >>> spec = DeviceSpec.from_string("/job:worker/gpu:1")
    >>> spec.to_string()
    '/job:worker/device:GPU:1'
    >>> spec.make_merged_spec(DeviceSpec(device_type="cpu")).to_string()
    '/job:worker/device:CPU:1'
    >>> DeviceSpec(device_type="GPU").to_string()
    '/device:GPU:*'
    """

    __slots__ = ("_job", "_replica", "_task", "_device_type", "_device_index", "_string")

    def __init__(
        self,
        job: str | None = None,
        replica: int | None = None,
        task: int | None = None,
        device_type: str | None = None,
        device_index: int | None = None,
    ):
        self._job = _checked_name("job", job)
        self._replica = _checked_number("replica", replica)
        self._task = _checked_number("task", task)
        device_type = _checked_name("device_type", device_type)
        self._device_type = None if device_type is None else device_type.upper()
        self._device_index = _checked_number("device_index", device_index)
        self._string = _format(
            self._job, self._replica, self._task, self._device_type, self._device_index
        )

    @classmethod
    def from_string(cls, spec: str) -> "DeviceSpec":
        """Parses a full or partial device name; `""` gives the spec with no field set.

        Args:
          spec: a name such as `/job:localhost/replica:0/task:0/device:CPU:1` or `/gpu:0`.

        Returns:
          The DeviceSpec it names.

        Raises:
          ValueError: an unknown field, a malformed number, or one field given twice with two
            different values.

        >>> DeviceSpec.from_string("/gpu:0") == DeviceSpec(device_type="GPU", device_index=0)
        True
        """
        if not isinstance(spec, str):
            raise TypeError(f"A device name must be a string, got {spec!r}.")
        fields: dict[str, Any] = {}
        for part in spec.split("/"):
            if part:
                for key, value in _parse_part(spec, part):
                    if fields.get(key, value) != value:
                        raise ValueError(
                            f"Device name {spec!r} gives {key} twice, as {fields[key]!r} and "
                            f"{value!r}."
                        )
                    fields[key] = value
        try:
            return cls(**fields)
        except ValueError as err:
            raise ValueError(f"Device name {spec!r}: {err}") from None

    # -- fields --------------------------------------------------------------------------------
    @property
    def job(self) -> str | None:
        return self._job

    @property
    def replica(self) -> int | None:
        return self._replica

    @property
    def task(self) -> int | None:
        return self._task

    @property
    def device_type(self) -> str | None:
        return self._device_type

    @property
    def device_index(self) -> int | None:
        return self._device_index

    # -- derived specs -------------------------------------------------------------------------
    def to_string(self) -> str:
        """The canonical name: set fields only, in order (a device index without a device type
        is not printed, as in TF1)."""
        return self._string

    def make_merged_spec(self, other: "DeviceSpec") -> "DeviceSpec":
        """This spec with every field that `other` sets replaced by `other`'s.

        >>> outer = DeviceSpec(job="worker", device_type="CPU")
        >>> outer.make_merged_spec(DeviceSpec.from_string("/gpu:1")).to_string()
        '/job:worker/device:GPU:1'
        """
        merged = {
            f: getattr(other, f) if getattr(other, f) is not None else getattr(self, f)
            for f in _FIELDS
        }
        return DeviceSpec(**merged)

    def replace(self, **fields: Any) -> "DeviceSpec":
        """A copy with the given fields replaced (None clears one).

        >>> DeviceSpec.from_string("/job:ps/cpu:0").replace(job=None, device_index=2).to_string()
        '/device:CPU:2'
        """
        unknown = set(fields) - set(_FIELDS)
        if unknown:
            raise TypeError(f"DeviceSpec has no field {sorted(unknown)[0]!r}; it has {_FIELDS}.")
        return DeviceSpec(**{f: fields.get(f, getattr(self, f)) for f in _FIELDS})

    # -- value semantics -----------------------------------------------------------------------
    def _key(self) -> tuple:
        return (self._job, self._replica, self._task, self._device_type, self._device_index)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, DeviceSpec) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        set_fields = ", ".join(
            f"{f}={getattr(self, f)!r}" for f in _FIELDS if getattr(self, f) is not None
        )
        return f"DeviceSpec({set_fields})"


def canonical_name(device: DeviceSpec | str | None) -> str:
    """The canonical string of a device name or spec (`""` for None).

    >>> canonical_name("/job:localhost/replica:0/task:0/cpu:1")
    '/job:localhost/replica:0/task:0/device:CPU:1'
    """
    if device is None:
        return ""
    if isinstance(device, DeviceSpec):
        return device.to_string()
    return DeviceSpec.from_string(device).to_string()


def merge_device(inner: DeviceSpec | str | None, outer: DeviceSpec | str | None) -> str:
    """The name an op gets in `with device(outer): with device(inner):`: inner fields win.

    >>> merge_device("/gpu:1", "/job:worker/cpu:0")
    '/job:worker/device:GPU:1'
    """
    return as_spec(outer).make_merged_spec(as_spec(inner)).to_string()


def as_spec(device: DeviceSpec | str | None) -> DeviceSpec:
    """`device` as a DeviceSpec (None and `""` give the spec with no field set)."""
    if isinstance(device, DeviceSpec):
        return device
    return DeviceSpec.from_string(device or "")


# -- parsing and printing ----------------------------------------------------------------------
def _parse_part(spec: str, part: str) -> list[tuple[str, Any]]:
    """The fields one `/`-separated part of `spec` sets, as (field, value) pairs."""
    y = part.split(":")
    if len(y) == 2 and y[0] in ("job", "replica", "task"):
        return [(y[0], y[1] if y[0] == "job" else _index(spec, y[0], y[1], star=False))]
    if len(y) in (1, 2) and y[0].upper() in _SHORT_TYPES:
        index = _index(spec, "device_index", y[1]) if len(y) == 2 else None
        return [("device_type", y[0].upper()), ("device_index", index)]
    if len(y) == 3 and y[0] == "device":
        return [("device_type", y[1].upper()), ("device_index", _index(spec, "device_index", y[2]))]
    raise ValueError(
        f"Unknown part {part!r} in device name {spec!r}: expected /job:NAME, /replica:N, "
        "/task:N, /device:TYPE:N (N may be *), or /cpu:N, /gpu:N, /tpu:N."
    )


def _index(spec: str, field: str, text: str, star: bool = True) -> int | None:
    if star and text == "*":
        return None
    if not text.isdigit():
        expected = "a number or *" if star else "a number"
        raise ValueError(f"Device name {spec!r}: {field} must be {expected}, got {text!r}.")
    return int(text)


def _checked_name(field: str, value: str | None) -> str | None:
    if value is not None and not (isinstance(value, str) and _NAME.match(value)):
        raise ValueError(f"{field} must be a name of letters, digits and _, got {value!r}.")
    return value


def _checked_number(field: str, value: Any) -> int | None:
    if value is None:
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = -1
    if number < 0 or isinstance(value, (bool, float)):
        raise ValueError(f"{field} must be a number >= 0 or None, got {value!r}.")
    return number


def _format(job, replica, task, device_type, device_index) -> str:
    parts = []
    if job is not None:
        parts.append(f"/job:{job}")
    if replica is not None:
        parts.append(f"/replica:{replica}")
    if task is not None:
        parts.append(f"/task:{task}")
    if device_type is not None:
        parts.append(f"/device:{device_type}:{'*' if device_index is None else device_index}")
    return "".join(parts)


class DeviceScope:
    """One `graph.device(...)` scope on a graph's device stack.

    A scope is a device name (`spec`), a device function (`function`), or a break
    (`device(None)`: neither). `static` is the canonical name new ops get when no device function
    is active between this scope and the last break, computed once when the scope opens; None
    when one is, and each new op then goes through the stack (`Graph._apply_device_functions`).

    Args:
      device: a name, DeviceSpec, device function `fn(op) -> name | DeviceSpec | None`, or None.
      outer: the scope this one opens in (None at the bottom of the stack).

    >>> outer = DeviceScope("/job:worker", None)
    >>> DeviceScope("/gpu:1", outer).static
    '/job:worker/device:GPU:1'
    >>> DeviceScope(None, outer).static
    ''
    """

    __slots__ = ("spec", "function", "static", "_merged")

    def __init__(self, device: Any, outer: "DeviceScope | None"):
        self.spec: DeviceSpec | None = None
        self.function = None
        if device is None:  # a break: nothing outside applies
            self._merged: DeviceSpec | None = _EMPTY
        elif isinstance(device, (str, DeviceSpec)):
            self.spec = as_spec(device)
            below = _EMPTY if outer is None else outer._merged
            self._merged = None if below is None else below.make_merged_spec(self.spec)
        elif callable(device):
            self.function = device
            self._merged = None
        else:
            raise TypeError(
                f"device() takes a device name, a DeviceSpec, a function of the op, or None; "
                f"got {device!r}."
            )
        self.static = None if self._merged is None else self._merged.to_string()

    @property
    def is_break(self) -> bool:
        return self.spec is None and self.function is None


_EMPTY = DeviceSpec()
