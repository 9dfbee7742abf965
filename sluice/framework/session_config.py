"""`SessionConfig`: how a session runs its graphs. Its own module so that both the session and
TF1's `ConfigProto` (which maps onto it, see `config_protos`) import it, and neither imports the
other."""

from __future__ import annotations

import dataclasses
from typing import Any

from sluice._export import export
from sluice.framework.compiler import loop_passes, persistent_cache
from sluice.framework.control_flow import checks


@export("SessionConfig")
@dataclasses.dataclass(frozen=True)
class SessionConfig:
    """How a session runs its graphs.

    Args:
      engine: "compiled" lowers each pruned graph to one `jax.jit` function; "interpreted" runs
        the whitepaper's executor node by node; "auto" (the default) compiles, and runs
        interpreted (saying why, once, in a log line) a graph the compiler cannot lower.
      device_memory_limit: bytes of device memory the swap policy assumes (default: what the
        device reports, or no limit when it reports nothing, as a CPU does).
      swap_threshold_bytes: stack entries this size or smaller are never swapped.
      swap_occupancy: swap while device memory in use is above this fraction of the limit.
      graph_passes: the loop passes the compiled engine applies before lowering, some of
        `sluice.framework.compiler.loop_passes.PASSES`; by default `batch_weight_gradient`,
        `transpose_invariant_weight`, `packed_recurrent_matmul`, `fused_lstm_cell`,
        `fused_lstm_cell_grad` and `unwritten_loop_buffers` (`loop_passes.DEFAULT_PASSES`),
        `()` turns them off. They
        never change the graph, only how a loop is lowered (see README, "How a graph runs",
        and docs/lstm_performance.md).
      roll_repeats: the compiled engine lowers the copies of one computation that a Python loop
        built (an unrolled RNN and its gradient) as one `lax.scan`, so XLA compiles them once
        (see `sluice.framework.compiler.repeats`); False lowers every copy on its own.
      allow_soft_placement: an op whose requested device does not exist, or cannot run it, is
        placed on one that can (the requested type's lowest device, else the default one)
        instead of failing with InvalidArgumentError.
      log_device_placement: write every op's name, type and device to stderr when a graph is
        placed (`name: (Type): /job:localhost/replica:0/task:0/device:CPU:2`), as TF1 does.
      partition_threads: a graph placed on several devices runs one executor per device, each
        begun on its own thread (the default, as TensorFlow runs them; a thread with nothing to
        do goes on with another partition's work, so a value crossing devices costs no thread
        switch); False has them take turns on the calling thread while JAX computes on the
        devices asynchronously, which lets a blocking kernel hold up every partition (see
        `sluice.framework.interpreter.partitioned`).
      distribution: a `sl.distribution` object (`DataParallel`, `ModelParallel`): compiled
        steps run over its device mesh, batches fed split over the batch axis and variables laid
        out by it (see `sluice.framework.compiler.sharding`). A graph the compiler cannot lower
        (and Saver's file ops) runs interpreted on each process's first device, on variables
        gathered there and placed back afterwards: correct, not parallel.
      operation_timeout_in_ms: the deadline of every run whose `RunOptions` sets none (TF1's
        `ConfigProto.operation_timeout_in_ms`); 0 is no deadline.
      check_graph: before a graph first runs (per set of fetches, and again after its ops
        change), check the invariants its builders keep: every input's producer is in the
        graph, dtypes are what each op's inference rule gives, and the Switch/Merge/Enter/Exit
        wiring and contexts of every cond and loop are as `cond` and `while_loop` build them
        (see `sluice.framework.control_flow.checks`). A violation is an InternalError at the op,
        naming what was expected and found. A debugging aid, as JAX's `jax_enable_checks`; None
        (the default) takes it from the environment variable `SLUICE_CHECK_GRAPH=1`, read once.
      keras_state: the session is *bound*: before each run it moves into its table the values
        of the state cells its graph mirrors (Keras weights shared by several graphs, see
        `sluice.framework.state_cells`). Keras's runtime sessions set it; a TF1 user's session
        keeps TF1's rule that a variable's value belongs to its session.
      compilation_cache: where compiled steps are kept between processes, so a script run again
        on this machine loads its steps instead of compiling them (see
        `sluice.framework.compiler.persistent_cache`). None (the default) reads the environment
        variable `SLUICE_COMPILATION_CACHE` ("0"/"off"/"false"/"no": no cache; a folder: that
        folder), else uses the user's cache folder (`$XDG_CACHE_HOME/sluice/xla` or
        `~/.cache/sluice/xla`); False turns it off, True is the default folder, a str or path
        moves it. A damaged or foreign entry is recompiled, never loaded; a folder that cannot
        be written is reported once in a log line. A user who set JAX's own cache
        (`jax_compilation_cache_dir`, or turned it off with `jax_enable_compilation_cache`)
        keeps it: sluice's steps then follow JAX's settings and this field does nothing.
    """

    engine: str = "auto"
    device_memory_limit: int | None = None
    swap_threshold_bytes: int = 2048
    swap_occupancy: float = 0.7
    graph_passes: tuple = loop_passes.DEFAULT_PASSES
    roll_repeats: bool = True
    allow_soft_placement: bool = False
    log_device_placement: bool = False
    partition_threads: bool = True
    distribution: Any = None
    operation_timeout_in_ms: int = 0
    check_graph: bool | None = None
    keras_state: bool = False
    compilation_cache: Any = None

    def __post_init__(self):
        if self.engine not in ("auto", "compiled", "interpreted"):
            raise ValueError(
                f"Unknown engine {self.engine!r}; expected 'auto', 'compiled' or 'interpreted'."
            )
        unknown = set(self.graph_passes) - set(loop_passes.PASSES)
        if unknown:
            raise ValueError(
                f"Unknown graph passes {sorted(unknown)}; expected some of {loop_passes.PASSES}."
            )
        object.__setattr__(self, "graph_passes", tuple(self.graph_passes))
        if self.check_graph is None:
            object.__setattr__(self, "check_graph", checks.default_enabled())
        persistent_cache.validate(self.compilation_cache)
        d = self.distribution
        if d is not None and not all(
            hasattr(d, m) for m in ("data_sharding", "variable_sharding", "replicated")
        ):
            raise TypeError(
                "distribution must be a sl.distribution object (DataParallel, "
                f"ModelParallel), got {d!r}."
            )
