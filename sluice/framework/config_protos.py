"""TF1's session protocol buffers as plain Python messages: `ConfigProto` (with `GPUOptions`,
`GraphOptions`, `OptimizerOptions`) and `RunOptions`.

TF1 programs build them by keyword (`tf.ConfigProto(allow_soft_placement=True)`) or by field
(`config.gpu_options.allow_growth = True`). Each message knows TF's field names: a misspelt one
is a ValueError naming the message and the field, as protobuf's is, instead of a setting that
silently does nothing. The fields sluice acts on map onto `SessionConfig` (see
`ConfigProto.to_session_config`); the others are accepted, checked for type, and documented
below as having no effect.
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice.framework.session_config import SessionConfig


class _Message:
    """A protocol-buffer-like message: `FIELDS` maps each field to its default (a message class
    for a nested message, created fresh per instance)."""

    FIELDS: dict[str, Any] = {}
    # TF fields sluice refuses rather than ignores: setting one would change what the program
    # means (a cluster to connect to), so it is an error that says why.
    REFUSED: dict[str, str] = {}

    def __init__(self, **fields: Any):
        for name, default in self.FIELDS.items():
            value = default() if isinstance(default, type) else default
            object.__setattr__(
                self,
                name,
                list(value)
                if isinstance(value, list)
                else dict(value)
                if isinstance(value, dict)
                else value,
            )
        for name, value in fields.items():
            setattr(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        cls = type(self).__name__
        if name in self.REFUSED:
            raise ValueError(f"{cls}.{name} is not supported by sluice: {self.REFUSED[name]}")
        if name not in self.FIELDS:
            raise ValueError(
                f'Protocol message {cls} has no "{name}" field (known fields: '
                f"{', '.join(sorted(self.FIELDS))})."
            )
        object.__setattr__(self, name, _checked(cls, name, self.FIELDS[name], value))

    def __eq__(self, other: Any) -> bool:
        return type(other) is type(self) and all(
            getattr(self, f) == getattr(other, f) for f in self.FIELDS
        )

    def __repr__(self) -> str:
        changed = [
            f"{f}={getattr(self, f)!r}"
            for f, d in self.FIELDS.items()
            if getattr(self, f) != (d() if isinstance(d, type) else d)
        ]
        return f"{type(self).__name__}({', '.join(changed)})"

    def CopyFrom(self, other: "_Message") -> None:  # noqa: N802 (protobuf's spelling)
        if type(other) is not type(self):
            raise TypeError(
                f"{type(self).__name__}.CopyFrom needs a {type(self).__name__}, "
                f"got {type(other).__name__}."
            )
        for name in self.FIELDS:
            setattr(self, name, getattr(other, name))


def _checked(cls: str, name: str, default: Any, value: Any) -> Any:
    """`value` if it has the field's type, else a TypeError naming the field."""
    if isinstance(default, type):  # a nested message
        if isinstance(value, default):
            return value
        if isinstance(value, dict):
            return default(**value)
        expected = default.__name__
    elif isinstance(default, bool):
        if isinstance(value, (bool, int)) and value in (0, 1):
            return bool(value)
        expected = "bool"
    elif isinstance(default, int):
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
        expected = "a non-negative int"
    elif isinstance(default, float):
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
            return float(value)
        expected = "a non-negative float"
    elif isinstance(default, str):
        if isinstance(value, str):
            return value
        expected = "str"
    elif isinstance(default, list):
        if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            return list(value)
        expected = "a list of str"
    elif isinstance(default, dict):
        if isinstance(value, dict) and all(
            isinstance(k, str) and isinstance(v, int) and v >= 0 for k, v in value.items()
        ):
            return dict(value)
        expected = "a dict of str to non-negative int"
    else:  # pragma: no cover - every field default is one of the above
        raise AssertionError(default)
    raise TypeError(f"{cls}.{name} must be {expected}, got {value!r}.")


@export("GPUOptions")
class GPUOptions(_Message):
    """TF1's `tf.GPUOptions`.

    `per_process_gpu_memory_fraction` (above 0) becomes the session's `device_memory_limit`,
    that fraction of what the default device reports (the memory the swap policy of
    `while_loop(swap_memory=True)` keeps stacks under). `allow_growth`, `visible_device_list`
    and the allocator settings have no effect: JAX allocates device memory itself, and only
    before it starts (set `XLA_PYTHON_CLIENT_PREALLOCATE=false` in the environment for what
    `allow_growth=True` does in TF).
    """

    FIELDS = {
        "per_process_gpu_memory_fraction": 0.0,
        "allow_growth": False,
        "allocator_type": "",
        "deferred_deletion_bytes": 0,
        "visible_device_list": "",
        "polling_active_delay_usecs": 0,
        "polling_inactive_delay_msecs": 0,
        "force_gpu_compatible": False,
    }


@export("OptimizerOptions")
class OptimizerOptions(_Message):
    """TF1's `tf.OptimizerOptions`: accepted; sluice's own graph passes and XLA decide."""

    L1, L0 = 0, -1  # opt_level
    DEFAULT, OFF, ON_1, ON_2 = 0, -1, 1, 2  # global_jit_level
    FIELDS = {
        "do_common_subexpression_elimination": False,
        "do_constant_folding": False,
        "max_folded_constant_in_bytes": 0,
        "do_function_inlining": False,
        "opt_level": 0,
        "global_jit_level": 0,
    }

    def __setattr__(self, name: str, value: Any) -> None:
        if (
            name in ("opt_level", "global_jit_level")
            and isinstance(value, int)
            and not isinstance(value, bool)
            and value >= -1
        ):
            object.__setattr__(self, name, value)  # the enums include -1 (L0, OFF)
            return
        super().__setattr__(name, value)


@export("GraphOptions")
class GraphOptions(_Message):
    """TF1's `tf.GraphOptions`: accepted; no effect (every step is compiled whole by XLA)."""

    FIELDS = {
        "optimizer_options": OptimizerOptions,
        "enable_recv_scheduling": False,
        "build_cost_model": 0,
        "build_cost_model_after": 0,
        "infer_shapes": False,
        "place_pruned_graph": False,
        "enable_bfloat16_sendrecv": False,
        "timeline_step": 0,
    }


@export("ConfigProto")
class ConfigProto(_Message):
    """TF1's `tf.ConfigProto`.

    Acted on (see `to_session_config`): `allow_soft_placement`, `log_device_placement`,
    `operation_timeout_in_ms` (each run's deadline unless its `RunOptions` sets one),
    `inter_op_parallelism_threads=1` (partitions of a multi-device graph take turns on the
    calling thread instead of one thread each), `gpu_options.per_process_gpu_memory_fraction`.
    Accepted without effect, because JAX fixes them for the whole process when it starts:
    `intra_op_parallelism_threads`, other `inter_op_parallelism_threads` values,
    `use_per_session_threads`, `device_count`, `device_filters`, `placement_period`,
    `graph_options`, `isolate_session_state`, `gpu_options.allow_growth`. `cluster_def` and
    `rpc_options` (a TF cluster) are refused: sluice runs several processes with
    `sl.distribution`.

    >>> config = ConfigProto(allow_soft_placement=True)
    >>> config.gpu_options.allow_growth = True
    >>> config.to_session_config().allow_soft_placement
    True
    """

    FIELDS = {
        "device_count": {},
        "intra_op_parallelism_threads": 0,
        "inter_op_parallelism_threads": 0,
        "use_per_session_threads": False,
        "placement_period": 0,
        "device_filters": [],
        "gpu_options": GPUOptions,
        "allow_soft_placement": False,
        "log_device_placement": False,
        "graph_options": GraphOptions,
        "operation_timeout_in_ms": 0,
        "isolate_session_state": False,
    }
    REFUSED = {
        "cluster_def": "it connects to a TensorFlow cluster; use sl.distribution.",
        "rpc_options": "it configures a TensorFlow cluster; use sl.distribution.",
        "session_inter_op_thread_pool": "JAX keeps one thread pool per process.",
    }

    def to_session_config(self) -> SessionConfig:
        return SessionConfig(
            allow_soft_placement=self.allow_soft_placement,
            log_device_placement=self.log_device_placement,
            operation_timeout_in_ms=self.operation_timeout_in_ms,
            partition_threads=self.inter_op_parallelism_threads != 1,
            device_memory_limit=self._device_memory_limit(),
        )

    def _device_memory_limit(self) -> int | None:
        fraction = self.gpu_options.per_process_gpu_memory_fraction
        if not fraction:
            return None
        if fraction > 1:
            raise ValueError(
                f"GPUOptions.per_process_gpu_memory_fraction must be at most 1, got {fraction}."
            )
        from sluice.framework.placement import devices

        reported = devices.default_device().memory_limit
        return int(reported * fraction) if reported else None


@export("RunOptions")
class RunOptions(_Message):
    """Options of one `Session.run` (TF1's `tf.RunOptions`).

    Fields:
      timeout_in_ms: stop the run with DeadlineExceededError when it takes longer (0: no limit).
        An interpreted or multi-device run is stopped where it is; a compiled single-device step
        cannot be interrupted, so it runs interpreted when a timeout is set.
      trace_level: `FULL_TRACE` (or any level above NO_TRACE) records when each op ran into the
        `RunMetadata.step_stats` of the run (see `sl.client.timeline` for a Chrome trace). The
        run is interpreted so that each op is timed on its own, its result waited for.
      output_partition_graphs: `RunMetadata.partition_graphs` lists, per device, the names of
        the ops placed there.
      inter_op_thread_pool, report_tensor_allocations_upon_oom: accepted; no effect.
    """

    NO_TRACE, SOFTWARE_TRACE, HARDWARE_TRACE, FULL_TRACE = range(4)
    FIELDS = {
        "trace_level": 0,
        "timeout_in_ms": 0,
        "inter_op_thread_pool": 0,
        "output_partition_graphs": False,
        "report_tensor_allocations_upon_oom": False,
    }

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "trace_level" and value not in range(4):
            raise ValueError(
                f"RunOptions.trace_level must be one of NO_TRACE, SOFTWARE_TRACE, "
                f"HARDWARE_TRACE, FULL_TRACE (0-3), got {value!r}."
            )
        super().__setattr__(name, value)
