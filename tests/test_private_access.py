"""No module reaches into private attributes that another package owns.

A package is a folder of sluice: `sluice/framework/<stage>` (ir, ops, compiler, ...), the modules
at the root of `sluice/framework`, `sluice/_keras/<pkg>` and `sluice/_tf1/<pkg>` (or, before the
regrouping, `sluice/<pkg>`), and the modules at the root of `sluice`. Subfolders belong to their
package (`framework/ops/math/` is part of `framework/ops`).

For every `obj._name` in a module (`obj` not `self` or `cls`, `_name` not a dunder), the test
finds the modules that define `_name`: assign `self._name` or `cls._name`, define `_name` in a
class body, or bind `_name` at module level (a private module `_name.py` counts as defined by its
package). The access is refused when `_name` is defined in
sluice and no module of the accessing module's own package defines it: the owner should offer a
public, documented method or property, or the code should move to the owner. It also refuses

* assignments (`X.attr = ...`, `setattr(X, ...)`, `del X.attr`) on a class or module imported
  from another package: patching a class from outside it;
* `from <another package's module> import _private`, and imports from another package's private
  module (`from sluice.framework.ops._util import f`).

The private modules at the root of sluice (`sluice/_version.py`, `sluice/_module_paths.py`, ...)
belong to no package: they are what every package shares, so importing them is no reach.
"""

import ast
import pathlib
from collections import defaultdict

ROOT = pathlib.Path(__file__).parents[1] / "sluice"
GROUPS = {"framework", "_keras", "_tf1"}  # folders whose subfolders are the packages

# Private names that are public API of the standard library (namedtuple's methods).
STDLIB_PUBLIC = {"_replace", "_asdict", "_fields", "_make", "_field_defaults"}


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_of(path: pathlib.Path) -> tuple[str, ...]:
    """The package (a folder under sluice) a module belongs to."""
    folders = path.relative_to(ROOT).parts[:-1]
    if folders and folders[0] in GROUPS:
        return folders[:2]
    return folders[:1]


def package_of_module(name: str) -> tuple[str, ...] | None:
    """The package of a dotted `sluice...` module name (None when outside sluice)."""
    parts = name.split(".")
    if parts[0] != "sluice":
        return None
    base = ROOT.joinpath(*parts[1:])
    if base.is_dir():
        return package_of(base / "__init__.py")
    return package_of(base.with_suffix(".py"))


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


# The node types `assigned_targets` looks into (one isinstance per node for the others: the test
# walks every node of sluice twice).
ASSIGNING = (
    ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.comprehension, ast.With,
    ast.AsyncWith, ast.NamedExpr, ast.Delete,
)  # fmt: skip


def assigned_targets(node: ast.AST) -> list[ast.expr]:
    if not isinstance(node, ASSIGNING):
        return []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        targets = [node.target]
    elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        targets = [node.target]
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        targets = [item.optional_vars for item in node.items if item.optional_vars]
    elif isinstance(node, ast.NamedExpr):
        targets = [node.target]
    elif isinstance(node, ast.Delete):
        targets = node.targets
    else:
        return []
    flat, targets = [], list(targets)
    while targets:
        target = targets.pop()
        if isinstance(target, (ast.Tuple, ast.List)):
            targets.extend(target.elts)
        elif isinstance(target, ast.Starred):
            targets.append(target.value)
        else:
            flat.append(target)
    return flat


def bound_names(node: ast.stmt) -> list[str]:
    """The names a module-level or class-body statement binds."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in node.names]
    names = [t.id for t in assigned_targets(node) if isinstance(t, ast.Name)]
    if isinstance(node, (ast.If, ast.Try)):
        for block in [node.body, node.orelse, *[h.body for h in getattr(node, "handlers", [])]]:
            for child in block:
                names.extend(bound_names(child))
    return names


class Module:
    def __init__(self, path: pathlib.Path):
        self.path = path
        self.name = module_name(path)
        self.package = package_of(path)
        self.tree = ast.parse(path.read_text(), str(path))
        self.nodes = list(ast.walk(self.tree))  # walked once, read by _collect and violations
        self.defines: set[str] = set()
        self.imported: dict[str, str] = {}  # local name -> the sluice module it comes from
        self._collect()

    def resolve(self, node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        base = self.name.split(".")
        if self.path.name != "__init__.py":
            base.pop()
        base = base[: len(base) - node.level + 1]
        return ".".join(base + ([node.module] if node.module else []))

    def _collect(self) -> None:
        for stmt in self.tree.body:
            self.defines.update(n for n in bound_names(stmt) if is_private(n))
        for node in self.nodes:
            if isinstance(node, ast.ClassDef):
                for stmt in node.body:
                    self.defines.update(n for n in bound_names(stmt) if is_private(n))
            for target in assigned_targets(node):
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id in ("self", "cls")
                    and is_private(target.attr)
                ):
                    self.defines.add(target.attr)
            if isinstance(node, ast.Global):
                self.defines.update(n for n in node.names if is_private(n))
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("sluice"):
                        local = alias.asname or alias.name.split(".")[0]
                        self.imported[local] = alias.name if alias.asname else "sluice"
            elif isinstance(node, ast.ImportFrom):
                source = self.resolve(node)
                if source.startswith("sluice"):
                    for alias in node.names:
                        self.imported[alias.asname or alias.name] = f"{source}.{alias.name}"

    def foreign(self, name: str) -> bool:
        """Whether a local name is bound to a module or object of another package."""
        source = self.imported.get(name)
        if source is None:
            return False
        # `from sluice.a import b`: b is a module of its own, or a name defined in sluice.a
        package = package_of_module(source)
        if package is None or not ROOT.joinpath(*source.split(".")[1:]).exists():
            package = package_of_module(source.rpartition(".")[0])
        return package is not None and package != self.package


def modules() -> list[Module]:
    return [Module(p) for p in sorted(ROOT.rglob("*.py"))]


def root_name(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def violations() -> list[str]:
    mods = modules()
    owners: dict[str, set[tuple[str, ...]]] = defaultdict(set)
    for mod in mods:
        for name in mod.defines:
            owners[name].add(mod.package)
        if is_private(mod.path.stem) and mod.package:
            owners[mod.path.stem].add(mod.package)
    found = []
    for mod in mods:
        where = f"{mod.path.relative_to(ROOT.parent)}"
        for node in mod.nodes:
            if (
                isinstance(node, ast.Attribute)
                and is_private(node.attr)
                and node.attr not in STDLIB_PUBLIC
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
                and owners.get(node.attr)
                and mod.package not in owners[node.attr]
            ):
                owner = sorted("/".join(p) or "sluice" for p in owners[node.attr])
                found.append(f"{where}:{node.lineno}: .{node.attr} is owned by {owner}")
            for target in assigned_targets(node):
                if isinstance(target, ast.Attribute) and mod.foreign(root_name(target) or ""):
                    found.append(f"{where}:{node.lineno}: assigns {ast.unparse(target)}")
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("setattr", "delattr")
                and node.args
                and mod.foreign(root_name(node.args[0]) or "")
            ):
                found.append(
                    f"{where}:{node.lineno}: {node.func.id} on {ast.unparse(node.args[0])}"
                )
            if isinstance(node, ast.ImportFrom):
                source = mod.resolve(node)
                package = package_of_module(source)
                if package is None or package == mod.package:
                    continue
                inside = source.split(".")[1 + len(package) :]  # the path below the package
                if package and any(is_private(part) for part in inside):
                    found.append(f"{where}:{node.lineno}: imports from private module {source}")
                for alias in node.names:
                    shared = not package and (ROOT / f"{alias.name}.py").exists()
                    if is_private(alias.name) and not shared:
                        found.append(f"{where}:{node.lineno}: imports {alias.name} from {source}")
    return found


def test_no_private_access_across_packages():
    found = violations()
    assert not found, f"{len(found)} private accesses across packages:\n" + "\n".join(found)


if __name__ == "__main__":
    for line in violations():
        print(line)
