"""`replica_device_setter`: TF1's device function that puts variables on parameter devices and
every other op on the worker device (between-graph replication), here on local devices too:

    with sl.device(sl.train.replica_device_setter(
            ps_tasks=1, ps_device="/cpu:0", worker_device="/cpu:1")):
        w = sl.get_variable("w", [4, 2])   # -> /device:CPU:0
        y = sl.matmul(x, w)                # -> /device:CPU:1

A variable is recognised by its NodeDef's op type, as TF1 does (`node_def.op in ps_ops`): a
variable reports `VariableV2` (or `VarHandleOp` with `use_resource=True`), see `Operation.node_def`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sluice._export import export
from sluice.framework.graph_def import NodeDef
from sluice.framework.ir.device_spec import DeviceSpec

# TF1's STANDARD_PS_OPS: the op types of state a parameter server keeps
STANDARD_PS_OPS = (
    "Variable",
    "VariableV2",
    "AutoReloadVariable",
    "MutableHashTable",
    "MutableHashTableV2",
    "MutableHashTableOfTensors",
    "MutableHashTableOfTensorsV2",
    "MutableDenseHashTable",
    "MutableDenseHashTableV2",
    "VarHandleOp",
    "BoostedTreesEnsembleResourceHandleOp",
)


class _RoundRobinStrategy:
    """The ps task of each new parameter op in turn: 0, 1, ..., ps_tasks - 1, 0, ..."""

    def __init__(self, num_tasks: int):
        self._num_tasks = num_tasks
        self._next_task = 0

    def __call__(self, unused_op: Any) -> int:
        task = self._next_task
        self._next_task = (self._next_task + 1) % self._num_tasks
        return task


class _ReplicaDeviceChooser:
    def __init__(
        self,
        ps_tasks: int,
        ps_device: str,
        worker_device: str,
        merge_devices: bool,
        ps_ops: Sequence[str],
        ps_strategy: Callable[[Any], int],
    ):
        self._ps_tasks = ps_tasks
        self._ps_device = ps_device
        self._worker_device = worker_device
        self._merge_devices = merge_devices
        self._ps_ops = ps_ops
        self._ps_strategy = ps_strategy

    def device_function(self, op: Any) -> str:
        """The device of `op` (an Operation or a NodeDef): a parameter device for a state op,
        the worker device for any other; a device already requested fills the unset fields."""
        if not self._merge_devices and op.device:
            return op.device
        current = DeviceSpec.from_string(op.device or "")
        node_def = op if isinstance(op, NodeDef) else op.node_def
        if self._ps_tasks and self._ps_device and node_def.op in self._ps_ops:
            ps_device = DeviceSpec.from_string(self._ps_device)
            # the task is chosen only where the ps job stays the job of the op
            if ps_device.job and (not current.job or current.job == ps_device.job):
                ps_device = ps_device.replace(task=self._ps_strategy(op))
            return ps_device.make_merged_spec(current).to_string()
        worker_device = DeviceSpec.from_string(self._worker_device or "")
        return worker_device.make_merged_spec(current).to_string()


@export("train.replica_device_setter")
def replica_device_setter(
    ps_tasks: int = 0,
    ps_device: str = "/job:ps",
    worker_device: str = "/job:worker",
    merge_devices: bool = True,
    cluster: Any = None,
    ps_ops: Sequence[str] | None = None,
    ps_strategy: Callable[[Any], int] | None = None,
) -> Callable[[Any], str] | None:
    """A device function for `sl.device` that places state ops (variables) on the parameter
    devices, round robin over `ps_tasks` tasks, and every other op on `worker_device`.

    Args:
      ps_tasks: the number of parameter tasks; 0 (and no `cluster`) gives None (no function).
      ps_device: the parameter device ("/job:ps", or a local device such as "/cpu:0"); a task
        number is added when it names a job.
      worker_device: the device of the other ops.
      merge_devices: True: a device the op already requests fills the fields this function
        leaves unset; False: an op that requests a device keeps it.
      cluster: a dict `{job: [addresses]}` (or an object with `as_dict()`): `ps_tasks` is the
        number of tasks of the ps job in it; None when it has no such job.
      ps_ops: the op types placed on the parameter devices (default: TF1's STANDARD_PS_OPS,
        which holds `VariableV2` and `VarHandleOp`).
      ps_strategy: `strategy(op) -> task` (default: round robin).

    Returns:
      The device function, or None when there are no parameter tasks.

    Raises:
      TypeError: `ps_strategy` is not callable.

    >>> with sl.Graph().as_default():
    ...     with sl.device(sl.train.replica_device_setter(
    ...             ps_tasks=1, ps_device="/cpu:0", worker_device="/cpu:1")):
    ...         w = sl.Variable(1.0, name="w")
    ...         y = w * 2.0
    >>> w.device, y.device
    ('/device:CPU:0', '/device:CPU:1')
    """
    if cluster is not None:
        spec = cluster.as_dict() if hasattr(cluster, "as_dict") else dict(cluster)
        ps_job = DeviceSpec.from_string(ps_device).job
        if ps_job not in spec or spec[ps_job] is None:
            return None
        ps_tasks = len(spec[ps_job])
    if ps_tasks == 0:
        return None
    if ps_ops is None:
        ps_ops = list(STANDARD_PS_OPS)
    if ps_strategy is None:
        ps_strategy = _RoundRobinStrategy(ps_tasks)
    if not callable(ps_strategy):
        raise TypeError(f"ps_strategy must be callable, got {ps_strategy!r}.")
    chooser = _ReplicaDeviceChooser(
        ps_tasks, ps_device, worker_device, merge_devices, ps_ops, ps_strategy
    )
    return chooser.device_function
