"""Checks of a built graph's invariants, before it runs (`SessionConfig(check_graph=True)`).

The builders (`create_op`, the contexts, `cond`, `while_loop`, the gradient rules and loop
bookkeeping, the graph_def importer) keep these invariants; a graph that breaks one was built or
edited wrongly, and would otherwise run to a wrong value or fail far from the cause. As JAX
checks its jaxprs under `jax_enable_checks`, `check_ops` walks the ops a run needs:

  * every input's producer is an op of this graph, and the tensor is its output; control
    inputs too;
  * the op's inference rule, run again on its inputs as they are now, gives the dtypes (and
    shapes compatible with the shapes) recorded on its outputs;
  * a value enters a cond branch only through a Switch of that cond on its predicate, and a
    while frame only through an Enter of that frame; it leaves a frame only through an Exit;
    an op reads the side of its cond's Switch that its branch takes; control edges stay in
    their frame;
  * an Enter belongs to a while frame and carries that frame's name; NextIteration, Exit and
    LoopCond only inside a frame;
  * each loop variable is Enter -> Merge(Enter, NextIteration) -> Switch(Merge, LoopCond), an
    Exit on the Switch's false side, and each frame has one LoopCond;
  * a cond's Merge joins the two branches of one cond, in the context that holds the cond; a
    branch's pivot is Identity(Switch(pred, pred)[branch]) outside the branch;
  * contexts nest (no cycle) and no two while frames share a name.

A violation raises `InternalError` naming the op, what was expected and what was found.
`check_before_run` remembers what it has checked per graph, so each op and loop is checked once
while the graph's existing ops are unchanged (`Graph.mutation_version`).
"""

from __future__ import annotations

import os
import threading
from typing import Any, Iterable

from sluice.framework.control_flow.cond_context import CondContext
from sluice.framework.control_flow.context import is_within, output_context, while_context_of
from sluice.framework.ir import errors
from sluice.framework.ir.graph import Graph, Operation, Tensor
from sluice.framework.ir.x64 import with_x64

ENV_VAR = "SLUICE_CHECK_GRAPH"
_env_default: bool | None = None


def default_enabled() -> bool:
    """Whether sessions check graphs when their config does not say: the environment variable
    `SLUICE_CHECK_GRAPH` ("1", "true", "yes", "on"), read once, on first use."""
    global _env_default
    if _env_default is None:
        _env_default = os.environ.get(ENV_VAR, "").strip().lower() in ("1", "true", "yes", "on")
    return _env_default


class _Memo:
    """What has been checked of one graph while its existing ops are unchanged."""

    def __init__(self, mutation_version: int):
        self.mutation_version = mutation_version
        self.checked: set[Operation] = set()
        self.loops: set[Any] = set()  # (while context, graph.version) pairs checked
        self.lock = threading.Lock()


_MEMO = "checks.memo"  # a graph's _Memo, in its `attachments` (its ops refer to the graph)
_MEMOS_LOCK = threading.Lock()


def check_before_run(graph: Graph, ops: Iterable[Operation]) -> None:
    """`check_ops(graph, ops)` for the ops not checked yet since the graph last changed (a new
    op in a loop checks that loop again)."""
    with _MEMOS_LOCK:
        memo = graph.attachments.get(_MEMO)
        if memo is None or memo.mutation_version != graph.mutation_version:
            memo = graph.attachments[_MEMO] = _Memo(graph.mutation_version)
    with memo.lock:
        new = [op for op in ops if op not in memo.checked]
        if not new:
            return
        checked_loops = check_ops(graph, new, skip_loops=memo.loops)
        memo.checked.update(new)
        memo.loops.update(checked_loops)


def _fail(op: Operation, what: str, expected: str, found: str) -> None:
    raise errors.InternalError(
        None,
        op,
        f"Graph check failed at {op.type} op {op.name!r}: {what}. Expected {expected}; found "
        f"{found}. The graph breaks an invariant its builders keep: this is a bug in a graph "
        "builder (sluice's, or code that edits the graph), not in the values fed.",
    )


@with_x64  # inference rules call JAX, as when the ops were built (see `ir.x64`)
def check_ops(graph: Graph, ops: Iterable[Operation], skip_loops: Any = frozenset()) -> list:
    """Checks `ops` (ops of `graph`) and the while loops they are in; raises InternalError at
    the first op that breaks an invariant. Returns the (loop, graph.version) pairs checked."""
    ops = list(ops)
    index = _Index(graph)
    loops: dict[Any, None] = {}
    conds: dict[Any, None] = {}
    for op in ops:  # first what each op is and where it is, so a misplaced op is named itself
        _check_membership(graph, op)
        _check_nesting(op, op.control_flow_context)
        _check_frame(op, index)
    for op in ops:  # then how it is wired
        _check_inference(op)
        _check_context(op)
        _check_primitive(op, index)
        ctx = op.control_flow_context
        while ctx is not None:
            (loops if ctx.is_while else conds)[ctx] = None
            ctx = ctx.outer_context
    for ctx in conds:
        if isinstance(ctx, CondContext):
            _check_cond_pivot(ctx)
    version = graph.version
    done = []
    for loop in loops:
        if (loop, version) not in skip_loops:
            _check_loop(loop, index)
            done.append((loop, version))
    return done


class _Index:
    """The graph's control-flow ops by context, and who consumes the outputs of each."""

    def __init__(self, graph: Graph):
        self.by_context: dict[Any, list[Operation]] = {}
        self.consumers: dict[Tensor, list[Operation]] = {}
        frames: dict[str, Any] = {}
        for op in graph.get_operations():
            for t in op.inputs:
                self.consumers.setdefault(t, []).append(op)
            ctx = op.control_flow_context
            if ctx is not None and op.op_def.control_flow:
                self.by_context.setdefault(ctx, []).append(op)
            if ctx is not None and ctx.is_while:
                other = frames.setdefault(ctx.name, ctx)
                if other is not ctx:
                    _fail(
                        op,
                        "two while loops share one frame name",
                        f"one while context per frame name {ctx.name!r}",
                        "two distinct contexts of that name",
                    )

    def of(self, ctx: Any, op_type: str) -> list[Operation]:
        return [op for op in self.by_context.get(ctx, ()) if op.type == op_type]

    def consumers_of(self, t: Tensor) -> list[Operation]:
        return self.consumers.get(t, [])


# -- every op ---------------------------------------------------------------------------------
def _check_membership(graph: Graph, op: Operation) -> None:
    for i, t in enumerate(op.inputs):
        producer = t.op
        if producer.graph is not graph or not _in_graph(graph, producer):
            _fail(
                op,
                f"input {i} ({t.name}) is made by an op that is not in this graph",
                "a producer among this graph's ops",
                f"{producer.name!r} of {_graph_text(graph, producer)}",
            )
        if t.value_index >= len(producer.outputs) or producer.outputs[t.value_index] is not t:
            _fail(
                op,
                f"input {i} ({t.name}) is not an output of its producer",
                f"output {t.value_index} of {producer.name!r}",
                "a tensor its producer does not hold",
            )
    for c in op.control_inputs:
        if c.graph is not graph or not _in_graph(graph, c):
            _fail(
                op,
                f"control input {c.name!r} is not in this graph",
                "a control input among this graph's ops",
                f"{c.name!r} of {_graph_text(graph, c)}",
            )


def _graph_text(graph: Graph, op: Operation) -> str:
    return "another graph" if op.graph is not graph else "this graph, but not among its ops"


def _in_graph(graph: Graph, op: Operation) -> bool:
    try:
        return graph.get_operation_by_name(op.name) is op
    except KeyError:
        return False


def _check_inference(op: Operation) -> None:
    try:
        specs = op.op_def.infer(op)
    except (ValueError, TypeError) as err:
        _fail(
            op,
            "its inference rule rejects its inputs as they are now",
            "inputs the op accepts",
            f"{_inputs_text(op)}: {err}",
        )
    if len(specs) != len(op.outputs):
        _fail(op, "it has a wrong number of outputs", f"{len(specs)}", f"{len(op.outputs)}")
    for i, ((dtype, shape), t) in enumerate(zip(specs, op.outputs)):
        if t.dtype != dtype:
            _fail(
                op,
                f"output {i} has another dtype than its inference rule gives for its inputs "
                f"({_inputs_text(op)})",
                dtype.name if hasattr(dtype, "name") else str(dtype),
                t.dtype.name,
            )
        if shape is not None and not t.shape.is_compatible_with(shape):
            _fail(
                op,
                f"output {i} has a shape its inference rule does not allow for its inputs "
                f"({_inputs_text(op)})",
                f"a shape compatible with {shape}",
                str(t.shape),
            )


def _inputs_text(op: Operation) -> str:
    return ", ".join(f"{t.name}: {t.dtype.name}{t.shape}" for t in op.inputs) or "no inputs"


def _ctx_name(ctx: Any) -> str:
    if ctx is None:
        return "the top level"
    kind = "while frame" if ctx.is_while else "cond branch" if isinstance(ctx, CondContext) else ""
    return f"{kind or type(ctx).__name__} {getattr(ctx, 'name', '?')!r}"


def _is_cond_capture(op: Operation) -> bool:
    """A Switch that brings a value into the cond branch it belongs to."""
    ctx = op.control_flow_context
    return op.type == "Switch" and isinstance(ctx, CondContext) and op.inputs[1] is ctx.pred


def _reading_context(op: Operation) -> Any:
    """Where `op` reads its inputs: an Enter and a cond's capturing Switch read in the context
    around the one they belong to (they bring values into it)."""
    ctx = op.control_flow_context
    if ctx is not None and (op.type == "Enter" or _is_cond_capture(op)):
        return ctx.outer_context
    return ctx


def _check_context(op: Operation) -> None:
    here = _reading_context(op)
    for i, t in enumerate(op.inputs):
        source = output_context(t.op)
        crossed = here
        while crossed is not None and not is_within(source, crossed):
            crossed = crossed.outer_context
        if crossed is not here:
            inner = here
            while inner.outer_context is not crossed:
                inner = inner.outer_context
            via = "an Enter of that frame" if inner.is_while else "a Switch of that cond"
            _fail(
                op,
                f"input {i} ({t.name}) comes into {_ctx_name(inner)} from outside it directly",
                f"a value from outside to come in through {via}",
                f"a value of {_ctx_name(source)}",
            )
        source_loop = while_context_of(source)
        if source_loop is not None and not is_within(here, source_loop):
            _fail(
                op,
                f"input {i} ({t.name}) is a value of the {_ctx_name(source_loop)} read outside it",
                "values to leave a loop only through its Exits",
                f"a read in {_ctx_name(here)}",
            )
        producer = t.op
        if _is_cond_capture(producer):
            branch = producer.control_flow_context
            if t.value_index != branch.branch:
                _fail(
                    op,
                    f"input {i} ({t.name}) is the side of a cond's Switch that its branch never "
                    "takes",
                    f"output {branch.branch} of {producer.name!r} (branch {branch.name!r})",
                    f"output {t.value_index}",
                )
    op_loop = while_context_of(here)
    for c in op.control_inputs:
        c_loop = while_context_of(output_context(c))
        if c_loop is not op_loop:
            _fail(
                op,
                f"control input {c.name!r} is in another while frame",
                f"a control input of {_ctx_name(op_loop)} (outside ones come in as a "
                "loop-constant token)",
                f"one of {_ctx_name(c_loop)}",
            )


def _check_nesting(op: Operation, ctx: Any) -> None:
    seen = set()
    while ctx is not None:
        if id(ctx) in seen:
            _fail(op, "its control-flow contexts nest in a cycle", "a chain to the top", "a cycle")
        seen.add(id(ctx))
        if (
            ctx.is_while
            and ctx.outer_context is not None
            and ctx.outer_context.graph is not (ctx.graph)
        ):
            _fail(op, "its contexts span graphs", "one graph", "two")
        ctx = ctx.outer_context


_LOOP_PRIMITIVES = ("Enter", "Exit", "NextIteration", "LoopCond")


def _check_frame(op: Operation, index: _Index) -> None:
    ctx = op.control_flow_context
    kind = op.type
    if kind not in _LOOP_PRIMITIVES or ctx is None:
        # A loop primitive in no context at all was built by hand from the raw ops, as TF1
        # allows (its frame is its Enter's frame_name): checked as an op, not as a loop.
        return
    if not ctx.is_while:
        _fail(op, f"a {kind} outside a while frame", "a while context", _ctx_name(ctx))
    if kind == "Enter":
        frame = op.get_attr("frame_name")
        if frame != ctx.name:
            _fail(op, "its frame name is not its loop's", repr(ctx.name), repr(frame))
    elif kind == "NextIteration":
        _check_back_edge(op, ctx, index)


def _check_primitive(op: Operation, index: _Index) -> None:
    ctx = op.control_flow_context
    kind = op.type
    if kind in _LOOP_PRIMITIVES and ctx is None:
        return  # built by hand (see `_check_frame`)
    if kind == "Enter":
        if not op.get_attr("is_constant"):
            users = index.consumers_of(op.outputs[0])
            if not users or any(
                u.type != "Merge"
                or u.control_flow_context is not ctx
                or u.inputs[0] is not op.outputs[0]
                for u in users
            ):
                _fail(
                    op,
                    "a loop variable's Enter that does not feed its loop's Merge",
                    f"only input 0 of Merges of {_ctx_name(ctx)}",
                    ", ".join(f"{u.name} ({u.type})" for u in users) or "no consumer",
                )
    elif kind == "Exit":
        src = op.inputs[0]
        if not _is_loop_switch_of(src.op, ctx) or src.value_index != 0:
            _fail(
                op,
                "an Exit not on the false side of its loop's Switch",
                f"output 0 of a Switch on the LoopCond of {_ctx_name(ctx)}",
                f"{src.name} ({src.op.type})",
            )
    elif kind == "LoopCond":
        if ctx.loop_cond is None or ctx.loop_cond.op is not op:
            found = "none" if ctx.loop_cond is None else repr(ctx.loop_cond.op.name)
            _fail(op, "a LoopCond that is not its frame's", repr(op.name), found)
    elif kind == "Merge":
        _check_merge(op, ctx)


def _check_back_edge(op: Operation, ctx: Any, index: _Index) -> None:
    users = index.consumers_of(op.outputs[0])
    if not users or any(
        u.type != "Merge"
        or u.control_flow_context is not ctx
        or len(u.inputs) != 2
        or u.inputs[1] is not op.outputs[0]
        for u in users
    ):
        _fail(
            op,
            "a NextIteration that is not the back edge of its loop's Merge",
            f"input 1 of one Merge of {_ctx_name(ctx)}",
            ", ".join(f"{u.name} ({u.type})" for u in users) or "no consumer",
        )


def _is_loop_switch_of(op: Operation, loop: Any) -> bool:
    return (
        op.type == "Switch"
        and op.control_flow_context is loop
        and loop.loop_cond is not None
        and op.inputs[1] is loop.loop_cond
    )


def _check_merge(op: Operation, ctx: Any) -> None:
    first = op.inputs[0].op
    is_loop = first.type == "Enter" and first.control_flow_context is ctx and ctx is not None
    if is_loop and not first.get_attr("is_constant"):
        back = op.inputs[1].op if len(op.inputs) == 2 else None
        if back is None or back.type != "NextIteration" or back.control_flow_context is not ctx:
            _fail(
                op,
                "a loop variable's Merge without its back edge",
                f"Merge(Enter, NextIteration) of {_ctx_name(ctx)}",
                f"Merge({', '.join(f'{t.name} ({t.op.type})' for t in op.inputs)})",
            )
        return
    if any(t.op.type == "NextIteration" for t in op.inputs):
        if ctx is None:
            return  # a loop built by hand from the raw ops (see `_check_frame`)
        _fail(
            op,
            "a NextIteration feeds a Merge that does not start a loop variable",
            f"Merge(Enter of {_ctx_name(ctx)}, NextIteration)",
            f"Merge({', '.join(f'{t.name} ({t.op.type})' for t in op.inputs)})",
        )
    # A cond's Merge: the inputs that come from branches come from the two of one cond.
    branches = []
    for t in op.inputs:
        source = output_context(t.op)
        if source is ctx:
            continue
        while source is not None and source.outer_context is not ctx:
            source = source.outer_context
        branches.append(source)
    if not branches:
        return
    conds = [b for b in branches if isinstance(b, CondContext)]
    preds = {id(b.pred) for b in conds}
    if (
        len(conds) != len(branches)
        or len(branches) != len(op.inputs)
        or len(preds) != 1
        or sorted(b.branch for b in conds) != [0, 1]
    ):
        _fail(
            op,
            "a Merge that does not join the two branches of one cond",
            f"one input from each branch of a cond in {_ctx_name(ctx)}",
            ", ".join(f"{t.name} from {_ctx_name(b)}" for t, b in zip(op.inputs, branches)),
        )


def _check_cond_pivot(ctx: CondContext) -> None:
    pivot = ctx.pivot
    if pivot is None:  # a gradient branch builds its pivot when an op first needs it
        return
    switch = pivot.op.inputs[0].op if pivot.op.type == "Identity" else None
    if (
        switch is None
        or switch.type != "Switch"
        or pivot.op.inputs[0].value_index != ctx.branch
        or switch.inputs[0] is not switch.inputs[1]
        or pivot.op.control_flow_context is not ctx.outer_context
    ):
        _fail(
            pivot.op,
            f"the pivot of {_ctx_name(ctx)} is not built as a cond's",
            f"Identity(Switch(pred, pred)[{ctx.branch}]) in {_ctx_name(ctx.outer_context)}",
            f"{pivot.name} ({pivot.op.type}) in {_ctx_name(pivot.op.control_flow_context)}",
        )


# -- every loop -------------------------------------------------------------------------------
def _check_loop(loop: Any, index: _Index) -> None:
    """Each loop variable: Enter -> Merge(Enter, NextIteration) -> Switch(Merge, LoopCond),
    and an Exit on the Switch's false side (the per-op checks see each piece's own wiring)."""
    loop_conds = index.of(loop, "LoopCond")
    anchor = next(iter(index.by_context.get(loop, ())), None)
    if loop.loop_cond is None or len(loop_conds) != 1:
        if anchor is not None:
            _fail(
                anchor,
                f"its {_ctx_name(loop)} does not have one LoopCond",
                "exactly one",
                ", ".join(c.name for c in loop_conds) or "none",
            )
        return
    for merge in index.of(loop, "Merge"):
        if not any(t.op.type == "NextIteration" for t in merge.inputs):
            continue
        users = index.consumers_of(merge.outputs[0])
        if not any(_is_loop_switch_of(u, loop) and u.inputs[0] is merge.outputs[0] for u in users):
            _fail(
                merge,
                "a loop variable's Merge that no Switch on its loop's LoopCond reads",
                f"Switch({merge.name}, {loop.loop_cond.name})",
                ", ".join(f"{u.name} ({u.type})" for u in users) or "no consumer",
            )
    # A gradient's backward loop (autodiff's GradWhileContext, which knows its forward loop)
    # leaves out the Exit of a loop variable whose gradient nothing outside needs: the gradient
    # of a forward loop variable whose initial value does not depend on the xs, as in TF1.
    backward = getattr(loop, "forward_context", None) is not None
    for switch in index.of(loop, "Switch"):
        if not _is_loop_switch_of(switch, loop):
            continue
        false_users = index.consumers_of(switch.outputs[0])
        if (not false_users and not backward) or any(u.type != "Exit" for u in false_users):
            _fail(
                switch,
                "a loop variable's Switch without its Exit on the false side",
                f"an Exit of {_ctx_name(loop)} reading output 0",
                ", ".join(f"{u.name} ({u.type})" for u in false_users) or "no consumer",
            )
        true_users = index.consumers_of(switch.outputs[1])
        if any(u.type == "Exit" for u in true_users):
            _fail(
                switch,
                "an Exit on the true side of a loop's Switch",
                "the body reading output 1",
                ", ".join(u.name for u in true_users if u.type == "Exit"),
            )
