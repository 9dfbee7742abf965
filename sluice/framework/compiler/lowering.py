"""Lowering of a pruned graph to one traced JAX function (the compiled engine's core).

Each op is lowered by the rule its type registers in the op registry (`registry.lowering_rule`;
the rules are in `rules/`: control flow, stacks, constants and shape queries), else by calling
its kernel on the traced values: nothing here dispatches on op type. Cond regions and repeats
are lowered by `lowering_cond` and `lowering_repeats`, which get this `Lowering` as their
`FrameEvaluator`.

Values carry a liveness flag instead of the interpreter's dead bit: a Python bool when it is
known while tracing, else a traced bool. A cond region is one unit of its frame's order and
lowers (see `lowering_cond`) to a select when its predicate is known while tracing (only the live
branch is then evaluated) or when both branches are cheap and safe: both branches are computed,
a Merge picks the live input with `jnp.where`, and stateful ops write only when live. Any other
cond region lowers to one `lax.cond` that runs only the taken branch and returns its values,
their liveness and the state it changed. A while frame lowers to one `lax.while_loop` that runs
as often as the loop does; stack pushes are written in place into buffers sized by the loop's
`maximum_iterations`, at the index of their forward iteration, and a pop in backward iteration
j reads index N - 1 - j.

Ops with a `registry.Check` (CheckNumerics, the sparse cross-entropy's label range) add their
condition to `Lowering.checks`, keyed by op name: (failed, detail), failed only where the op is
live. A while loop carries the checks of its ops in its state, or-ed over iterations, so the
step can return every check; a cond region holding one stays a select (see `lowering_cond`).
"""

from __future__ import annotations

import collections
import dataclasses
import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sluice.framework import native
from sluice.framework.compiler import fused_cell_grads, fused_cells, loop_passes, tensor_arrays
from sluice.framework.compiler.buffers import StackBuffer, memory
from sluice.framework.compiler.cond_regions import CondRegion
from sluice.framework.compiler.frame import Frame, KernelTraceError, NotLowerable, all_ops
from sluice.framework.compiler.liveness import is_concrete, live_and
from sluice.framework.compiler.loop_analysis import (
    ancestors_in_frame,
    counter_limit,
    counts_to,
    loop_bound,
    lowered_with_loop,
    never_entered,
    push_of_chain,
    pushes_in,
    state_written,
)
from sluice.framework.compiler.lowering_cond import lower_cond_region
from sluice.framework.compiler.lowering_repeats import lower_repeat
from sluice.framework.compiler.repeat import Repeat
from sluice.framework.compiler.row_sink import RowSink
from sluice.framework.compiler.rules import control_flow, stacks, static  # noqa: F401 (register)
from sluice.framework.compiler.rules.context import OpContext
from sluice.framework.compiler.trace_context import TraceContext
from sluice.framework.control_flow.structure import is_loop_merge, is_loop_switch
from sluice.framework.ir import errors, registry
from sluice.framework.ir.graph import Operation, Tensor
from sluice.framework.ir.kernel_context import HostValueRequired


def _to_host(values: Any) -> tuple[Any, bool]:
    """Moves saved loop values to host memory (swap_memory=True), where the backend can."""
    try:
        return jax.device_put(values, memory("pinned_host")), True
    except (ValueError, TypeError, NotImplementedError):
        return values, False


class LoopState(NamedTuple):
    """What a compiled loop carries besides its loop variables (a pytree: namedtuples are)."""

    variables: dict  # handle -> value, for the variables the loop writes
    random_counts: dict  # op name -> counter, for the random ops in the loop
    checks: dict  # op name -> (failed, detail), for the checking ops in the loop


@dataclasses.dataclass
class _LoopPlan:
    """What `run_loop` found about one frame before running it."""

    frame: Frame
    carried: list  # the Merges whose values the lax loop carries
    fixed: dict  # Merge -> a value given for every iteration (a saved stack, a dead one)
    batched: list  # batched weight gradients the loop's factors feed (loop_passes)
    frame_live: Any  # whether the loop runs at all
    saved_vars: dict  # the trace context's variables before the loop
    saved_counts: dict  # ... and its random counters


@dataclasses.dataclass
class _LoopResult:
    """What a lax loop returned."""

    values: list  # the carried loop variables' final values
    state: LoopState
    count: Any  # iterations run
    ys: dict  # push op name -> its values, one row per iteration
    static_pushes: dict  # push op -> a value known while tracing, the same every iteration


def _write_row(buffer: Any, row: Any, index: Any) -> Any:
    """`buffer` with row `index` set to `row`. A buffer of no rows belongs to a loop bounded by
    zero (dynamic_rnn over zero steps known only at run time), whose body is traced though it
    never runs: the buffer stays as it is, which keeps that trace valid."""
    if buffer.shape[0] == 0:
        return buffer
    return jax.lax.dynamic_update_index_in_dim(buffer, row, index, 0)


class Lowering:
    """Evaluates frames of a pruned graph on traced values: each op by its lowering rule
    (`rules`, looked up in the op registry) or its kernel, each loop as one lax loop, each cond
    region and repeat through `lowering_cond` and `lowering_repeats`, which it hands itself as
    their `FrameEvaluator`."""

    def __init__(self, root: Frame, trace: TraceContext, fed: set, passes: tuple = ()):
        self.root = root
        self.trace = trace
        self.fed = fed
        self.passes = set(passes)
        self.exact_loops: set = set()  # loops lowered to a scan of exactly their bound
        self.read_bounds: dict = {}  # loop context -> the bound read off its predicate
        # ops a loop pass computes its own way: op -> fn(env) -> the op's one output value, or
        # fn(env, iteration) for those in `reads_iteration` (they read saved rows themselves)
        self.replacements: dict[Operation, Any] = {}
        self.reads_iteration: set[Operation] = set()
        # loop context -> the rows its passes write themselves into its buffers (`row_sink`)
        self.row_sinks: dict[Any, RowSink] = {}
        self.applied: list[tuple[str, str]] = []  # (pass, op name) for RunMetadata
        self.rows: dict[Tensor, tuple[Any, int]] = {}  # output of a rolled repeat -> (stack, row)
        self.checks: dict[str, tuple[Any, Any]] = {}  # op name -> (failed, detail), this trace
        # applied to each lax.while_loop's result as guard(frame, result) -> result (a pure
        # function refuses reverse-mode differentiation there, see `compiler.pure`); None: none
        self.guard_while_loop: Any = None

    @functools.cached_property
    def consumers(self) -> dict[Tensor, list[Operation]]:
        """Each tensor's consumers among the pruned ops; built only when a pass asks."""
        consumers = collections.defaultdict(list)
        for op in all_ops(self.root):
            for t in op.inputs:
                consumers[t].append(op)
        return consumers

    def _runs_exactly(
        self, frame: Frame, ctx: Any, bound: int | None, frame_live: Any, loop_cond: Operation
    ) -> bool:
        """True when the loop surely runs `bound` iterations: its predicate is counters that
        start at 0, step by 1 and stop at the bound, or it is the backward loop of such a loop."""
        if bound is None or frame_live is not True:
            return False
        forward = getattr(ctx, "forward_context", None)
        if forward is not None:
            return forward in self.exact_loops
        return counts_to(frame, loop_cond, bound)

    def replace(self, op: Operation, compute: Any, reads_iteration: bool = False) -> None:
        """`op`'s one output is `compute(env)` from now on (a loop pass or a rolled repeat
        computes it its own way), or `compute(env, iteration)` where it `reads_iteration`."""
        self.replacements[op] = compute
        if reads_iteration:
            self.reads_iteration.add(op)

    def note_applied(self, pass_name: str, op_name: str) -> None:
        self.applied.append((pass_name, op_name))

    # -- one op --------------------------------------------------------------------------------
    def eval_op(
        self, op: Operation, env: dict, op_live: dict, iteration: Any, pushes: dict
    ) -> None:
        if op in self.replacements:  # a rolled repeat's sum has no value for the terms it adds
            inputs = [env[t] for t in op.inputs if t in env]
        else:
            inputs = [env[t] for t in op.inputs]
        live = True
        for _, input_live in inputs:
            live = live_and(live, input_live)
        for c in op.control_inputs:
            live = live_and(live, op_live.get(c, True))
        rule = registry.lowering_rule(op.type)
        op_ctx = OpContext(op, inputs, live, iteration, pushes, self.trace)
        if rule is not None and rule.dead_inputs:  # the rule computes liveness itself
            outs = rule.lower(op_ctx)
        elif live is False:
            outs = [(None, False) for _ in op.outputs]
        elif op in self.replacements:
            compute = self.replacements[op]
            value = compute(env, iteration) if op in self.reads_iteration else compute(env)
            outs = [(value, live)]
        elif rule is not None:
            outs = rule.lower(op_ctx)
        else:
            outs = self._lower_with_kernel(op_ctx)
        op_live[op] = op_ctx.live
        for tensor, value in zip(op.outputs, outs):
            if tensor not in self.fed:
                env[tensor] = value

    def _record_check(self, op: Operation, values: list, live: Any) -> None:
        """Adds the op's Check of `values` to `checks` (or-ed with an earlier iteration's); a
        check known to pass while tracing adds nothing."""
        fails = functools.partial(op.op_def.check.fails, **op.attrs)
        if all(is_concrete(v) for v in values):
            with jax.ensure_compile_time_eval():
                failed, detail = fails(*values)
        else:
            failed, detail = fails(*values)
        failed = live_and(live, failed)
        if is_concrete(failed) and not np.asarray(failed).any():
            return
        self._merge_check(op.name, jnp.asarray(failed, jnp.bool_), jnp.asarray(detail, jnp.int64))

    def _merge_check(self, name: str, failed: Any, detail: Any) -> None:
        """The first failure's detail is kept."""
        if name in self.checks:
            before, before_detail = self.checks[name]
            failed, detail = before | failed, jnp.where(before, before_detail, detail)
        self.checks[name] = (failed, detail)

    def _lower_with_kernel(self, op_ctx: OpContext) -> list:
        """The default lowering: the op's kernel on the traced values, and its Check."""
        op, values, live = op_ctx.op, op_ctx.values, op_ctx.live
        outs = [(v, live) for v in self._run_kernel(op, values, live)]
        if op.op_def.check is not None:
            self._record_check(op, values, live)
        return outs

    def _run_kernel(self, op: Operation, values: list, live: Any) -> tuple:
        op_def = op.op_def
        kernel = registry.get_kernel(op.type, registry.default_device_type())
        fn = functools.partial(kernel, **op.attrs)
        try:
            if op_def.stateful:
                self.trace.op, self.trace.live = op, live
                result = fn(self.trace, *values)
            elif all(is_concrete(v) for v in values):
                with jax.ensure_compile_time_eval():
                    result = fn(*values)
            else:
                result = fn(*values)
        except HostValueRequired as err:
            shaped = registry.shaped_kernel(op.type)
            result = None if shaped is None else shaped(op, *values, **op.attrs)
            if result is None:
                raise NotLowerable(
                    f"{op.type} op '{op.name}' needs a value known before the run: {err}"
                ) from None
        except (
            jax.errors.ConcretizationTypeError,
            jax.errors.TracerArrayConversionError,
            jax.errors.TracerIntegerConversionError,
            jax.errors.TracerBoolConversionError,
        ) as err:
            raise NotLowerable(
                f"{op.type} op '{op.name}' needs a value known before the run: {err}"
            ) from None
        except errors.OpError:
            raise
        except (TypeError, ValueError, IndexError, ZeroDivisionError) as err:
            seen = ", ".join(_describe(v) for v in values)
            raise KernelTraceError(
                None, op, f"{op.type} op '{op.name}' failed on inputs ({seen}): {err}"
            ) from err
        return result if len(op.outputs) != 1 else (result,)

    # -- frames --------------------------------------------------------------------------------
    def eval_frame_body(
        self,
        frame: Frame,
        env: dict,
        op_live: dict,
        iteration: Any,
        pushes: dict,
        only: set | None = None,
    ) -> None:
        self.eval_units(frame.order, frame, env, op_live, iteration, pushes, only)

    def eval_units(
        self,
        units: list,
        frame: Frame,
        env: dict,
        op_live: dict,
        iteration: Any,
        pushes: dict,
        only: set | None = None,
    ) -> None:
        """Evaluates units of `frame`'s order: ops, child frames (a loop each) and cond regions
        (`lowering_cond.CondRegion`: a select or one lax.cond)."""
        for unit in units:
            if isinstance(unit, Frame):
                if only is not None and unit not in only:
                    continue
                if never_entered(unit, env):  # e.g. a loop on the untaken side of a cond
                    for x in unit.exits:
                        env[x.outputs[0]], op_live[x] = (None, False), False
                else:
                    self.run_loop(unit, env, op_live)
            elif isinstance(unit, CondRegion):
                lower_cond_region(unit, self, frame, env, op_live, iteration, pushes, only)
            elif isinstance(unit, Repeat):
                lower_repeat(unit, self, frame, env, op_live, iteration, pushes, only)
            elif only is None or unit in only:
                if lowered_with_loop(unit):
                    continue  # set up by run_loop
                self.eval_op(unit, env, op_live, iteration, pushes)

    def run_loop(self, frame: Frame, outer_env: dict, outer_live: dict) -> None:
        ctx = frame.ctx
        enters = frame.enters
        frame_live = True
        base_env: dict = {}
        for e in enters:
            value, live = outer_env[e.inputs[0]]
            if e.get_attr("is_constant"):
                base_env[e.outputs[0]] = (value, live)
            else:
                frame_live = live_and(frame_live, live)
        merges = [op for op in frame.ops if is_loop_merge(op)]
        carried, fixed = [], {}
        for m in merges:
            value, _ = outer_env[m.inputs[0].op.inputs[0]]
            if value is None or isinstance(value, StackBuffer):
                fixed[m] = value  # stacks: pushes are scan outputs, pops index the saved buffer
            else:
                carried.append(m)
        loop_cond = frame.loop_cond
        switches = {op: op for op in frame.ops if is_loop_switch(op)}
        writes = state_written(frame)
        pred_needed = ancestors_in_frame(loop_cond, frame)
        batched = self._apply_loop_passes(frame, outer_env, fixed, writes[0])
        checking = [op.name for op in all_ops(frame) if op.op_def.check is not None]
        passed = (jnp.asarray(False), jnp.asarray(0, jnp.int64))
        outer_checks = self.checks

        def bind(values: list, state: tuple) -> tuple[dict, dict]:
            env = dict(base_env)
            for m, v in zip(carried, values):
                env[m.outputs[0]] = (v, True)
            for m, v in fixed.items():
                env[m.outputs[0]] = (v, True)
            for sw in switches:
                v, _ = env[sw.inputs[0]]
                env[sw.outputs[0]] = (v, False)
                env[sw.outputs[1]] = (v, True)
            self.trace.variables.update(state.variables)
            self.trace.random_counts.update(state.random_counts)
            self.checks = dict(state.checks)
            return env, {}

        def state_now() -> LoopState:
            return LoopState(
                {h: self.trace.variables[h] for h in writes[0] if h in self.trace.variables},
                {n: self.trace.random_counts.get(n, 0) for n in writes[1]},
                {n: self.checks.get(n, passed) for n in checking},
            )

        first_pred_env: dict = {}

        def predicate(values: list, state: LoopState, iteration: Any) -> Any:
            env, live = bind(values, state)
            self.eval_frame_body(frame, env, live, iteration, {}, only=pred_needed)
            if not first_pred_env:  # what the predicate's bound can be read from
                first_pred_env.update(env)
            pred, pred_live = env[loop_cond.inputs[0]]
            return jnp.logical_and(pred, pred_live)  # pred_live: True or a traced bool

        def body(values: list, state: LoopState, iteration: Any) -> tuple:
            env, live = bind(values, state)
            pushes: dict = {}
            self.eval_frame_body(frame, env, live, iteration, pushes)
            for b in batched:  # factors of batched gradients (one buffer where they are one value)
                pushes[b.matmul] = env[b.matmul.inputs[1]]
            nexts = [env[m.inputs[1].op.inputs[0]][0] for m in carried]
            return nexts, state_now(), pushes

        saved_vars, saved_counts = dict(self.trace.variables), dict(self.trace.random_counts)
        init_values = [outer_env[m.inputs[0].op.inputs[0]][0] for m in carried]
        self.checks = {}
        init_state = state_now()
        first_pred = jnp.logical_and(predicate(init_values, init_state, 0), frame_live)
        # the first predicate's checks count only when the loop is entered
        init_state = init_state._replace(
            checks={
                n: (jnp.logical_and(f, frame_live), d) for n, (f, d) in state_now().checks.items()
            }
        )
        self.trace.variables, self.trace.random_counts = dict(saved_vars), dict(saved_counts)
        plan = _LoopPlan(frame, carried, fixed, batched, frame_live, saved_vars, saved_counts)
        static_pushes: dict = {}
        # push name -> the push whose row it shares: values that are one traced array (a Keras
        # cell's kernel and recurrent-kernel gradients both save dz) get one buffer, not two
        shared_rows: dict = {}
        bound = loop_bound(ctx, outer_env)
        if bound is None:  # no maximum_iterations: `t < n` on a counter bounds it too
            forward = getattr(ctx, "forward_context", None)
            bound = (
                self.read_bounds.get(forward)
                if forward is not None
                else counter_limit(frame, loop_cond, first_pred_env)
            )
            if bound is not None:
                self.read_bounds[ctx] = bound
        if bound is None and pushes_in(frame):
            raise NotLowerable(
                f"while loop {ctx.name!r} saves values for its gradient but has no "
                "maximum_iterations, so its stack buffers cannot be sized"
            )

        def run_step(operand):
            values, state, i = operand
            nexts, new_state, pushes = body(values, state, i)
            outputs, first_push = {}, {}
            for op, (v, _) in pushes.items():
                if is_concrete(v):
                    static_pushes[op] = v
                elif id(v) in first_push:
                    shared_rows[op.name] = first_push[id(v)]
                else:
                    first_push[id(v)] = op.name
                    outputs[op.name] = v
            pred = jnp.asarray(predicate(nexts, new_state, i + 1), jnp.bool_)
            new_state = new_state._replace(checks=state_now().checks)  # with the predicate's
            return (nexts, new_state, i + 1, pred), outputs

        growing = tensor_arrays.growing_arrays(
            frame, bound, self._runs_exactly(frame, ctx, bound, frame_live, loop_cond)
        )
        for merge, grow_ops in growing.items():
            if merge not in carried:
                raise NotLowerable(f"TensorArray {merge.name} grows but is not carried by the loop")
            k = carried.index(merge)
            init_values[k] = tensor_arrays.presize(init_values[k], bound)
            for op in grow_ops:
                self.replace(op, tensor_arrays.write_in_place(op))
        zero = jnp.int32(0)
        if not all(m.outputs[0].shape.is_fully_defined() for m in carried):
            # a shape invariant may let a loop variable change shape: lax loops cannot carry that
            nexts = jax.eval_shape(run_step, (init_values, init_state, zero))[0][0]
            _check_carried_types(carried, init_values, nexts)
        if self._runs_exactly(frame, ctx, bound, frame_live, loop_cond):
            # The trip count is the bound itself: one lax.scan, no predicate, optionally unrolled;
            # saved values are the scan's per-iteration outputs.
            def scan_step(carry, _):
                values, state, i = carry
                (nexts, new_state, i_next, _), outputs = run_step((values, state, i))
                return (nexts, new_state, i_next), outputs

            unroll = max(1, int(getattr(ctx, "unroll", 1)))
            if self._unwritten_buffers(frame, bound) and (batched or pushes_in(frame)):
                (values, state, count), ys = loop_passes.scan_into_unwritten(
                    scan_step,
                    (init_values, init_state, zero),
                    bound,
                    unroll,
                    self.row_sinks.get(ctx),
                )
                if jax.tree_util.tree_leaves(ys):
                    self.note_applied("unwritten_loop_buffers", ctx.name)
            else:
                (values, state, count), ys = jax.lax.scan(
                    scan_step, (init_values, init_state, zero), None, length=bound, unroll=unroll
                )
            self.exact_loops.add(ctx)
            self.checks = outer_checks
            self._finish_loop(
                plan,
                _LoopResult(values, state, count, _with_shared(ys, shared_rows), static_pushes),
                outer_env,
                outer_live,
            )
            return

        # One lax.while_loop that runs exactly as often as the loop does; values saved for the
        # gradient go into buffers sized by the bound, written in place at the iteration index.
        (nexts, *_), out_shapes = jax.eval_shape(run_step, (init_values, init_state, zero))
        _check_carried_types(carried, init_values, nexts)
        buffers = jax.tree_util.tree_map(
            lambda a: jnp.zeros((bound,) + a.shape, a.dtype), out_shapes
        )

        def cond_fn(carry):
            _, _, i, pred, _ = carry
            return pred if bound is None else jnp.logical_and(pred, i < bound)

        def body_fn(carry):
            values, state, i, _, bufs = carry
            (nexts, new_state, i_next, pred), outputs = run_step((values, state, i))
            bufs = jax.tree_util.tree_map(lambda buf, row: _write_row(buf, row, i), bufs, outputs)
            return nexts, new_state, i_next, pred, bufs

        carry = (init_values, init_state, zero, jnp.asarray(first_pred, jnp.bool_), buffers)
        result = jax.lax.while_loop(cond_fn, body_fn, carry)
        if self.guard_while_loop is not None:
            result = self.guard_while_loop(frame, result)
        values, state, count, _, ys = result
        self.checks = outer_checks
        self._finish_loop(
            plan,
            _LoopResult(values, state, count, _with_shared(ys, shared_rows), static_pushes),
            outer_env,
            outer_live,
        )

    def _unwritten_buffers(self, frame: Frame, bound: int) -> bool:
        """Whether a loop of exactly `bound` iterations takes its saved-value buffers unfilled:
        not under a pure function, whose loops JAX may differentiate (a scan's outputs, not a
        carried buffer, are what its reverse mode handles well), and not where it or a loop in
        it swaps memory (a row saved from host memory cannot go into a device buffer)."""
        return (
            "unwritten_loop_buffers" in self.passes
            and bound > 0
            and self.guard_while_loop is None
            and native.unwritten_buffers_available()
            and not any(getattr(f.ctx, "swap_memory", False) for f in _frames_in(frame))
        )

    def _apply_loop_passes(self, frame: Frame, outer_env: dict, fixed: dict, written: set) -> list:
        """Registers the replacements of `loop_passes` for this frame; returns the batched weight
        gradients, whose per-iteration factors the loop must save."""
        ctx = frame.ctx
        if "hoist_input_projection" in self.passes:
            for p in loop_passes.hoist_input_projection(frame.ops, ctx, written):
                sequence = outer_env[p.sequence][0]
                weight = self._loop_weight(p, outer_env)
                if 0 in jnp.shape(sequence):
                    continue  # an empty sequence: the loop never runs its body
                packed = (
                    "packed_recurrent_matmul" in self.passes
                    and native.panel_matmul_available()
                    and jnp.result_type(weight) == jnp.float32
                )
                self.replace(p.matmul, loop_passes.hoisted_matmul(p, sequence, weight, packed))
                self.note_applied("hoist_input_projection", p.matmul.name)
        if "fused_lstm_cell" in self.passes and native.panel_matmul_available():
            self._fuse_lstm_cells(frame, outer_env, written)
        if "fused_lstm_cell_grad" in self.passes and native.panel_matmul_available():
            self._fuse_lstm_cell_grads(frame, fixed)
        if "packed_recurrent_matmul" in self.passes and native.panel_matmul_available():
            for p in loop_passes.packed_recurrent_matmul(frame.ops, ctx, written, self.consumers):
                if p.matmul in self.replacements:
                    continue  # hoisted: its loop part is `h @ W[n:]` of a sliced weight
                weight = self._loop_weight(p, outer_env)
                if weight is None or isinstance(weight, StackBuffer) or jnp.ndim(weight) != 2:
                    continue  # a dead frame's input: the loop never runs
                if jnp.result_type(weight) != jnp.float32:
                    continue
                self.replace(p.matmul, loop_passes.packed_matmul(p, weight))
                self.note_applied("packed_recurrent_matmul", p.matmul.name)
        if "transpose_invariant_weight" in self.passes:
            for t in loop_passes.transpose_invariant_weight(frame.ops, ctx, written):
                if t.matmul in self.replacements:
                    continue
                weight = self._loop_weight(t, outer_env)
                if weight is None or isinstance(weight, StackBuffer):
                    continue  # a dead frame's input: the loop never runs
                self.replace(t.matmul, loop_passes.pretransposed_matmul(t, weight))
                self.note_applied("transpose_invariant_weight", t.matmul.name)
        batched = []
        if "batch_weight_gradient" in self.passes:
            for b in loop_passes.batch_weight_gradient(frame.ops, ctx, self.consumers):
                saved = fixed.get(b.stack_merge)
                if not isinstance(saved, StackBuffer) or saved.static is not None or saved.on_host:
                    continue
                # the accumulator stays as it came in; _finish_loop adds the batched product
                self.replace(b.add, lambda env, acc=b.add.inputs[0]: env[acc][0])
                batched.append(b)
                self.note_applied("batch_weight_gradient", b.add.name)
        return batched

    def _fuse_lstm_cells(self, frame: Frame, outer_env: dict, written: set) -> None:
        """Registers `fused_cells.fused_step` for each LSTM step of the frame whose matmuls no
        other pass took (a hoisted input projection keeps XLA's gates)."""
        position = {op: k for k, op in enumerate(frame.order) if isinstance(op, Operation)}
        for cell in fused_cells.fused_lstm_cell(frame.ops, frame.ctx, written, self.consumers):
            if any(m in self.replacements for m in cell.matmuls):
                continue
            if not fused_cells.inputs_ready(cell, position):
                continue
            weights = [
                self._invariant_value(w, h, outer_env)
                for w, h in zip(cell.weights, cell.weight_handles)
            ]
            bias = self._invariant_value(cell.bias, cell.bias_handle, outer_env)
            if any(v is None or isinstance(v, StackBuffer) for v in (*weights, bias)):
                continue  # a dead frame's input: the loop never runs
            if any(jnp.result_type(v) != jnp.float32 for v in (*weights, bias)):
                continue
            sink = self.row_sinks.setdefault(frame.ctx, RowSink())
            pushes = fused_cells.saving_pushes(cell, frame.ctx, self.consumers)
            step = fused_cells.fused_step(cell, weights, bias, sink, pushes)
            for k, op in enumerate(cell.replaced):
                self.replace(op, lambda env, k=k, step=step: step(env)[k])
            self.note_applied("fused_lstm_cell", cell.cell.name)

    def _fuse_lstm_cell_grads(self, frame: Frame, fixed: dict) -> None:
        """Registers `fused_cell_grads.fused_grad_step` for each backward step, in this backward
        frame, of an LSTM cell of its forward frame (fused or not: a hoisted input projection
        leaves the gates' gradients as they are)."""
        forward = getattr(frame.ctx, "forward_context", None)
        forward_frame = next((f for f in _frames_in(self.root) if f.ctx is forward), None)
        if forward is None or forward_frame is None:
            return
        # the weights' invariance does not matter here (written=()): only the gates' ops do
        cells = fused_cells.fused_lstm_cell(forward_frame.ops, forward, set(), self.consumers)
        if not cells:
            return
        for grad in fused_cell_grads.fused_lstm_cell_grad(frame.ops, frame.ctx, cells, fixed):
            replaced = [(k, op) for k, op in enumerate(grad.replaced) if op is not None]
            if any(op in self.replacements for _, op in replaced):
                continue
            step = fused_cell_grads.fused_grad_step(grad)
            for k, op in replaced:
                self.replace(op, lambda env, i, k=k, step=step: step(env, i)[k], True)
            self.note_applied("fused_lstm_cell_grad", grad.dz.name)

    def _loop_weight(self, found: Any, outer_env: dict) -> Any:
        """The value of a pass's loop-invariant weight: its variable's, or its Enter's input."""
        return self._invariant_value(found.weight, found.weight_handle, outer_env)

    def _invariant_value(self, t: Tensor, handle: str | None, outer_env: dict) -> Any:
        """The value of a loop-invariant `t`: its variable's (`handle`), or its Enter's input."""
        if handle is not None:
            return self.trace.read_variable(handle)
        return outer_env[t.op.inputs[0]][0]

    def _finish_loop(
        self, plan: _LoopPlan, result: _LoopResult, outer_env: dict, outer_live: dict
    ) -> None:
        """Puts the loop's final state back and binds its Exits in the outer frame."""
        frame, ctx, frame_live = plan.frame, plan.frame.ctx, plan.frame_live
        self.trace.variables, self.trace.random_counts = plan.saved_vars, plan.saved_counts
        self.trace.variables.update(result.state.variables)
        self.trace.random_counts.update(result.state.random_counts)
        for name, (failed, detail) in result.state.checks.items():
            self._merge_check(name, failed, detail)
        finals = dict(zip(plan.carried, result.values))
        by_factors: dict = {}  # the saved factors (one array for pushes sharing rows) -> sums
        for b in plan.batched:
            factors = result.ys[b.matmul.name]
            by_factors.setdefault(id(factors), (factors, []))[1].append(b)
        for factors, group in by_factors.values():
            saved = [plan.fixed[b.stack_merge] for b in group]
            products = loop_passes.batched_products(
                [s.values for s in saved],
                [s.count for s in saved],
                factors,
                exact=ctx in self.exact_loops,
            )
            for b, product in zip(group, products):
                finals[b.merge] = finals[b.merge] + product
        for x in frame.exits:
            merge_op = x.inputs[0].op.inputs[0].op
            if merge_op in finals:
                outer_env[x.outputs[0]] = (finals[merge_op], frame_live)
            else:
                push = push_of_chain(merge_op, frame)
                if push in result.static_pushes:
                    buf = StackBuffer(None, result.count, result.static_pushes[push])
                elif ctx.swap_memory:
                    saved, on_host = _to_host(result.ys[push.name])
                    buf = StackBuffer(saved, result.count, None, on_host)
                else:
                    buf = StackBuffer(result.ys[push.name], result.count)
                outer_env[x.outputs[0]] = (buf, frame_live)
            outer_live[x] = frame_live


def _with_shared(ys: dict, shared_rows: dict) -> dict:
    """The loop's saved rows by push name, with the pushes that shared another's buffer."""
    return {**ys, **{name: ys[first] for name, first in shared_rows.items()}}


def _frames_in(frame: Frame) -> list[Frame]:
    """`frame` and the frames nested in it."""
    return [frame] + [f for child in frame.children for f in _frames_in(child)]


def _describe(value: Any) -> str:
    if value is None:
        return "dead"
    return f"{jnp.result_type(value).name}{list(np.shape(value))}"


# What a TensorArray's buffer passes through between its creation and a loop's Merge.
_ARRAY_PASSES = (
    "Enter",
    "Identity",
    "Switch",
    "Merge",
    "Exit",
    "TensorArrayWriteV3",
    "TensorArrayScatterV3",
)


def _is_unallocated_array(merge: Operation, initial: Any, first_next: Any) -> bool:
    """A TensorArray whose element shape was unknown until run time enters a loop with no
    elements yet (its first write allocates it, see `ops.tensor_array_ops`)."""
    if np.size(initial) != 0 or np.shape(initial)[:1] != tuple(first_next.shape[:1]):
        return False
    t = merge.inputs[0]
    while t.op.type in _ARRAY_PASSES and t.op.inputs:
        t = t.op.inputs[0]
    return t.op.type == "TensorArrayV3"


def _check_carried_types(carried: list[Operation], before: list, after: list) -> None:
    """Raises NotLowerable when a loop variable leaves an iteration with another shape or dtype
    than it entered with (its shape invariant allows it; a lax loop carries one type).

    An unallocated TensorArray entering the loop is allocated here instead, with the shape the
    loop's first write gives it (zeros, as the write kernel would allocate), so the loop carries
    one shape."""
    for k, (merge, a, b) in enumerate(zip(carried, before, after)):
        if _is_unallocated_array(merge, a, b):
            before[k] = a = jnp.zeros(b.shape, b.dtype)
    for merge, a, b in zip(carried, before, after):
        if (np.shape(a), jnp.result_type(a)) != (tuple(b.shape), b.dtype):
            raise NotLowerable(
                f"loop variable {merge.name} enters with {_describe(a)} and leaves an iteration "
                f"with {b.dtype.name}{list(b.shape)}: a compiled loop carries one shape"
            )
