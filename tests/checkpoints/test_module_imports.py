"""The modules of sluice/checkpoints import each other one way (no circle), counting every
import, function-level ones included: `meta_graph` imports `saver` (it rebuilds Savers), and
`saver` reaches meta graph files through `meta_graph_files` only."""

import ast
import pathlib

PACKAGE = pathlib.Path(__file__).parents[2] / "sluice" / "checkpoints"
PREFIX = "sluice.checkpoints"


def imported_siblings(path: pathlib.Path) -> set[str]:
    """The sibling modules (by name) that `path` imports anywhere in its code."""
    siblings = {p.stem for p in PACKAGE.glob("*.py")}
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            if name.startswith(PREFIX + "."):
                head = name[len(PREFIX) + 1:].split(".")[0]
                if head in siblings:
                    found.add(head)
    return found - {path.stem}


def find_circle(graph: dict[str, set[str]]) -> list[str] | None:
    """A circle of imports ["a", "b", "a"], or None."""
    done: set[str] = set()

    def visit(node: str, trail: list[str]) -> list[str] | None:
        if node in trail:
            return trail[trail.index(node):] + [node]
        if node in done:
            return None
        for nxt in sorted(graph.get(node, ())):
            circle = visit(nxt, trail + [node])
            if circle:
                return circle
        done.add(node)
        return None

    return next(filter(None, (visit(node, []) for node in sorted(graph))), None)


def test_checkpoint_modules_import_each_other_without_a_circle():
    graph = {p.stem: imported_siblings(p) for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    assert "meta_graph" not in graph["saver"], graph["saver"]
    assert find_circle(graph) is None, " -> ".join(find_circle(graph))


def test_the_circle_finder_finds_one():
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": {"b"}}) == ["b", "c", "b"]
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
