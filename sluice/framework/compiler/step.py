"""The compiled engine: one pruned graph signature becomes one `jax.jit` function.

`CompiledStep(pruned)` lowers the ops a run needs (see `prune`, `lowering`) into
    step(written_variables, read_variables, random_counts, feeds)
        -> (fetched values, their liveness, new written variables, new random counts, checks)
and jits it once; JAX caches the executable per feed shapes and dtypes, so a new batch of the
same shape never recompiles. Variables the step assigns are donated, so XLA updates them in
place; variables it only reads are passed without donation. Random ops draw from keys derived
from per-op counters that are part of the state, exactly as in the interpreted engine.

Under a distribution (`shardings`), the same program runs over a device mesh: inputs arrive
placed (`sharding`), written variables keep their layout and fetches come back replicated.

A plan with checking ops (`registry.Check`) also returns each check's (failed, detail); when one
failed, the step keeps every variable as it was (as TF1 runs no update that depends on a failed
op) and `run` raises `InvalidArgumentError` naming the first failed op in graph order. A plan
without checks returns None there: its program is unchanged.
"""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from sluice.framework.compiler import loop_passes
from sluice.framework.compiler.frame import Frame, NotLowerable
from sluice.framework.compiler.frames import build_frames
from sluice.framework.compiler.lowering import Lowering
from sluice.framework.compiler.sharding import StepShardings, place
from sluice.framework.compiler.trace_context import TraceContext
from sluice.framework.control_flow.structure import is_assign, variable_name_of
from sluice.framework.ir import dtypes, errors, registry
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.string_values import on_strings
from sluice.framework.prune import DEAD, Pruned


class CompiledStep:
    """The ops of one run signature lowered to one jitted function."""

    def __init__(
        self,
        pruned: Pruned,
        passes: tuple = (),
        roll_repeats: bool = True,
        shardings: StepShardings | None = None,
        host_resources: Any = None,
    ):
        ops, fetches, feeds = list(pruned.ops), list(pruned.fetches), list(pruned.feeds)
        # the session's queues, for an enqueue inside a loop (a step belongs to one session)
        self.host_resources = host_resources
        self.root = frames_of(pruned, roll_repeats)
        self.fetches = fetches
        self.feeds = feeds
        if shardings is not None or jax.default_backend() != "cpu":
            # sluice's native kernels run on one CPU device only (see `native`)
            passes = tuple(p for p in passes if p not in loop_passes.NATIVE_PASSES)
        self.passes = passes
        self.applied_passes: list[tuple[str, str]] = []  # filled while tracing
        self.handles = {op.get_attr("shared_name") for op in ops if op.type == "VarHandleOp"}
        self.written = {variable_name_of(op.inputs[0]) for op in ops if is_assign(op)}
        self.random_ops = sorted(op.name for op in ops if op.op_def.stateful and "seed" in op.attrs)
        self.checking = [op for op in ops if op.op_def.check is not None]
        self.shardings = shardings  # under a distribution: where written and fetched values go
        self.compiles = 0  # traces of `_step`: each is one XLA compile (a new feed signature)
        in_shardings = None  # the inputs' own
        if shardings is not None:  # feeds: NumPy copied onto the mesh by the call itself
            in_shardings = (None, None, None, [shardings.feed_sharding(t) for t in feeds])
        self._jitted = jax.jit(self._step, donate_argnums=(0,), in_shardings=in_shardings)

    def _step(self, written: dict, read: dict, counts: dict, feed_values: list) -> tuple:
        self.compiles += 1
        ctx = TraceContext({**read, **written}, dict(counts))
        ctx.host_resources = self.host_resources
        env, lowering = evaluate(self.root, self.feeds, feed_values, ctx, self.passes)
        self.applied_passes = list(lowering.applied)
        values, lives, static_lives = [], [], []
        for t in self.fetches:
            value, live = env[t]
            values.append(value)
            # most fetches are live whatever the feeds: knowing it while tracing saves a device sync
            static_lives.append(live if isinstance(live, bool) else None)
            if not isinstance(live, bool):
                lives.append(live)
        self._static_lives = static_lives
        # sorted: every process of a multi-process run must trace the same program, op for op
        new_written = {
            h: ctx.variables[h] for h in sorted(self.written | ctx.written) if h in ctx.variables
        }
        new_counts = {name: ctx.random_counts.get(name, counts.get(name)) for name in counts}
        if self.shardings is not None:
            values, new_written = self._constrained(values, new_written)
        checks = None
        if self.checking:
            passed = (False, 0)
            found = [lowering.checks.get(op.name, passed) for op in self.checking]
            checks = (
                jnp.stack([jnp.asarray(f, jnp.bool_) for f, _ in found]),
                jnp.stack([jnp.asarray(d, jnp.int64) for _, d in found]),
            )
            new_written = _unless_failed(checks[0], new_written, {**read, **written})
        return values, lives, new_written, new_counts, checks

    def _constrained(self, values: list, new_written: dict) -> tuple[list, dict]:
        """Fetches replicated (every process reads them), variables laid out as placed."""
        shardings = self.shardings
        values = [shardings.constrain_fetch(v) if isinstance(v, jax.Array) else v for v in values]
        new_written = {h: shardings.constrain_variable(h, v) for h, v in new_written.items()}
        return values, new_written

    def run(self, state: Any, feed_values: list) -> list:
        variables = state.variables
        written = {h: variables[h] for h in self.written if h in variables}
        read = {h: variables[h] for h in self.handles - self.written if h in variables}
        counts = {name: _as_count(state.random_counts.get(name, 0)) for name in self.random_ops}
        if self.shardings is not None:  # one program over the mesh: its inputs live there
            counts = {name: place(c, self.shardings.replicated) for name, c in counts.items()}
        for h in written:  # donated buffers: the state must not keep the old ones
            del variables[h]
        try:
            values, lives, new_written, new_counts, checks = self._jitted(
                written, read, counts, feed_values
            )
        except BaseException:
            # a failed trace donated nothing: give the state its buffers back
            variables.update(
                {
                    h: v
                    for h, v in written.items()
                    if not (isinstance(v, jax.Array) and v.is_deleted())
                }
            )
            raise
        variables.update(new_written)
        state.random_counts.update(new_counts)
        # TF1's `run` returns when the step has run; JAX returns before its program has, and a
        # run that fetches no value (a train op alone) would not wait at all: wait for it all
        jax.block_until_ready((values, new_written, new_counts))
        if checks is not None:
            self._raise_failed_check(*checks)
        dynamic_lives = iter(lives)
        return [
            value if (next(dynamic_lives) if live is None else live) else DEAD
            for value, live in zip(values, self._static_lives)
        ]

    def _raise_failed_check(self, failed: Any, details: Any) -> None:
        failed = np.asarray(failed)
        if failed.any():
            i = int(np.argmax(failed))
            op = self.checking[i]
            raise errors.InvalidArgumentError(
                None, op, op.op_def.check.message(op, int(np.asarray(details)[i]))
            )


def frames_of(pruned: Pruned, roll_repeats: bool = True) -> Frame:
    """The frames of `pruned` in the order the lowering evaluates them (see `frames`).

    Raises:
      NotLowerable: an op has neither a kernel nor a lowering rule, or runs on the host.
    """
    for op in pruned.ops:
        if op.op_def.kernel is None and registry.lowering_rule(op.type) is None:
            raise NotLowerable(f"op {op.name} ({op.type}) has no kernel")
        if op.op_def.host_only:
            raise NotLowerable(f"op {op.name} ({op.type}) runs on the host", quiet=True)
        if on_strings(op):  # strings never reach JAX: the interpreter runs their NumPy kernels
            raise NotLowerable(f"op {op.name} ({op.type}) computes on strings", quiet=True)
    for t in list(pruned.feeds) + list(pruned.fetches):
        if t.dtype == dtypes.string:
            raise NotLowerable(f"tensor {t.name} is a string", quiet=True)
    return build_frames(
        list(pruned.ops), list(pruned.feeds), list(pruned.fetches), roll=roll_repeats
    )


def evaluate(
    root: Frame,
    feeds: list[Tensor],
    feed_values: list,
    ctx: TraceContext,
    passes: tuple = (),
    guard_while_loop: Callable | None = None,
) -> tuple[dict, Lowering]:
    """Evaluates the frames `root` on traced values: returns the environment (tensor -> (value,
    liveness)) and the `Lowering` that ran (its checks, the passes it applied). `ctx` holds the
    variables and random counters, and has the new ones afterwards. `guard_while_loop`, if
    given, wraps the result of each loop lowered to a `lax.while_loop` (see `Lowering`)."""
    env = {t: (v, True) for t, v in zip(feeds, feed_values)}
    lowering = Lowering(root, ctx, set(feeds), passes)
    lowering.guard_while_loop = guard_while_loop
    lowering.eval_frame_body(root, env, {}, 0, {})
    return env, lowering


def _unless_failed(failed: Any, new: dict, old: dict) -> dict:
    """`new` variables, or their `old` values when a check failed: a failed step changes none.
    One lax.cond, not a select per variable: XLA fuses a select into the update and then
    recomputes the optimizer's moments in it and copies them first (W1: 2% slower)."""
    kept = [h for h in new if h in old and jnp.shape(new[h]) == jnp.shape(old[h])]
    chosen = jax.lax.cond(
        jnp.any(failed),
        lambda n, o: o,
        lambda n, o: n,
        [jnp.asarray(new[h], old[h].dtype) for h in kept],
        [old[h] for h in kept],
    )
    return {**new, **dict(zip(kept, chosen))}


def _as_count(count: Any) -> Any:
    # counts come back from a step as int64 device arrays: pass those through untouched
    if isinstance(count, jax.Array) and count.dtype == jnp.int64:
        return count
    return jnp.asarray(count, jnp.int64)
