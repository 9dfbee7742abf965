"""The public namespaces are built from `@export` declarations (sluice/_export.py,
sluice/_namespaces.py): each holds exactly its declared names."""

from __future__ import annotations

import importlib
import subprocess
import sys
import types

import pytest

import sluice
from sluice import _export, _namespaces


def namespaces() -> dict[str, types.ModuleType]:
    """Every public namespace by its path ("" for `sluice`), aliases left out."""
    found = {"": sluice}
    for path in _export.declared():
        parts = path.split(".")[:-1]
        for i in range(1, len(parts) + 1):
            prefix = ".".join(parts[:i])
            found.setdefault(prefix, importlib.import_module(f"sluice.{prefix}"))
    return found


@pytest.mark.parametrize("path", sorted(namespaces()))
def test_dir_of_a_namespace_is_its_all(path):
    namespace = namespaces()[path]
    public = {name for name in dir(namespace) if not name.startswith("_")}
    assert public == set(namespace.__all__)


@pytest.mark.parametrize("path", sorted(namespaces()))
def test_every_namespace_says_what_it_is(path):
    assert namespaces()[path].__doc__, f"give sluice.{path} a line in DOCS (sluice/_namespaces.py)"


def test_every_declared_path_resolves_to_its_object():
    for path, value in _export.declared().items():
        found = sluice
        for part in path.split("."):
            found = getattr(found, part)
        if not isinstance(value, _export.Lazy):
            assert found is value, path


def test_aliases_are_the_same_namespace():
    for path, target in _namespaces.ALIASES.items():
        alias = importlib.import_module(f"sluice.{path}")
        assert alias is (importlib.import_module(f"sluice.{target}") if target else sluice)


def test_a_path_declared_twice_is_refused():
    @_export.export("_tests_only.twice")
    def first():
        pass

    with pytest.raises(ValueError, match="declared twice"):
        _export.export("_tests_only.twice")(lambda: None)
    _export._DECLARED.pop("_tests_only.twice")


def test_a_path_must_be_dotted_identifiers():
    with pytest.raises(ValueError, match="dotted path"):
        _export.export("nn..relu")


def test_public_submodules_import_in_a_fresh_interpreter():
    # `import sluice.nn` (no `import sluice` before) and `from sluice.layers import Dense`
    code = (
        "import sluice.nn.rnn_cell as c, sluice.train\n"
        "from sluice.layers import Dense\n"
        "print(c.LSTMCell.__name__, Dense.__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["LSTMCell", "Dense"]


def test_implementation_does_not_leak_into_namespaces():
    # sl.layers holds layers, not the modules that define them; sl.nn holds no `np` or `Any`
    for path, namespace in namespaces().items():
        modules = {n for n, v in vars(namespace).items() if isinstance(v, types.ModuleType)}
        leaked = {n for n in modules if not n.startswith("_")} - set(namespace.__all__)
        assert not leaked, f"sluice.{path}: {sorted(leaked)}"


def test_a_declared_command_runs_under_its_public_path():
    # `python -m sluice.distribution.launch`, as README documents it, with no RuntimeWarning
    command = [sys.executable, "-W", "error::RuntimeWarning", "-m", "sluice.distribution.launch"]
    out = subprocess.run([*command, "--help"], capture_output=True, text=True, check=True)
    assert "usage: python -m sluice.distribution.launch" in out.stdout
    assert _export.commands() == {"distribution.launch": "sluice._keras.distribution.launch"}


def test_a_namespace_is_not_a_folder_of_implementation():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("sluice.distribution.mesh")
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("sluice.layers.core")


def test_a_path_naming_both_a_namespace_and_an_object_is_refused(monkeypatch):
    monkeypatch.setattr(sys, "modules", dict(sys.modules))  # the builder registers namespaces
    builder = _namespaces._Builder(types.ModuleType("scratch_root"))
    builder.add("nn", "relu", print)
    with pytest.raises(ValueError, match=r"sluice\.nn names two things"):
        builder.add("", "nn", len)
