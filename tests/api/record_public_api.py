"""Records sluice's public API into public_api.json: every namespace reachable from `sluice`
through `__all__`, each name in it, and what the name is (kind and qualified name), so a
regrouping can prove that no public name was lost or changed meaning.

Run from the repository root: `python tests/api/record_public_api.py`.
"""

from __future__ import annotations

import importlib
import json
import pathlib
import types

import sluice


def describe(value: object) -> str:
    if isinstance(value, types.ModuleType):
        return "module"
    if isinstance(value, type):
        return f"class {value.__qualname__}"
    if callable(value) and hasattr(value, "__qualname__"):
        return f"function {value.__qualname__}"
    if isinstance(value, (bool, int, float, str)) or value is None:
        return f"value {value!r}"
    return f"instance of {type(value).__qualname__}"


def defined_names(module: types.ModuleType) -> list[str]:
    """The public names of a namespace that has no `__all__`: those sluice defines (not the
    modules and typing names it imports for its own use)."""

    def from_sluice(value: object) -> bool:
        if isinstance(value, types.ModuleType):
            return value.__name__.startswith("sluice")
        return str(getattr(value, "__module__", "")).startswith("sluice")

    names = [n for n in dir(module) if not n.startswith("_") and from_sluice(getattr(module, n))]
    # a namespace without __all__ also showed the modules and helpers it imports: not its API
    return [
        n
        for n in names
        if not isinstance(getattr(module, n), types.ModuleType) and n not in IMPORTED_HELPERS
    ]


# Names the namespaces without `__all__` imported for their own use when this was recorded.
IMPORTED_HELPERS = {"Model", "Tensor", "Variable", "build_vgg", "compute_fans", "name_scope"}
IMPORTED_HELPERS |= {"with_x64"}


def importable(path: str, module: types.ModuleType) -> bool:
    """Whether `import <path>` gives this namespace (sluice.nn.rnn_cell was reachable only as
    an attribute)."""
    try:
        return importlib.import_module(path) is module
    except ImportError:
        return False


def public_api() -> dict:
    namespaces: dict[str, dict] = {}
    first_path: dict[int, str] = {}

    def walk(module: types.ModuleType, path: str) -> None:
        if id(module) in first_path:
            namespaces[path] = {"alias_of": first_path[id(module)]}
            return
        first_path[id(module)] = path
        names = sorted(getattr(module, "__all__", None) or defined_names(module))
        namespaces[path] = {
            "names": {n: describe(getattr(module, n)) for n in names},
            "importable": importable(path, module),
        }
        for name in names:
            value = getattr(module, name)
            # sluice.framework is the engine's package, public as a whole, not a namespace
            if (
                isinstance(value, types.ModuleType)
                and value.__name__.startswith("sluice")
                and value.__name__ != "sluice.framework"
            ):
                walk(value, f"{path}.{name}")

    walk(sluice, "sluice")
    return namespaces


if __name__ == "__main__":
    out = pathlib.Path(__file__).with_name("public_api.json")
    out.write_text(json.dumps(public_api(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {out}")
