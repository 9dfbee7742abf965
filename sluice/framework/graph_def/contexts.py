"""Control-flow contexts in a graph_def: each cond branch and while frame, so that an imported
graph is lowered (and differentiated) as the original is.

The compiled engine finds loops and cond regions through `op.control_flow_context`, not through
the op types alone, so a graph_def keeps every context with its fields and the tensors it names
(`pred`, `pivot`, `loop_exits`, ...), and every node names its context by index. Contexts are
listed outer first; a backward loop names its forward loop (`forward`), and the two branches of a
cond (and of a cond's gradient) share a `family`, the table of gradient branches built for them.

    {"kind": "while" | "grad_while" | "cond" | "grad_cond", "outer": index | null, "name": ...,
     while: "parallel_iterations", "back_prop", "swap_memory", "unroll", "maximum_iterations"
            (int, {"tensor": name} or null), "pivot_for_pred", "pivot_for_body", "loop_cond",
            "counter", "loop_enters", "loop_exits", "control_tokens": [[[op names], tensor]],
     grad_while: + "forward": index,
     cond: "pred", "pivot", "branch", "family", "gradient_branches": [[outer, false, true]],
     all: "captured": [[outside tensor, inside tensor]]}
"""

from __future__ import annotations

from typing import Any, Callable

from sluice.framework.autodiff.loop_state import GradWhileContext
from sluice.framework.control_flow.cond_context import CondContext, GradCondContext
from sluice.framework.control_flow.while_context import WhileContext
from sluice.framework.ir.graph import Operation, Tensor

_KINDS = {
    GradWhileContext: "grad_while",
    WhileContext: "while",
    GradCondContext: "grad_cond",
    CondContext: "cond",
}


class ContextFormatError(ValueError):
    """A context entry that sluice would not have written."""


def collect(ops: list[Operation]) -> list[Any]:
    """Every context the ops belong to or refer to, each after the ones it names."""
    found: list[Any] = []
    seen: set[int] = set()

    def visit(ctx: Any) -> None:
        if ctx is None or id(ctx) in seen:
            return
        if type(ctx) not in _KINDS:
            raise TypeError(
                f"A control-flow context of type {type(ctx).__name__} cannot be "
                "saved in a graph_def."
            )
        seen.add(id(ctx))
        visit(ctx.outer_context)
        visit(getattr(ctx, "forward_context", None))
        for outer, pair in getattr(ctx, "_gradients", {}).items():
            visit(outer)
            for branch in pair:
                visit(branch.outer_context)
        found.append(ctx)
        for pair in getattr(ctx, "_gradients", {}).values():
            for branch in pair:
                visit(branch)

    for op in ops:
        visit(op.control_flow_context)
    return found


def encode(contexts: list[Any], tensor_name: Callable[[Tensor], str]) -> list[dict]:
    index = {id(c): i for i, c in enumerate(contexts)}
    families: dict[int, int] = {}

    def ref(ctx: Any) -> int | None:
        return None if ctx is None else index[id(ctx)]

    def name_of(t: Tensor | None) -> str | None:
        return None if t is None else tensor_name(t)

    out = []
    for ctx in contexts:
        kind = _KINDS[type(ctx)]
        entry: dict[str, Any] = {
            "kind": kind,
            "outer": ref(ctx.outer_context),
            "name": ctx.name,
            "captured": [[tensor_name(a), tensor_name(b)] for a, b in ctx.captured.items()],
        }
        if ctx.is_while:
            bound = ctx.maximum_iterations
            entry.update(
                parallel_iterations=ctx.parallel_iterations,
                back_prop=ctx.back_prop,
                swap_memory=ctx.swap_memory,
                unroll=ctx.unroll,
                maximum_iterations=(
                    {"tensor": tensor_name(bound)} if isinstance(bound, Tensor) else bound
                ),
                pivot_for_pred=name_of(ctx.pivot_for_pred),
                pivot_for_body=name_of(ctx.pivot_for_body),
                loop_cond=name_of(ctx.loop_cond),
                counter=name_of(ctx.counter),
                loop_enters=[tensor_name(t) for t in ctx.loop_enters],
                loop_exits=[tensor_name(t) for t in ctx.loop_exits],
                control_tokens=[
                    [sorted(op.name for op in key), tensor_name(t)]
                    for key, t in ctx.control_tokens.items()
                ],
            )
            if kind == "grad_while":
                entry["forward"] = ref(ctx.forward_context)
        else:
            family = families.setdefault(id(ctx.gradient_table), len(families))
            entry.update(
                pred=name_of(ctx.pred),
                pivot=name_of(ctx.pivot),
                branch=ctx.branch,
                family=family,
                gradient_branches=[
                    [ref(outer), ref(pair[0]), ref(pair[1])]
                    for outer, pair in ctx.gradient_table.items()
                ],
            )
        out.append(entry)
    return out


_COMMON = {"kind", "outer", "name", "captured"}
_FIELDS = {
    "while": _COMMON
    | {
        "parallel_iterations",
        "back_prop",
        "swap_memory",
        "unroll",
        "maximum_iterations",
        "pivot_for_pred",
        "pivot_for_body",
        "loop_cond",
        "counter",
        "loop_enters",
        "loop_exits",
        "control_tokens",
    },
    "cond": _COMMON | {"pred", "pivot", "branch", "family", "gradient_branches"},
}
_FIELDS["grad_while"] = _FIELDS["while"] | {"forward"}
_FIELDS["grad_cond"] = _FIELDS["cond"]


def _check(entry: Any, i: int, count: int) -> None:
    def fail(problem: str) -> None:
        raise ContextFormatError(f"control-flow context {i}: {problem}")

    if not isinstance(entry, dict) or entry.get("kind") not in _FIELDS:
        fail(f"an object with a kind in {sorted(_FIELDS)} expected")
    fields = _FIELDS[entry["kind"]]
    if set(entry) != fields:
        fail(f"missing {sorted(fields - set(entry))}, unexpected {sorted(set(entry) - fields)}")
    refs = [entry["outer"]] + ([entry["forward"]] if "forward" in entry else [])
    for ref in refs:
        if ref is not None and (type(ref) is not int or not 0 <= ref < i):
            fail(f"refers to context {ref!r}, which is not listed before it")
    if not isinstance(entry["name"], str):
        fail("its name is not a string")
    if entry["kind"] in ("while", "grad_while"):
        for key in ("parallel_iterations", "unroll"):
            if type(entry[key]) is not int or not 1 <= entry[key] <= 1 << 20:
                fail(f"{key} must be an int in [1, 2**20], got {entry[key]!r}")
        for key in ("back_prop", "swap_memory"):
            if type(entry[key]) is not bool:
                fail(f"{key} must be a bool, got {entry[key]!r}")
        bound = entry["maximum_iterations"]
        if not (
            bound is None
            or (type(bound) is int and bound >= 0)
            or (isinstance(bound, dict) and set(bound) == {"tensor"})
        ):
            fail(f"maximum_iterations must be null, an int or {{'tensor': name}}, got {bound!r}")
    else:
        if entry["branch"] not in (0, 1) or type(entry["branch"]) is not int:
            fail(f"branch must be 0 or 1, got {entry['branch']!r}")
        if type(entry["family"]) is not int:
            fail("family must be an int")
        for row in entry["gradient_branches"]:
            if (
                not isinstance(row, list)
                or len(row) != 3
                or not all(r is None or (type(r) is int and 0 <= r < count) for r in row)
            ):
                fail(f"gradient_branches rows are [outer, false, true] indices, got {row!r}")


def decode_structure(entries: Any, graph: Any, rename: Callable[[str], str]) -> list[Any]:
    """The context objects, with their nesting but no tensors yet (the ops come next)."""
    if not isinstance(entries, list):
        raise ContextFormatError("contexts must be a list")
    contexts: list[Any] = []
    families: dict[int, dict] = {}
    for i, entry in enumerate(entries):
        _check(entry, i, len(entries))
        outer = None if entry["outer"] is None else contexts[entry["outer"]]
        kind = entry["kind"]
        with graph.in_control_flow_context(outer):
            if kind in ("while", "grad_while"):
                cls = WhileContext if kind == "while" else GradWhileContext
                ctx = cls.__new__(cls)  # a backward loop's own __init__ wants a gradients walk
                bound = entry["maximum_iterations"]
                WhileContext.__init__(
                    ctx,
                    graph,
                    rename(entry["name"]),
                    entry["parallel_iterations"],
                    entry["back_prop"],
                    entry["swap_memory"],
                    bound if type(bound) is int else None,
                    entry["unroll"],
                )
                if kind == "grad_while":
                    forward = contexts[entry["forward"]]
                    if not isinstance(forward, WhileContext):
                        raise ContextFormatError(
                            f"control-flow context {i}: its forward context is not a loop"
                        )
                    ctx.grad_state = None  # only a gradients() walk in progress needs it
                    ctx.forward_context = forward
            else:
                shared = families.setdefault(entry["family"], {})
                if kind == "cond":
                    ctx = CondContext(
                        graph, None, None, entry["branch"], rename(entry["name"]), shared
                    )
                else:
                    ctx = GradCondContext(
                        graph, None, entry["branch"], rename(entry["name"]), shared
                    )
        contexts.append(ctx)
    for entry, ctx in zip(entries, contexts):
        for row in entry.get("gradient_branches", ()):
            outer = None if row[0] is None else contexts[row[0]]
            ctx.record_gradient_branches(outer, (contexts[row[1]], contexts[row[2]]))
    return contexts


def decode_tensors(
    entries: list,
    contexts: list[Any],
    tensor: Callable[[Any], Tensor],
    operation: Callable[[Any], Operation],
) -> None:
    """Fills in the tensors each context names, once every op exists."""

    def maybe(name: Any) -> Tensor | None:
        return None if name is None else tensor(name)

    for entry, ctx in zip(entries, contexts):
        for pair in entry["captured"]:
            if not isinstance(pair, list) or len(pair) != 2:
                raise ContextFormatError(f"context {ctx.name!r}: captured holds pairs of names")
            ctx.record_capture(tensor(pair[0]), tensor(pair[1]))
        if ctx.is_while:
            bound = entry["maximum_iterations"]
            if isinstance(bound, dict):
                ctx.maximum_iterations = _of_kind(
                    tensor(bound["tensor"]), ctx, "maximum_iterations", dtype_kind="i", rank=0
                )
            ctx.pivot_for_pred = maybe(entry["pivot_for_pred"])
            ctx.pivot_for_body = maybe(entry["pivot_for_body"])
            ctx.loop_cond = maybe(entry["loop_cond"])
            if ctx.loop_cond is not None:
                _of_kind(ctx.loop_cond, ctx, "loop_cond", op_type="LoopCond")
            ctx.counter = maybe(entry["counter"])
            ctx.loop_enters = [
                _of_kind(tensor(n), ctx, "loop_enters", op_type="Enter")
                for n in _names(entry["loop_enters"], ctx)
            ]
            ctx.loop_exits = [
                _of_kind(tensor(n), ctx, "loop_exits", op_type="Exit")
                for n in _names(entry["loop_exits"], ctx)
            ]
            for row in entry["control_tokens"]:
                if not isinstance(row, list) or len(row) != 2:
                    raise ContextFormatError(
                        f"context {ctx.name!r}: control_tokens holds [[op names], tensor] rows"
                    )
                key = frozenset(operation(n) for n in _names(row[0], ctx))
                ctx.record_control_token(key, tensor(row[1]))
        else:
            ctx.pred = _of_kind(tensor(entry["pred"]), ctx, "pred", dtype_kind="b", rank=0)
            ctx.pivot = maybe(entry["pivot"])


def _of_kind(
    t: Tensor,
    ctx: Any,
    field: str,
    op_type: str | None = None,
    dtype_kind: str | None = None,
    rank: int | None = None,
) -> Tensor:
    """`t` if it is what a context's `field` holds (the engines lower loops and conds by it)."""
    if (
        (op_type is not None and t.op.type != op_type)
        or (dtype_kind is not None and t.dtype.kind != dtype_kind)
        or (rank is not None and t.shape.rank not in (None, rank))
    ):
        made_by = (
            f"made by {'an' if op_type[0] in 'AEIOU' else 'a'} {op_type} op" if op_type else ""
        )
        want = " ".join(
            filter(
                None,
                [
                    f"rank-{rank}" if rank is not None else "",
                    {"i": "integer", "b": "bool"}.get(dtype_kind or "", ""),
                    "tensor",
                    made_by,
                ],
            )
        )
        raise ContextFormatError(
            f"context {ctx.name!r}: {field} must be a {want}, got {t.name} "
            f"({t.op.type}, {t.dtype.name}{t.shape})"
        )
    return t


def _names(value: Any, ctx: Any) -> list:
    if not isinstance(value, list):
        raise ContextFormatError(f"context {ctx.name!r}: a list of names expected, got {value!r}")
    return value
