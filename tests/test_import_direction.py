"""Imports flow one way. Between sluice's packages, from the Keras side down to the framework:

    models  ->  callbacks, saving, metrics  ->  losses  ->  layers  ->  cells, optimizers,
    checkpoints, utils  ->  framework

and in sluice/framework, from the stages a graph goes through:

    ir  <-  ops <-  control_flow contexts  <-  control_flow builders (cond, while_loop)
        <-  autodiff
    ir  <-  prune;   engines (interpreter, compiler) import ir, ops, contexts and prune only
    native (sluice's own kernels, imports nothing of sluice)  <-  compiler
    session imports the engines; nothing below it imports the session

Every import counts, function-level ones included (only `if TYPE_CHECKING:` blocks, which never
run, are left out): for the direction, and for cycles anywhere in the package, which are refused
but for the few named in `CYCLE_EXCEPTIONS`, each with its reason.
"""

import ast
import functools
import pathlib

import pytest

ROOT = pathlib.Path(__file__).parents[1] / "sluice"
FRAMEWORK = ROOT / "framework"

CONTEXTS = {"context", "cond_context", "while_context", "structure", "checks"}
ALLOWED = {
    "ir": {"ir"},
    "ops": {"ir", "ops"},
    "contexts": {"ir", "ops", "contexts"},
    "builders": {"ir", "ops", "contexts", "builders"},
    "autodiff": {"ir", "ops", "contexts", "builders", "autodiff"},
    "variables": {"ir", "ops", "variables"},
    "prune": {"ir", "prune"},
    "placement": {"ir", "ops", "contexts", "prune", "placement"},
    "interpreter": {"ir", "ops", "contexts", "prune", "placement", "interpreter"},
    "native": {"native"},
    "compiler": {"ir", "ops", "contexts", "prune", "native", "compiler"},
    "session": {
        "ir",
        "ops",
        "contexts",
        "prune",
        "placement",
        "interpreter",
        "compiler",
        "native",
        "variables",
        "session",
    },
    # graph_defs and meta graphs: rebuilds contexts (backward loops too) and Variables
    "graph_def": {"ir", "ops", "contexts", "builders", "autodiff", "variables", "graph_def"},
}


# the modules at the root of sluice/framework, by the stage they belong to
ROOT_MODULES = {
    "session": "session",
    "session_config": "session",
    "config_protos": "session",
    "feeds": "session",
    "step_stats": "session",
    "timeline": "session",
    "prune": "prune",
    "variables": "variables",
    "partitioned_variables": "variables",
    "variable_updates": "variables",
    "variable_scatter_nd": "variables",
    "state_cells": "variables",
}


def stage(module: str) -> str | None:
    """The stage of a `sluice.framework...` module (None for the package itself)."""
    parts = module.split(".")[2:]
    if not parts:
        return None
    head = parts[0]
    if len(parts) == 1 and head in ROOT_MODULES:
        return ROOT_MODULES[head]
    if head == "control_flow":
        return "contexts" if len(parts) > 1 and parts[1] in CONTEXTS else "builders"
    return head if head in ALLOWED else None


def module_name(path: pathlib.Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: pathlib.Path, top_level_only: bool = False) -> list[tuple[int, str]]:
    """(line, module) of every import that runs (or only those run when the module is
    imported), resolved to module names."""
    return [
        (line, m) for line, m, in_function in _imports(path) if not (top_level_only and in_function)
    ]


@functools.cache
def _imports(path: pathlib.Path) -> tuple[tuple[int, str, bool], ...]:
    """(line, sluice module, whether inside a function) of every import of `path`, less those
    in `if TYPE_CHECKING:` blocks (they never run); one pass over the parsed file."""
    found: list[tuple[int, str, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child, in_function)
            return
        if isinstance(node, ast.Import):
            found.extend((node.lineno, a.name, in_function) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                candidate = f"{node.module}.{a.name}"
                found.append(
                    (node.lineno, candidate if _is_module(candidate) else node.module, in_function)
                )
        inside = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for child in ast.iter_child_nodes(node):
            visit(child, inside)

    visit(ast.parse(path.read_text()), False)
    return tuple(f for f in found if f[1].startswith("sluice"))


@functools.cache
def _is_module(name: str) -> bool:
    where = ROOT.parent / name.replace(".", "/")
    return where.with_suffix(".py").exists() or where.is_dir()


MODULES = sorted(FRAMEWORK.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(FRAMEWORK)))
def test_imports_follow_the_stages(path):
    here = stage(module_name(path))
    wrong = []
    for line, target in imports_of(path):
        if target == "sluice._export":
            continue  # the @export declarations, which import nothing of sluice
        if not target.startswith("sluice.framework"):
            wrong.append(f"line {line}: {target} (outside sluice.framework)")
            continue
        there = stage(target)
        if here is not None and there is not None and there not in ALLOWED[here]:
            wrong.append(f"line {line}: {target} ({here} may not import {there})")
    where = path.relative_to(ROOT.parent)
    assert not wrong, f"{where} imports against the stages:\n" + "\n".join(wrong)


def test_the_stages_cover_every_module():
    missing = [
        str(p.relative_to(ROOT))
        for p in MODULES
        if stage(module_name(p)) is None and p != FRAMEWORK / "__init__.py"
    ]
    assert not missing, f"give these modules a stage (ALLOWED, ROOT_MODULES): {missing}"


# -- the op families, in framework/ops --------------------------------------------------------
# lowest first: a module imports only its own family and lower ones (framework/ops/__init__.py);
# all of them are the 'ops' stage above
OPS_FAMILIES = [
    "core",
    "array",
    "math",
    "linalg",
    "random",
    "nn",
    "control",
    "state",
    "host",
    "composite",
    "sparse",
]
OPS = FRAMEWORK / "ops"


def ops_family(module: str) -> str | None:
    """The family of a `sluice.framework.ops.<family>...` module (None for the package)."""
    parts = module.split(".")
    return parts[3] if len(parts) > 3 and parts[:3] == ["sluice", "framework", "ops"] else None


def test_every_ops_module_is_in_a_family():
    loose = [p.name for p in OPS.glob("*.py") if p.name != "__init__.py"]
    unknown = [p.name for p in OPS.iterdir() if p.is_dir() and p.name not in OPS_FAMILIES]
    assert not loose, f"put these op modules in a family folder: {loose}"
    assert not [u for u in unknown if u != "__pycache__"], f"add to OPS_FAMILIES: {unknown}"


@pytest.mark.parametrize("path", sorted(OPS.rglob("*.py")), ids=lambda p: str(p.relative_to(OPS)))
def test_op_families_import_only_lower_ones(path):
    here = ops_family(module_name(path))
    if here is None:
        return
    wrong = [
        f"line {line}: {target}"
        for line, target in imports_of(path)
        if (there := ops_family(target)) is not None
        and OPS_FAMILIES.index(there) > OPS_FAMILIES.index(here)
    ]
    where = path.relative_to(ROOT.parent)
    assert not wrong, f"{where} ({here}) imports a higher op family:\n" + "\n".join(wrong)


# -- cycles, anywhere in the package ---------------------------------------------------------
# (importer, imported) pairs allowed to close a cycle, with why; each must still exist.
CYCLE_EXCEPTIONS: dict[tuple[str, str], str] = {}


@functools.cache  # both tests below read it; parsing every module takes seconds
def _import_graph() -> tuple[dict[str, set[str]], set[tuple[str, str]]]:
    """Every module's imports of other sluice modules, less the allowed edges (also returned,
    the exceptions among them)."""
    paths = {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    excepted: set[tuple[str, str]] = set()
    for module, path in paths.items():
        everything = {m for _, m in imports_of(path)}
        edges = set()
        for target in everything:
            if target not in paths or target == module:
                continue
            if (module, target) in CYCLE_EXCEPTIONS:
                excepted.add((module, target))
                continue
            edges.add(target)
        graph[module] = edges
    return graph, excepted


def test_no_import_cycle_anywhere():
    graph, _ = _import_graph()
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                return path[path.index(t) :] + [t]
            if t not in state and (cycle := visit(t)):
                return cycle
        state[m] = 2
        path.pop()
        return None

    for m in sorted(graph):
        if m not in state and (cycle := visit(m)):
            pytest.fail("import cycle: " + " -> ".join(cycle))


def test_every_cycle_exception_is_still_needed():
    _, excepted = _import_graph()
    stale = set(CYCLE_EXCEPTIONS) - excepted
    assert not stale, f"these imports are gone: remove them from CYCLE_EXCEPTIONS: {stale}"


# -- between packages -------------------------------------------------------------------------
# The implementation (sluice/_keras, sluice/_tf1) by package, keyed "_keras.layers",
# "_tf1.cells", ...; a top-level module there ("_tf1.flags") is a package of its own.
IMPLEMENTATION_LEVELS = {
    "_tf1.cells": 1,
    "_keras.optimizers": 1,
    "_tf1.optimizers": 1.25,  # the TF1 classes over the Keras Optimizer
    "_tf1.checkpoints": 1,
    "_keras.utils": 1,
    "_keras.distribution": 1,
    "_keras.config": 0.5,  # Keras's settings: nothing of sluice below them
    "_keras.tree": 0.5,  # keras.tree and tf.nest: only the shared walker, sluice/_structures.py
    "_tf1.nest": 0.5,
    # sl.Array, what calls on arrays return (layers and sl.ops) and sl.data yields: NumPy only
    "_keras.array": 0.5,
    "_tf1.gfile": 1,
    "_tf1.device_lib": 1,  # TF1's device_lib over the engine's device list
    "_tf1.gen_control_flow_ops": 1,  # the raw control-flow primitives
    "_tf1.resource_variable_ops": 1,  # the raw resource-variable ops on a handle
    "_tf1.tensor_array_grad": 1,  # TF1's _GetGradSource (names only)
    "_tf1.function": 1,  # TF1's Defun and functional ops, inlined into the engine's ops
    "_tf1.gen_sparse_ops": 1,  # the raw sparse ops on three tensors
    "_tf1.gen_data_flow_ops": 1,  # the raw TensorArray read
    "_tf1.data": 1,
    "_keras.utils.data": 1.25,  # keras.utils functions over sl.data (MODULE_PACKAGES)
    "_tf1.queues": 1,
    "_tf1.nn": 1,
    "_tf1.embedding_sparse": 1.5,  # over `_tf1.nn`'s embedding_lookup
    "_keras.saving.serialization": 1.5,  # the Keras registry, below the layers that use it
    "_keras.random": 1.6,  # keras.random: SeedGenerator, below the initializers that draw
    # Keras's activations, initializers and regularizers, beside layers/ as in Keras 3
    "_keras.activations": 1.75,
    "_keras.initializers": 1.75,
    "_keras.regularizers": 1.75,
    "_keras.constraints": 1.75,
    "_keras.layers": 2,
    "_tf1.layers": 2.25,  # the TF1 functional layers use the Keras activations
    "_tf1.summary": 2,
    "_keras.losses": 3,
    "_tf1.losses": 3,
    "_keras.metrics": 4,
    "_tf1.metrics": 4,
    "_keras.saving": 4,
    "_keras.callbacks": 4,
    "_keras.models": 5,
    "_tf1.training": 5,
    "_keras.ops": 6,
    "_keras.backend": 6,  # keras.backend: settings, dtypes and tensors, clear_session
    "_keras.datasets": 6,
    "_keras.applications": 6,
    "_tf1.contrib": 6,
    "_tf1.estimator": 6,  # tf.estimator over the monitored sessions, hooks, metrics, data
    "_tf1.image": 6,
    "_tf1.random": 6,
    # tf.flags and tf.logging need nothing of sluice; tf.app parses tf.flags
    "_tf1.flags": 1,
    "_tf1.logging": 1,
    "_tf1.app": 6,
}

LEVELS = {
    "cells": 1,
    "optimizers": 1,
    "checkpoints": 1,
    "utils": 1,
    "distribution": 1,
    "config": 1,
    "gfile": 1,
    "data": 1,
    "queues": 1,
    "layers": 2,
    "summary": 2,
    "losses": 3,
    "metrics": 4,
    "saving": 4,
    "callbacks": 4,
    "models": 5,
    "training": 5,
    "nn": 6,
    "ops": 6,
    "train": 6,
    "debugging": 6,
    "datasets": 6,
    "applications": 6,
    "contrib": 6,
    "compat": 6,
    "io": 6,
    "client": 6,
    "math": 6,
    "linalg": 6,
    "initializers": 6,
    "image": 6,
    "random": 6,
    "flags": 1,
    "logging": 1,
    "app": 6,
}

LEVELS = {
    "framework": 0,
    "_version": 0,
    "_module_paths": 0,
    "_structures": 0,  # the walk over nested structures that sl.tree and sl.nest share
    "_export": -1,  # the @export declarations: imports nothing of sluice, below everything
    "_host_memory": -1,  # the allocator setting made at import: imports nothing of sluice
    "_namespaces": 7,  # builds the public namespaces from everything below
    "_keras": 0,  # the bare packages sluice/_keras and sluice/_tf1 (a docstring each)
    "_tf1": 0,
    "testing": 6.5,
    **IMPLEMENTATION_LEVELS,
}


# Single modules that sit at a level of their own, apart from their package's: Keras's
# serialization (keras/src/saving/serialization_lib.py) lives in saving/ but below the layers,
# which deserialize the layers and functions their configs name.
MODULE_PACKAGES = {
    "sluice._keras.saving.serialization": "_keras.saving.serialization",
    # get/serialize/deserialize of initializers, constraints, ... (which the layers use)
    "sluice._keras.saving.families": "_keras.saving.serialization",
    # keras.utils functions that build sl.data datasets: above sl.data, below the layers
    "sluice._keras.utils.timeseries_dataset_utils": "_keras.utils.data",
    "sluice._keras.utils.dataset_utils": "_keras.utils.data",
}


def package_of(module: str) -> str | None:
    """ "layers" for the namespace sluice.layers, "_keras.layers" for the implementation in
    sluice._keras.layers...; None for sluice/__init__.py, which may use all."""
    if module in MODULE_PACKAGES:
        return MODULE_PACKAGES[module]
    parts = module.split(".")
    if len(parts) > 2 and parts[1] in ("_keras", "_tf1"):
        return f"{parts[1]}.{parts[2]}"
    return parts[1] if len(parts) > 1 else None


@pytest.mark.parametrize("path", sorted(ROOT.rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_packages_import_only_lower_levels(path):
    here = package_of(module_name(path))
    if here is None:
        return
    assert here in LEVELS, f"{here}: give the new package a level in LEVELS"
    wrong = [
        f"line {line}: {target}"
        for line, target in imports_of(path)
        if package_of(target) not in (None, here)
        and LEVELS[package_of(target)] >= LEVELS[here]
        and (module_name(path), target) not in CYCLE_EXCEPTIONS  # each named with its reason
    ]
    where = f"{path.relative_to(ROOT.parent)} ({here})"
    assert not wrong, f"{where} imports a package of its level or above:\n" + "\n".join(wrong)


# -- the public namespaces are built last, from the implementation --------------------------
# `sluice` and its namespaces (sl.nn, sl.layers, ...) exist only once every implementation
# module has been imported (sluice/_namespaces.py), so no implementation module may import
# them, but for the one below.
ROOT_IMPORTS = {
    "sluice._keras.saving.serialization": "a saved lambda is rebuilt with `sl` in its globals, "
    "when a model is loaded (a function-level import, after the namespaces exist)",
}


@pytest.mark.parametrize("path", sorted(ROOT.rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_implementation_never_imports_the_public_namespaces(path):
    module = module_name(path)
    if module in ("sluice", "sluice._namespaces") or module.startswith("sluice.testing"):
        return  # the root builds the namespaces; the public test helpers are written against them
    wrong = [f"line {line}" for line, target in imports_of(path) if target == "sluice"]
    if module in ROOT_IMPORTS:
        assert wrong, f"{module} no longer imports sluice: remove it from ROOT_IMPORTS"
        return
    assert not wrong, f"{module} imports the public namespaces (`sluice`): " + ", ".join(wrong)
