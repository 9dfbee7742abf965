"""`Session`: runs fetches of a graph, keeping variables and random-number state between runs."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
import weakref
from collections.abc import Iterator
from typing import Any, Protocol

import jax
import jax.numpy as jnp
import numpy as np

from sluice._export import export
from sluice.framework import state_cells
from sluice.framework.compiler import persistent_cache
from sluice.framework.compiler.frame import KernelTraceError, NotLowerable
from sluice.framework.compiler.sharding import StepShardings, to_local
from sluice.framework.compiler.step import CompiledStep
from sluice.framework.config_protos import ConfigProto, RunOptions  # noqa: F401 (re-exported)
from sluice.framework.control_flow import checks as graph_checks
from sluice.framework.feeds import convert_feed_value, flatten_feed_dict
from sluice.framework.interpreter.executor import Executor, Plan
from sluice.framework.interpreter.partitioned import PartitionStats, run_partitions
from sluice.framework.interpreter.stack_memory import StackMemory, StackStats
from sluice.framework.ir import dtypes, errors, registry, string_values
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.default_session import default_session
from sluice.framework.ir.graph import Graph, Operation, Tensor
from sluice.framework.ir.kernel_context import derive_key
from sluice.framework.ir.x64 import with_x64
from sluice.framework.ops.host import host_ops
from sluice.framework.ops.host.host_kernels import HOST_MAX_ELEMENTS
from sluice.framework.placement import devices as devices_lib
from sluice.framework.placement.partitioner import Partition, partition
from sluice.framework.placement.placer import place
from sluice.framework.prune import DEAD, Pruned, prune
from sluice.framework.session_config import SessionConfig
from sluice.framework.step_stats import StepStats, device_step_stats

_logger = logging.getLogger("sluice")


class _Unlowerable:
    """Why a plan runs interpreted; logged once (not at all when expected)."""

    def __init__(self, reason: str, quiet: bool = False):
        self.reason = reason
        self.quiet = quiet  # host-only ops (file I/O) always run interpreted, silently
        self.logged = quiet


@dataclasses.dataclass
class DeviceAttributes:
    """One device of the session (TF1's `sess.list_devices()` items)."""

    name: str
    device_type: str
    memory_limit_bytes: int | None
    incarnation: int = 0


@export("RunMetadata")
@dataclasses.dataclass
class RunMetadata:
    """Filled by `Session.run(..., run_metadata=m)`: what the run did."""

    engine: str = ""
    nodes_run: int = 0
    nodes_in_plan: int = 0
    stack_stats: StackStats = dataclasses.field(default_factory=StackStats)
    graph_passes: list = dataclasses.field(default_factory=list)  # compiled: (pass, op name)
    new_plan: bool = False  # this run pruned and planned its fetches anew (no cached plan fitted)
    compiles: int = 0  # XLA programs this run traced and compiled (0: a cached one ran)
    # one record per device the graph ran on (see `interpreter.partitioned.PartitionStats`)
    partitions: list = dataclasses.field(default_factory=list)
    # with RunOptions(trace_level=FULL_TRACE): when each op ran (see `step_stats`)
    step_stats: StepStats = dataclasses.field(default_factory=StepStats)
    # with RunOptions(output_partition_graphs=True): per device, the names of its ops
    partition_graphs: list = dataclasses.field(default_factory=list)


class SessionState:
    """The session's variables and per-op random counters: the interpreter's `KernelContext`."""

    def __init__(self):
        self.variables: dict[str, Any] = {}
        self.random_counts: dict[str, int] = {}
        self.op = None
        self.stack_memory: StackMemory | None = None
        self.written: set[str] = set()  # handles an interpreted run wrote (see `_wait_for`)
        self.host_resources: host_ops.HostResources | None = None  # for in-step host ops

    def read_variable(self, handle: str) -> Any:
        try:
            return self.variables[handle]
        except KeyError:
            raise errors.FailedPreconditionError(
                None,
                self.op,
                f"Attempting to use uninitialized value {handle}: run its initializer first "
                "(sl.global_variables_initializer()) or restore it from a checkpoint.",
            ) from None

    def write_variable(self, handle: str, value: Any) -> None:
        self.variables[handle] = value
        self.written.add(handle)

    def has_variable(self, handle: str) -> bool:
        return handle in self.variables

    def random_key(self) -> Any:
        op = self.op
        count = self.random_counts.get(op.name, 0)
        self.random_counts[op.name] = count + 1
        return derive_key(op.get_attr("seed"), op.get_attr("seed2"), count)

    def copy(self) -> SessionState:
        """A deep copy of the variables and random counters: the compiled engine donates (and so
        deletes) the buffers of variables it assigns, so the copy must not share them."""
        copy = SessionState()
        copy.variables = {h: _copy_array(v) for h, v in self.variables.items()}
        copy.random_counts = dict(self.random_counts)
        return copy


def _copy_array(value: Any) -> Any:
    if isinstance(value, jax.Array):
        return jnp.array(value, copy=True)
    if isinstance(value, np.ndarray):
        return value.copy()
    return value


@dataclasses.dataclass
class EngineRun:
    """One side of a `Session.run` compared across engines (see `compare_engines`): what it
    returned or raised, its RunMetadata, and the variables and random counters it left."""

    value: Any
    error: Exception | None
    metadata: RunMetadata
    variables: dict[str, Any]
    random_counts: dict[str, Any]

    def result(self) -> Any:
        """The value the run returned, or the exception it raised, raised again."""
        if self.error is not None:
            raise self.error
        return self.value


class EngineComparison(Protocol):
    """What `compare_engines` takes: the engine to compare with the interpreter, and the check."""

    engine: str  # the candidate side's engine: "compiled" or "auto"

    def compare(self, candidate: EngineRun, reference: EngineRun) -> None:
        """Raises (an AssertionError) when the candidate run disagrees with the interpreted one."""


_comparisons: list[EngineComparison] = []  # the open `compare_engines`, innermost last


@contextlib.contextmanager
def compare_engines(comparison: EngineComparison) -> Iterator[EngineComparison]:
    """Makes every `Session.run` of the process a compared run while the context is open.

    One compared run copies the session's state, runs the fetches with `comparison.engine` on
    the copy, runs them with the interpreted engine on the state itself, and hands both
    `EngineRun`s to `comparison.compare`; then the interpreted outcome (values or exception,
    state, RunMetadata) is what the caller sees. `sluice.testing.differential_sessions` is the
    comparison the tests use.
    """
    _comparisons.append(comparison)
    try:
        yield comparison
    finally:
        del _comparisons[next(i for i, c in enumerate(_comparisons) if c is comparison)]


class _PartitionState:
    """One partition's view of the session state: the same variables and random counters, its
    own running op and stack memory (partitions run on threads of their own)."""

    def __init__(self, state: SessionState, stack_memory: StackMemory):
        self.variables = state.variables
        self.random_counts = state.random_counts
        self.op = None
        self.stack_memory = stack_memory
        self.written = state.written
        self.host_resources = state.host_resources

    read_variable = SessionState.read_variable
    write_variable = SessionState.write_variable
    has_variable = SessionState.has_variable
    random_key = SessionState.random_key


def _sum_stack_stats(all_stats: list[StackStats]) -> StackStats:
    total = StackStats()
    for stats in all_stats:
        for field in dataclasses.fields(StackStats):
            name = field.name
            setattr(total, name, getattr(total, name) + getattr(stats, name))
    return total


@export("Session")
class Session:
    """Runs parts of a graph. A context manager: `with Session() as sess: sess.run(y)`.

    Args:
      target: unused (kept for TF1 signatures).
      graph: the graph to run (default: the default graph).
      config: a `SessionConfig`.
    """

    def __init__(
        self, target: str = "", graph: Graph | None = None, config: SessionConfig | None = None
    ):
        self._graph = graph if graph is not None else graph_lib.get_default_graph()
        if isinstance(config, ConfigProto):
            config = config.to_session_config()
        elif config is not None and not isinstance(config, SessionConfig):
            raise TypeError(f"config must be a SessionConfig or a ConfigProto, got {config!r}.")
        self._config = config if config is not None else SessionConfig()
        self._state = SessionState()
        distribution = self._config.distribution
        self._shardings = StepShardings(distribution, self._graph) if distribution else None
        self._pruned: dict[tuple, Pruned] = {}
        self._compiled: dict[Pruned, Any] = {}  # its CompiledStep, or why it cannot compile
        self._plans: dict[Pruned, Plan] = {}  # the interpreter's plan, made when one runs
        self._placed: dict[Pruned, list[Partition]] = {}  # one partition per device used
        self._partition_plans: dict[Pruned, list[Plan]] = {}
        self._plans_built = 0
        self._plans_version = self._graph.mutation_version
        self._retired_compiles = 0  # compiles of steps dropped with their plans
        self._closed = False
        self._context_managers: list[Any] = []
        # iterators and queues (see `ops.host_ops`); their threads may call `run` concurrently
        self.host_resources = host_ops.HostResources()
        self._state.host_resources = self.host_resources
        self._host_plans: Any = weakref.WeakKeyDictionary()  # Pruned -> (sources, sinks)
        self._run_lock = self.host_resources.step_lock  # re-entrant; see `StepLock`
        self._cells_stamp: Any = None  # see `state_cells.gather`
        # where the steps it compiles are kept for the next process (see `persistent_cache`)
        self._persistent_cache = persistent_cache.Scope(
            persistent_cache.resolve(self._config.compilation_cache)
        )

    @property
    def graph(self) -> Graph:
        return self._graph

    @property
    def config(self) -> SessionConfig:
        return self._config

    @property
    def compile_count(self) -> int:
        """How many XLA programs this session has traced and compiled so far."""
        steps = self._compiled.values()
        live = sum(step.compiles for step in steps if isinstance(step, CompiledStep))
        return self._retired_compiles + live

    # -- running -------------------------------------------------------------------------------
    @with_x64  # sluice's float64/int64 without the user's jax_enable_x64 (see `ir.x64`)
    def run(
        self,
        fetches: Any,
        feed_dict: dict | None = None,
        options: Any = None,
        run_metadata: RunMetadata | None = None,
    ) -> Any:
        """Computes `fetches` (a Tensor, Operation, name, or a nested list/tuple/dict/namedtuple of
        them); returns the same structure with NumPy values (None for Operations). Under
        `compare_engines`, it runs in two engines and returns the interpreter's values."""
        if self._config.keras_state:
            return self._run_bound(fetches, feed_dict, options, run_metadata)
        if _comparisons:
            return self._run_compared(_comparisons[-1], fetches, feed_dict, options, run_metadata)
        return self._run_once(fetches, feed_dict, options, run_metadata)

    def _run_bound(
        self,
        fetches: Any,
        feed_dict: dict | None,
        options: Any,
        run_metadata: RunMetadata | None,
    ) -> Any:
        """`run` of a bound session: the state cells of the graph are moved into this session's
        table first, and those it gave a first value live here afterwards."""
        while True:
            with self._run_lock:
                busy = self._gather_cells()
                if busy is None:
                    try:
                        if _comparisons:
                            comparison = _comparisons[-1]
                            args = (fetches, feed_dict, options, run_metadata)
                            return self._run_compared(comparison, *args)
                        return self._run_once(fetches, feed_dict, options, run_metadata)
                    finally:
                        state_cells.adopt(self._graph, self._state.variables, self._run_lock)
            with busy:  # another session's step holds a value we need: wait, holding nothing
                pass

    def _gather_cells(self) -> Any:
        """Moves the graph's cells into this session's table (see `state_cells.gather`);
        returns the lock of a busy session a value must come from, or None."""
        self._cells_stamp, busy = state_cells.gather(
            self._graph, self._state.variables, self._run_lock, self._cells_stamp
        )
        return busy

    def _run_compared(
        self,
        comparison: EngineComparison,
        fetches: Any,
        feed_dict: dict | None,
        options: Any,
        run_metadata: RunMetadata | None,
    ) -> Any:
        """`run` under `compare_engines`: the comparison's engine on a copy of the state, then
        the interpreter on the state itself; the caller gets the interpreter's outcome."""
        args = (fetches, feed_dict, options)
        candidate = self._run_in_engine(comparison.engine, self._state.copy(), args)
        reference = self._run_in_engine("interpreted", self._state, args)
        comparison.compare(candidate, reference)
        if run_metadata is not None:
            for field in dataclasses.fields(RunMetadata):
                setattr(run_metadata, field.name, getattr(reference.metadata, field.name))
        return reference.result()

    def _run_in_engine(self, engine: str, state: SessionState, args: tuple) -> EngineRun:
        fetches, feed_dict, options = args
        saved_config, saved_state = self._config, self._state
        self._config = dataclasses.replace(saved_config, engine=engine)
        self._state = state
        meta = RunMetadata()
        value, error = None, None
        try:
            value = self._run_once(fetches, feed_dict, options, meta)
        except Exception as err:  # noqa: BLE001 (compared with the other engine's, raised again)
            error = err
        finally:
            self._config, self._state = saved_config, saved_state
        return EngineRun(value, error, meta, state.variables, state.random_counts)

    def _run_once(
        self,
        fetches: Any,
        feed_dict: dict | None,
        options: Any,
        run_metadata: RunMetadata | None,
    ) -> Any:
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        leaves, treedef = jax.tree_util.tree_flatten(fetches, is_leaf=_is_fetch_leaf)
        elements = [self._as_fetch(x) for x in leaves]
        fetch_tensors = list(dict.fromkeys(e for e in elements if isinstance(e, Tensor)))
        targets = list(dict.fromkeys(e for e in elements if isinstance(e, Operation)))
        feed_tensors, feed_values = self._convert_feeds(feed_dict or {})
        plans_before = self._plans_built
        fetch_tensors, targets, feed_tensors, feed_values, sinks = self._run_host_sources(
            fetch_tensors, targets, feed_tensors, feed_values
        )
        with self._run_lock, self._persistent_cache:  # host sources and sinks run outside it
            try:
                values = self._run_step(
                    fetch_tensors,
                    targets,
                    feed_tensors,
                    feed_values,
                    options,
                    run_metadata,
                    plans_before,
                )
            except jax.errors.JaxRuntimeError as err:
                if not str(err).startswith("RESOURCE_EXHAUSTED"):
                    raise
                raise errors.ResourceExhaustedError(  # TF1's OOM error; no variable changed
                    None, None, f"OOM when running the step: {err}"
                ) from err
        by_tensor = {}
        for i, (t, v) in enumerate(zip(fetch_tensors, values)):
            if v is DEAD:
                raise errors.InvalidArgumentError(  # TF1 says "Retval[i] does not have value"
                    None,
                    t.op,
                    f"Fetched tensor {t.name} is dead (Retval[{i}] does not have value): it lies "
                    "on a branch of a cond that was not taken, so it has no value in this run.",
                )
            if v is None:
                raise errors.InternalError(
                    None, t.op, f"Fetched tensor {t.name} was never computed."
                )
            by_tensor[t] = string_values.fetched(v) if t.dtype == dtypes.string else _to_numpy(v)
            converter = registry.fetch_converter_for(t)
            if converter is not None:  # a summary's payload becomes its serialized proto
                convert, source = converter
                by_tensor[t] = convert(source, by_tensor[t])
        for sink in sinks:
            host_ops.host_sink(sink.type)(self, sink, [by_tensor[t] for t in sink.inputs])
        results = [by_tensor[e] if isinstance(e, Tensor) else None for e in elements]
        return jax.tree_util.tree_unflatten(treedef, results)

    def _run_host_sources(
        self, fetch_tensors: list, targets: list, feed_tensors: list, feed_values: list
    ) -> tuple:
        """Makes the values of the host sources the fetches need (a dataset's next element, a
        queue's head) and adds them to the feeds; a host sink among the targets becomes a fetch
        of its inputs, handed to it after the step (see `ops.host_ops`)."""
        with self._run_lock:
            pruned = self._prune(fetch_tensors, targets, feed_tensors)
        host_plan = self._host_plans.get(pruned)
        if host_plan is None:
            host_plan = self._host_plans[pruned] = _host_plan(pruned, targets)
        sources, sinks = host_plan
        if not sources and not sinks:
            return fetch_tensors, targets, feed_tensors, feed_values, []
        if sinks:
            targets = [t for t in targets if t not in sinks]
            targets += [c for sink in sinks for c in sink.control_inputs if c not in targets]
            fetch_tensors = list(
                dict.fromkeys(fetch_tensors + [t for sink in sinks for t in sink.inputs])
            )
        feed_tensors, feed_values = list(feed_tensors), list(feed_values)
        for op in sources:
            values = host_ops.host_source(op.type)(self, op)
            feed_tensors += op.outputs
            feed_values += [convert_feed_value(t, v) for t, v in zip(op.outputs, values)]
        return fetch_tensors, targets, feed_tensors, feed_values, sinks

    def _run_step(
        self,
        fetch_tensors: list,
        targets: list,
        feed_tensors: list,
        feed_values: list,
        options: Any,
        run_metadata: RunMetadata | None,
        plans_before: int,
    ) -> list:
        """Prunes, places and runs one step on an engine: a value per fetch."""
        compiles_before = self.compile_count
        pruned = self._prune(fetch_tensors, targets, feed_tensors)
        partitions = self._partitions(pruned)
        timeout = int(
            getattr(options, "timeout_in_ms", 0) or 0 or self._config.operation_timeout_in_ms
        )
        traced = bool(getattr(options, "trace_level", 0)) and run_metadata is not None
        compiled = False  # a compiled step waits for its own program (`CompiledStep.run`)
        if len(partitions) > 1 and self._shardings is not None:
            raise errors.UnimplementedError(
                None,
                None,
                f"This graph is placed on {len(partitions)} devices by its device requests, and "
                f"the session runs under the distribution {self._config.distribution}: use one or "
                "the other (a distribution lays out every op itself).",
            )
        if timeout and self._shardings is not None:
            raise errors.UnimplementedError(
                None,
                None,
                "RunOptions(timeout_in_ms=...) is not supported under a distribution:"
                " its steps run as one XLA program over the mesh, which cannot be interrupted.",
            )
        if traced and len(partitions) == 1 and self._shardings is None:
            values = self._run_traced(pruned, partitions[0], feed_values, timeout, run_metadata)
        elif len(partitions) > 1 or timeout:
            if traced:
                _logger.warning(
                    "sluice: RunOptions.trace_level records ops on one device only; "
                    "this graph runs on %d devices and is not traced.",
                    len(partitions),
                )
            values = self._run_partitioned(pruned, partitions, feed_values, timeout, run_metadata)
        else:
            with _on_device(partitions[0].device):
                values = self._run_compiled(pruned, feed_values)
                compiled = values is not None
                if compiled:
                    if run_metadata is not None:
                        run_metadata.engine = "compiled"
                        run_metadata.graph_passes = list(self._compiled[pruned].applied_passes)
                else:
                    values = self._run_interpreted(pruned, feed_values, run_metadata)
        if not compiled:
            self._wait_for(values)
        if run_metadata is not None:
            if len(partitions) == 1 and not timeout:
                part = partitions[0]  # one device: one partition, nothing sent
                run_metadata.partitions = [
                    PartitionStats(
                        part.device.name,
                        nodes=len(part.ops),
                        ops=len(part.ops),
                        nodes_run=run_metadata.nodes_run,
                        stack_stats=run_metadata.stack_stats,
                    )
                ]
            if getattr(options, "output_partition_graphs", False):
                run_metadata.partition_graphs = [
                    {"device": p.device.name, "ops": [op.name for op in p.ops]} for p in partitions
                ]
            run_metadata.new_plan = self._plans_built != plans_before
            run_metadata.compiles = self.compile_count - compiles_before
            run_metadata.nodes_in_plan = len(pruned.ops)
        return values

    def _wait_for(self, values: list) -> None:
        """Returns when an interpreted run's work is done, as TF1's `run` does: its kernels
        dispatch to JAX asynchronously, so the fetched values and the variables it wrote may
        still be computing (a run of a train op alone would return at once)."""
        state = self._state
        written, state.written = state.written, set()
        variables = state.variables
        jax.block_until_ready((values, [variables[h] for h in written if h in variables]))

    def _run_interpreted(
        self, pruned: Pruned, feed_values: list, run_metadata: RunMetadata | None
    ) -> list:
        self._state.stack_memory = self._new_stack_memory()
        plan = self._plans.get(pruned)
        if plan is None:
            plan = self._plans[pruned] = Plan(pruned)
        executor = Executor(plan, self._state)
        feeds = [_interpreter_feed(v) for v in feed_values]
        if self._shardings is None:
            values = executor.run(feeds)
        else:
            values = self._run_gathered(executor, pruned, feeds)
        if run_metadata is not None:
            run_metadata.engine = "interpreted"
            run_metadata.nodes_run = executor.nodes_run
            run_metadata.stack_stats = self._state.stack_memory.stats
        return values

    def _run_traced(
        self,
        pruned: Pruned,
        part: Partition,
        feed_values: list,
        timeout_ms: int,
        run_metadata: RunMetadata,
    ) -> list:
        """Runs interpreted, op by op (no fused groups), timing each op to the moment its
        results are ready, into `run_metadata.step_stats`."""
        if timeout_ms:
            _logger.warning("sluice: a traced run ignores its timeout_in_ms.")
        self._state.stack_memory = self._new_stack_memory()
        key = ("traced", pruned)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = Plan(pruned, fuse=False)
        trace: list = []
        executor = Executor(plan, self._state, trace=trace)
        offset = time.time_ns() - time.perf_counter_ns()
        with _on_device(part.device):
            values = executor.run([_interpreter_feed(v) for v in feed_values])
        run_metadata.engine = "interpreted"
        run_metadata.nodes_run = executor.nodes_run
        run_metadata.stack_stats = self._state.stack_memory.stats
        run_metadata.step_stats = StepStats([device_step_stats(part.device.name, trace, offset)])
        return values

    def _run_gathered(self, executor: Executor, pruned: Pruned, feeds: list) -> list:
        """An interpreted run under a distribution: the variables it uses gathered whole onto
        this process's first device (in one order on every process: gathering is a collective),
        run there, then placed back by the distribution. Feeds are not split, so any batch size
        runs (Saver's file name, a byte vector, is fed this way too)."""
        state = self._state
        handles = sorted(
            {op.get_attr("shared_name") for op in pruned.ops if op.type == "VarHandleOp"}
        )
        for h in handles:
            if h in state.variables:
                state.variables[h] = to_local(state.variables[h])
        state.random_counts.update({k: int(np.asarray(c)) for k, c in state.random_counts.items()})
        try:
            return executor.run(feeds)
        finally:
            for h in handles:
                if h in state.variables:
                    state.variables[h] = self._shardings.place_variable(h, state.variables[h])

    def list_devices(self) -> list[DeviceAttributes]:
        """The devices this session can place ops on, by TF1 full name."""
        return [
            DeviceAttributes(d.name, d.device_type, d.memory_limit)
            for d in devices_lib.local_devices()
        ]

    def _partitions(self, pruned: Pruned) -> list[Partition]:
        """The pruned graph placed and split by device (cached with it)."""
        parts = self._placed.get(pruned)
        if parts is None:
            config = self._config
            fed = set(pruned.feeds)
            placement = place(
                pruned.ops, fed, config.allow_soft_placement, config.log_device_placement
            )
            parts = partition(list(pruned.ops), placement, fed, pruned.fed_ops)
            if not parts:  # nothing to run but feeds: the default device "runs" it
                parts = [Partition(devices_lib.default_device(), [], [], [], [])]
            self._placed[pruned] = parts
        return parts

    def _run_partitioned(
        self,
        pruned: Pruned,
        partitions: list[Partition],
        feed_values: list,
        timeout_ms: int,
        run_metadata: RunMetadata | None,
    ) -> list:
        """Runs a graph split across devices (or any graph under a timeout): one interpreted
        executor per partition, all at once (see `interpreter.partitioned`)."""
        if len(partitions) > 1 and self._config.engine == "compiled":
            raise errors.UnimplementedError(
                None,
                None,
                "The compiled engine cannot run this graph: it is placed on "
                f"{len(partitions)} devices ({', '.join(p.device.name for p in partitions)}), "
                "and the compiled engine lowers a step onto one device. Use engine='auto' or "
                "'interpreted' to run it partitioned, one executor per device.",
            )
        plans = self._partition_plans.get(pruned)
        if plans is None and len(partitions) > 1:
            _logger.info(
                "sluice: a graph placed on %d devices runs as one executor per device (%s)",
                len(partitions),
                "its fused regions compiled" if self._config.engine == "auto" else "interpreted",
            )
        if plans is None:
            placement = {op: part.device for part in partitions for op in part.ops}
            if len(partitions) == 1:
                plans = [Plan(pruned)]
            else:  # under "auto", each partition's fused regions run as compiled programs
                regions = self._config.engine == "auto"
                plans = [
                    Plan(pruned, partition=p, placement=placement, compile_regions=regions)
                    for p in partitions
                ]
            self._partition_plans[pruned] = plans
        contexts, stats = [], []
        for part, plan in zip(partitions, plans):
            ctx = _PartitionState(self._state, self._new_stack_memory(part.device))
            contexts.append(ctx)
            stats.append(
                PartitionStats(
                    part.device.name,
                    nodes=len(plan.nodes) + len(plan.remote),
                    ops=len(part.ops),
                    sends=len(part.sends),
                    recvs=len(part.recvs),
                    control_loops=len(part.control_loops),
                )
            )
        # each partition copies the fed arrays it reads to its own device (`feeds_on`)
        feeds = list(feed_values)
        values = run_partitions(
            plans,
            contexts,
            [p.device for p in partitions],
            stats,
            feeds,
            timeout_ms / 1000 if timeout_ms else None,
            threads=self._config.partition_threads,
        )
        for part_stats, ctx in zip(stats, contexts):
            part_stats.stack_stats = ctx.stack_memory.stats
        if run_metadata is not None:
            run_metadata.engine = "interpreted"
            run_metadata.partitions = stats
            run_metadata.nodes_run = sum(s.nodes_run for s in stats)
            run_metadata.stack_stats = _sum_stack_stats([c.stack_memory.stats for c in contexts])
        return values

    def _as_fetch(self, x: Any) -> Tensor | Operation:
        if x is None:
            # As TF1; most often a gradient that is None because nothing connects y to x.
            raise TypeError(
                "Fetch argument None has invalid type <class 'NoneType'> (a "
                "gradient is None when y does not depend on x differentiably)."
            )
        try:
            element = self._graph.as_graph_element(x)
        except (TypeError, KeyError) as err:
            raise TypeError(
                f"Fetch argument {x!r} cannot be interpreted as a Tensor: {err}"
            ) from None
        except ValueError as err:
            raise ValueError(f"Fetch argument {x!r} cannot be fetched: {err}") from None
        if isinstance(element, (Tensor, Operation)):
            _require_fetchable(element)
        return element

    def _convert_feeds(self, feed_dict: dict) -> tuple[list[Tensor], list[Any]]:
        """The fed tensors and their values, as TF1 reads a feed_dict (see `feeds`): nested keys
        fed element-wise, each value converted to its tensor's dtype. A tensor fed twice (by
        name and as a Tensor) takes the last value."""
        fed: dict[Tensor, Any] = {}
        for key, value in flatten_feed_dict(feed_dict):
            try:
                t = self._graph.as_graph_element(key)
            except (TypeError, KeyError, ValueError) as err:
                raise TypeError(
                    f"Cannot interpret feed_dict key {key!r} as a Tensor: {err}"
                ) from None
            if not isinstance(t, Tensor):
                raise TypeError(
                    f"The feed_dict key {key!r} is an Operation; only Tensors can be fed."
                )
            _require_feedable(t)
            fed[t] = convert_feed_value(t, value)
        return list(fed), list(fed.values())

    def _run_compiled(self, pruned: Pruned, feed_values: list) -> list | None:
        """Runs `pruned` compiled; None if it must run interpreted (engine or lowering says so)."""
        engine = self._config.engine
        if engine == "interpreted":
            return None
        step = self._compiled.get(pruned)
        if step is None:
            try:
                step = CompiledStep(
                    pruned,
                    self._config.graph_passes,
                    self._config.roll_repeats,
                    self._shardings,
                    self.host_resources,
                )
            except NotLowerable as err:
                step = _Unlowerable(str(err), err.quiet)
            self._compiled[pruned] = step
        if isinstance(step, CompiledStep):
            if self._shardings is not None:
                feed_values = [
                    self._shardings.prepare_feed(t, v) for t, v in zip(pruned.feeds, feed_values)
                ]
            try:
                return step.run(self._state, feed_values)
            except KernelTraceError as err:  # the user's error, as the interpreter raises it
                raise errors.InvalidArgumentError(err.node_def, err.op, err.message) from None
            except NotLowerable as err:
                # the documented reasons only: anything else is a bug, raised as it is
                step = self._compiled[pruned] = _Unlowerable(str(err))
        if engine == "compiled" and not step.quiet:
            raise errors.UnimplementedError(
                None, None, f"The compiled engine cannot run this graph: {step.reason}"
            )
        if not step.logged:
            step.logged = True
            _logger.warning(
                "sluice: running a graph interpreted because the compiler cannot lower it: %s",
                step.reason,
            )
        return None

    def _prune(
        self, fetches: list[Tensor], targets: list[Operation], feeds: list[Tensor]
    ) -> Pruned:
        """The cached pruned graph of this signature. It holds only the ops the fetches need,
        so ops added to the graph later leave it valid; only a change to an existing op (see
        `Graph.mutation_version`) drops it with its compiled step and interpreter plan. Each
        engine builds its own form of it only when it runs it."""
        graph = self._graph
        if graph.mutation_version != self._plans_version:
            self._retired_compiles = self.compile_count
            self._pruned.clear()
            self._plans.clear()
            self._compiled.clear()
            self._placed.clear()
            self._partition_plans.clear()
            self._plans_version = graph.mutation_version
        key = (tuple(fetches), tuple(targets), tuple(feeds))
        pruned = self._pruned.get(key)
        if pruned is None:
            graph.mark_planned()
            pruned = prune(fetches, targets, feeds)
            if self._config.check_graph:  # SessionConfig(check_graph=True): before it first runs
                graph_checks.check_before_run(graph, pruned.ops)
            self._pruned[key] = pruned
            self._plans_built += 1
        return pruned

    def _new_stack_memory(self, device: Any = None) -> StackMemory:
        """The stack accounting of one run on `device` (a LocalDevice; the default one)."""
        config = self._config
        limit, external = config.device_memory_limit, None
        jax_device = (device or devices_lib.default_device()).jax_device
        if limit is None:
            stats = jax_device.memory_stats()
            if stats and "bytes_limit" in stats:
                limit = stats["bytes_limit"]
                external = lambda: jax_device.memory_stats().get(  # noqa: E731
                    "bytes_in_use", 0
                )
        return StackMemory(limit, config.swap_threshold_bytes, config.swap_occupancy, external)

    # -- variables -----------------------------------------------------------------------------
    @with_x64
    def _load_variable(self, variable: Any, value: Any) -> None:
        if variable.graph is not self._graph and state_cells.cell_of(variable) is not None:
            variable = variable.graph_variable(self._graph)  # a Keras weight's mirror here
        array = np.asarray(value, dtype=variable.dtype)
        if not variable.shape.is_compatible_with(array.shape):
            raise ValueError(
                f"Cannot load a value of shape {array.shape} into {variable.name}"
                f" of shape {variable.shape}."
            )
        handle = variable.op.get_attr("shared_name")
        if self._config.keras_state:
            with self._run_lock:
                while (busy := self._gather_cells()) is not None:
                    with self._run_lock.set_aside(), busy:
                        pass
        if self._shardings is not None:
            self._state.variables[handle] = self._shardings.place_variable(handle, array)
        else:
            self._state.variables[handle] = jnp.asarray(array)
        if self._config.keras_state:
            state_cells.adopt(self._graph, self._state.variables, self._run_lock)

    def random_counts(self) -> dict[str, int]:
        """How many numbers each random op has drawn (what a checkpoint saves with the
        variables, so a restored run draws the same numbers next)."""
        return {name: int(np.asarray(c)) for name, c in self._state.random_counts.items()}

    def restore_random_counts(self, counts: dict[str, int]) -> None:
        self._state.random_counts.update(counts)

    # -- lifetime ------------------------------------------------------------------------------
    def close(self) -> None:
        self._closed = True
        self.host_resources.close_all()  # stops iterator threads, wakes blocked queue users
        self._state = SessionState()
        self._pruned.clear()
        self._plans.clear()
        self._compiled.clear()
        self._placed.clear()
        self._partition_plans.clear()

    def as_default(self):
        return default_session(self)

    def __enter__(self) -> "Session":
        graph_cm = self._graph.as_default()
        session_cm = self.as_default()
        graph_cm.__enter__()
        session_cm.__enter__()
        self._context_managers.append((graph_cm, session_cm))
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        graph_cm, session_cm = self._context_managers.pop()
        session_cm.__exit__(exc_type, exc, tb)
        graph_cm.__exit__(exc_type, exc, tb)
        self.close()


@export("InteractiveSession")
class InteractiveSession(Session):
    """A Session that installs itself as the default session until closed (for notebooks)."""

    def __init__(
        self, target: str = "", graph: Graph | None = None, config: SessionConfig | None = None
    ):
        super().__init__(target, graph, config)
        self._default = self.as_default()
        self._default.__enter__()

    def close(self) -> None:
        if not self._closed:
            super().close()
            self._default.__exit__(None, None, None)


def _host_plan(pruned: Pruned, targets: list) -> tuple[list, list]:
    """The host sources and sinks among a run's ops (see `ops.host_ops`)."""
    sources = [op for op in pruned.ops if host_ops.host_source(op.type) is not None]
    sinks = [
        op
        for op in pruned.ops
        if host_ops.host_sink(op.type) is not None and not host_ops.runs_in_step(op)
    ]
    for op in sources + sinks:
        if op.control_flow_context is not None:
            raise errors.UnimplementedError(
                None,
                op,
                f"{op.type} op {op.name!r} is inside a cond or while loop; the session"
                " runs it on the host around a step, so build it outside control flow.",
            )
    for op in sinks:
        if op not in targets:
            raise errors.UnimplementedError(
                None,
                op,
                f"{op.type} op {op.name!r} runs on the host after a step, so it must "
                "be a target of `Session.run` itself, not a control dependency of another op.",
            )
    return sources, sinks


def _on_device(device: devices_lib.LocalDevice) -> Any:
    """Computes on `device` for the block (nothing to do on the default device)."""
    if device is devices_lib.default_device():
        return contextlib.nullcontext()
    return jax.default_device(device.jax_device)


def _is_fetch_leaf(x: Any) -> bool:
    return x is None or isinstance(x, (Tensor, Operation, str)) or hasattr(x, "_as_graph_element")


def _require_fetchable(element: Tensor | Operation) -> None:
    """TF1's refusal of a fetch the graph marks as not fetchable (`Graph.is_fetchable`)."""
    if element.graph.is_fetchable(element):
        return
    op = element if isinstance(element, Operation) else element.op
    raise ValueError(
        f"Operation {op.name!r} has been marked as not fetchable{_inside_loop(op)}. Return the "
        "value from the loop as a loop variable, and fetch the loop's result instead."
    )


def _require_feedable(t: Tensor) -> None:
    """TF1's refusal of a feed the graph marks as not feedable (`Graph.is_feedable`)."""
    if t.graph.is_feedable(t):
        return
    raise ValueError(
        f"Tensor {t.name} may not be fed{_inside_loop(t.op)}. Feed a tensor outside the loop "
        "(a loop variable's initial value) instead."
    )


def _inside_loop(op: Operation) -> str:
    ctx = op.control_flow_context
    loop = None if ctx is None else ctx.output_while_context(op)
    if loop is None:
        return ""
    return f": it is inside the while loop {loop.name!r}, where it has a value per iteration"


def _interpreter_feed(value: Any) -> Any:
    # small values (loop bounds, flags) stay on the host for the host kernels; the rest go over once
    if isinstance(value, np.ndarray) and value.size > HOST_MAX_ELEMENTS and value.dtype.kind != "O":
        return jax.device_put(value)
    return value


def _to_numpy(value: Any) -> Any:
    if isinstance(value, (str, bytes)):
        return value
    return np.asarray(value)
