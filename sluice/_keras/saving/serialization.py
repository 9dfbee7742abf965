"""Keras objects as JSON-ready dicts, in Keras 3's format, and back; the registry of custom ones.

    serialize(Dense(3))  ->  {"module": "keras.layers", "class_name": "Dense",
                              "config": {...Dense.get_config()...}, "registered_name": None}

A class or function is found again, when a config is read, by (first match wins):
  1. the `custom_objects` dict given to the loader, or a `custom_object_scope` open around it;
  2. the registry of `register_keras_serializable` (key "package>name");
  3. sluice's built-ins: the layers, and what other packages add with `register_builtin`
     (optimizers, losses, metrics, models), by their Keras public path ("keras.layers.Dense").
A config's "module" is never imported: an object none of these knows is an error naming it.

Safe mode (on by default) refuses Python bytecode in a config (a Lambda's `lambda`, stored as
Keras stores it: marshal, then base64); `safe_mode=False` or
`sl.config.enable_unsafe_deserialization()` allow it for files you trust.

This module sits in saving/ (as Keras's `serialization_lib`) but below the layers, so that
layers can deserialize the layers and functions their configs hold; `object_registration`
re-exports its public names.

>>> @register_keras_serializable(package="demo")
... class Double(sl.layers.Layer):
...     def call(self, x):
...         return x * 2.0
>>> config = serialize(Double(name="twice"))
>>> config["registered_name"], type(deserialize(config)).__name__
('demo>Double', 'Double')
"""

from __future__ import annotations

import base64
import builtins
import contextlib
import functools
import inspect
import marshal
import threading
import types
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from sluice import _export
from sluice._export import export
from sluice._keras.config import in_safe_mode, safe_mode_scope  # noqa: F401 (saving's names)
from sluice._module_paths import saved_module

_PLAIN = (str, int, float, bool)

# -- the registry of custom objects (keras.saving.register_keras_serializable) ---------------
_REGISTERED: dict[str, Any] = {}  # "package>name" -> class or function
_REGISTERED_NAMES: dict[Any, str] = {}  # class or function -> "package>name"


@export("saving.register_keras_serializable", "utils.register_keras_serializable")
def register_keras_serializable(package: str = "Custom", name: str | None = None) -> Callable:
    """A decorator registering a class or function under "package>name" (name: its own name),
    so that configs naming it load without `custom_objects`. Classes need `get_config`.

    Raises:
      ValueError: for a class without `get_config`, or a name holding ">".
    """
    if not isinstance(package, str) or ">" in package:
        raise ValueError(
            f"register_keras_serializable: package must be a str without '>', got {package!r}."
        )

    def decorator(obj: Any) -> Any:
        key_name = name if name is not None else obj.__name__
        if ">" in key_name:
            raise ValueError(f"register_keras_serializable: name {key_name!r} may not hold '>'.")
        if inspect.isclass(obj) and not hasattr(obj, "get_config"):
            raise ValueError("Cannot register a class that does not have a get_config() method.")
        key = f"{package}>{key_name}"
        _REGISTERED[key] = obj
        _REGISTERED_NAMES[obj] = key
        return obj

    return decorator


@export("saving.get_registered_name", "utils.get_registered_name")
def get_registered_name(obj: Any) -> str:
    """The "package>name" key `obj` is registered under, else its `__name__`."""
    return _REGISTERED_NAMES.get(obj, getattr(obj, "__name__", None))


@export("saving.get_custom_objects", "utils.get_custom_objects")
def get_custom_objects() -> dict[str, Any]:
    """The live registry dict ({"package>name": object}), as Keras's `get_custom_objects`."""
    return _REGISTERED


class _ScopeState(threading.local):
    def __init__(self) -> None:
        self.custom_objects: list[dict] = []
        self.model_parts = 0  # how many model configs are being rebuilt around this point


_SCOPE = _ScopeState()


@export(
    "saving.CustomObjectScope",
    "saving.custom_object_scope",
    "utils.CustomObjectScope",
    "utils.custom_object_scope",
)
class CustomObjectScope:
    """`with custom_object_scope({"MyLayer": MyLayer}):` makes those names known to every
    deserialization inside (configs naming them by class name or registered name)."""

    def __init__(self, custom_objects: dict | None = None):
        self.custom_objects = dict(custom_objects or {})

    def __enter__(self) -> CustomObjectScope:
        _SCOPE.custom_objects.append(self.custom_objects)
        return self

    def __exit__(self, *exc: Any) -> None:
        _SCOPE.custom_objects.pop()


custom_object_scope = CustomObjectScope


@export("saving.get_registered_object", "utils.get_registered_object")
def get_registered_object(
    name: str, custom_objects: dict | None = None, module_objects: dict | None = None
) -> Any:
    """The object known as `name` in the open custom object scopes, the registry,
    `custom_objects` or `module_objects` (in that order), else None."""
    for scope in reversed(_SCOPE.custom_objects):
        if name in scope:
            return scope[name]
    for table in (_REGISTERED, custom_objects or {}, module_objects or {}):
        if name in table:
            return table[name]
    return None


# -- parts of a model --------------------------------------------------------------------------
@contextlib.contextmanager
def rebuilding_model_parts() -> Iterator[None]:
    """Marks the deserializations inside as the layers of a model config being rebuilt (a
    Sequential there is built by the model that calls it, not on its own)."""
    _SCOPE.model_parts += 1
    try:
        yield
    finally:
        _SCOPE.model_parts -= 1


def rebuilding_a_model_part() -> bool:
    """Whether this deserialization is of a layer of a model config being rebuilt."""
    return _SCOPE.model_parts > 0


_LAMBDA_REFUSAL = (
    "Requested the deserialization of a `lambda` object. This carries a potential risk of "
    "arbitrary code execution and thus it is disallowed by default. If you trust the source of "
    "the saved model, you can pass `safe_mode=False` to the loading function in order to allow "
    "`lambda` loading, or call `sl.config.enable_unsafe_deserialization()`."
)


def dump_function(fn: types.FunctionType) -> dict:
    """A lambda as Keras stores it: {"code": base64 of its marshalled code, "defaults",
    "closure"} (the values of its free variables)."""
    closure = tuple(cell.cell_contents for cell in fn.__closure__) if fn.__closure__ else None
    code = base64.b64encode(marshal.dumps(fn.__code__)).decode("ascii")
    return {"code": code, "defaults": fn.__defaults__, "closure": closure}


def load_function(config: Any, refusal: str | None = None) -> types.FunctionType:
    """The function `dump_function` stored. Refused in safe mode (it runs code from the file),
    with `refusal` as the message if given. Its globals are the builtins, `np` and `sl`."""
    if in_safe_mode() is not False:
        raise ValueError(refusal or _LAMBDA_REFUSAL)
    import sluice

    if not isinstance(config, dict) or not isinstance(config.get("code"), str):
        raise ValueError(f"A lambda's config must hold its code as a string, got {_short(config)}.")
    code = marshal.loads(base64.b64decode(config["code"]))
    if not isinstance(code, types.CodeType):
        raise ValueError("A lambda's code does not hold a code object.")
    closure = config.get("closure")
    cells = tuple(types.CellType(v) for v in closure) if closure else None
    defaults = tuple(config["defaults"]) if config.get("defaults") else None
    scope = {"__builtins__": builtins, "np": np, "sl": sluice}
    return types.FunctionType(code, scope, code.co_name, defaults, cells)


# -- sluice's built-in objects, by Keras public path -------------------------------------------
# A class or function declared public in one of these namespaces (sluice/_export.py) is Keras's
# object of the same path: `sl.layers.Dense` is `keras.layers.Dense` in a saved config. Of a
# namespace, the subclasses of its base class count (the base is declared there too), and for
# losses and metrics their functions as well (`keras.losses.huber`). Listed in the order that
# decides an object's path when it has two of the same name (a loss function is also a metric).
_KERAS_NAMESPACES = {
    "losses": "Loss",
    "metrics": "Metric",
    "layers": "Layer",
    "optimizers": "Optimizer",
    "optimizers.schedules": "LearningRateSchedule",
}
_KERAS_TOP_LEVEL = ("Model", "Sequential")  # keras.Model, keras.Sequential
_NOT_FUNCTIONS = ("get", "serialize", "deserialize")
# Keras paths that are none of sluice's own ("keras.src.models.functional.Functional")
_INTERNAL_PATHS: dict[str, Any] = {}


def register_builtin(path: str, obj: Any) -> None:
    """Declares `obj` to be sluice's version of a Keras path that is none of sluice's public
    paths: a Keras internal name saved configs use ("keras.src.models.functional.Functional")."""
    _INTERNAL_PATHS[path] = obj
    _builtins.cache_clear()


def _is_keras_object(namespace: str, name: str, obj: Any, declared: dict[str, Any]) -> bool:
    base = declared.get(f"{namespace}.{_KERAS_NAMESPACES[namespace]}")
    if isinstance(obj, type):
        return base is not None and issubclass(obj, base)
    functions = namespace in ("losses", "metrics")
    return functions and callable(obj) and name not in _NOT_FUNCTIONS


@functools.cache
def _builtins() -> tuple[dict[str, Any], dict[int, str]]:
    """Keras path -> sluice's object, and each object's path in files: the one named like the
    object itself (Keras saves `AveragePooling2D`, never its alias `AvgPool2D`), else the first."""
    declared = _export.declared()
    paths: dict[str, Any] = {}
    for path in _KERAS_TOP_LEVEL:
        paths[f"keras.{path}"] = declared[path]
    for namespace in _KERAS_NAMESPACES:
        for path, obj in declared.items():
            where, _, name = path.rpartition(".")
            if where == namespace and _is_keras_object(namespace, name, obj, declared):
                paths[f"keras.{path}"] = obj
    paths.update(_INTERNAL_PATHS)
    saved: dict[int, str] = {}
    for path, obj in paths.items():
        named_alike = path.rsplit(".", 1)[-1] == getattr(obj, "__name__", None)
        if id(obj) not in saved or (
            named_alike and not saved[id(obj)].endswith("." + obj.__name__)
        ):
            saved[id(obj)] = path
    return paths, saved


def builtin_path(obj: Any) -> str | None:
    """The Keras public path of a sluice built-in class or function, else None."""
    return _builtins()[1].get(id(obj))


def _find_builtin(module: Any, name: str) -> Any:
    if isinstance(module, str):
        module = module.replace("sluice.", "keras.", 1) if module.startswith("sluice.") else module
        found = _builtins()[0].get(f"{module}.{name}")
        if found is not None:
            return found
    # by class name alone, among keras.ops classes for an ops module, else among the others
    # (the layer Add is not the operation Add of `x + y`)
    ops = isinstance(module, str) and module.startswith("keras.src.ops")
    matches = {
        id(v): v
        for path, v in _builtins()[0].items()
        if path.rsplit(".", 1)[-1] == name and path.startswith("keras.src.ops") == ops
    }
    return next(iter(matches.values())) if len(matches) == 1 else None


# -- serialize -------------------------------------------------------------------------------
@export("saving.serialize_keras_object", "utils.serialize_keras_object")
def serialize_keras_object(obj: Any) -> Any:
    """A JSON-ready value for `obj` (see the module docstring): plain values as they are,
    lists/tuples/dicts element by element, NumPy arrays as {"class_name": "__numpy__"},
    functions by name, lambdas as bytecode, objects with `get_config` as Keras does."""
    if obj is None or isinstance(obj, _PLAIN):
        return obj
    if isinstance(obj, (list, tuple)):
        return [serialize_keras_object(x) for x in obj]
    if isinstance(obj, dict):
        return {str(k): serialize_keras_object(v) for k, v in obj.items()}
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return {
            "class_name": "__numpy__",
            "config": {"value": obj.tolist(), "dtype": obj.dtype.name},
        }
    if isinstance(obj, types.FunctionType) and obj.__name__ == "<lambda>":
        return {"class_name": "__lambda__", "config": {"value": dump_function(obj)}}
    if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType)):
        path = builtin_path(obj)
        if path is not None:
            module, name = path.rsplit(".", 1)
            return {"module": module, "class_name": "function", "config": name,
                    "registered_name": name}  # fmt: skip
        return {"module": saved_module(obj.__module__), "class_name": "function",
                "config": obj.__name__,
                "registered_name": get_registered_name(obj)}  # fmt: skip
    if not hasattr(obj, "get_config"):
        raise TypeError(
            f"Cannot serialize {obj!r} of type {type(obj).__name__}: to be serializable, a class "
            "must implement get_config() (and be registered with "
            "@sl.saving.register_keras_serializable())."
        )
    config = obj.get_config()
    if not isinstance(config, dict):
        raise TypeError(f"The get_config() of {obj!r} must return a dict, got {config!r}.")
    path = getattr(obj, "_public_path", None) or builtin_path(type(obj))
    if path is not None and type(obj) not in _REGISTERED_NAMES:
        module, name = path.rsplit(".", 1)
        registered = name if module.startswith("keras.src") else None
    else:
        module, name = saved_module(type(obj).__module__), type(obj).__name__
        registered = get_registered_name(type(obj))
    out = {"module": module, "class_name": name, "config": serialize_keras_object(config),
           "registered_name": registered}  # fmt: skip
    for key, method in (("build_config", "get_build_config"),
                        ("compile_config", "get_compile_config")):  # fmt: skip
        extra = getattr(obj, method, None)
        value = extra() if extra is not None else None
        if value is not None:
            out[key] = serialize_keras_object(value)
    return out


# -- deserialize -----------------------------------------------------------------------------
def retrieve(
    class_name: str,
    registered_name: Any,
    module: Any,
    custom_objects: dict | None,
    kind: str = "class",
) -> Any:
    """The class (or function) a config names; see the module docstring for the order."""
    for key in (registered_name, class_name):
        if isinstance(key, str):
            found = get_registered_object(key, custom_objects)
            if found is not None:
                return found
    found = _find_builtin(module, class_name)
    if found is not None:
        return found
    raise ValueError(
        f"Could not locate {kind} {class_name!r} (registered name {registered_name!r}, module "
        f"{module!r}). Pass it to the loader in `custom_objects={{{class_name!r}: ...}}`, or "
        "decorate it with `@sl.saving.register_keras_serializable()`; sluice never imports the "
        "module a file names."
    )


@export("saving.deserialize_keras_object", "utils.deserialize_keras_object")
def deserialize_keras_object(
    config: Any, custom_objects: dict | None = None, safe_mode: bool = True
) -> Any:
    """The object `serialize_keras_object` describes (see the module docstring).

    Raises:
      ValueError: an unknown class or function, or bytecode in safe mode.
      TypeError: a config that is not one `serialize_keras_object` makes.
    """
    if config is None or isinstance(config, _PLAIN):
        return config
    if isinstance(config, list):
        return [deserialize_keras_object(x, custom_objects, safe_mode) for x in config]
    if not isinstance(config, dict):
        raise TypeError(f"Could not parse config: {config!r}.")
    if "class_name" not in config or "config" not in config:
        return {k: deserialize_keras_object(v, custom_objects, safe_mode)
                for k, v in config.items()}  # fmt: skip
    class_name, inner = config["class_name"], config["config"]
    if not isinstance(class_name, str):
        raise TypeError(f"A config's class_name must be a string, got {class_name!r}.")
    with contextlib.ExitStack() as stack:
        stack.enter_context(CustomObjectScope(custom_objects))
        scoped = in_safe_mode()
        stack.enter_context(safe_mode_scope(safe_mode if scoped is None else scoped))
        if class_name == "__numpy__":
            return _numpy_value(inner)
        if class_name == "__lambda__":
            return load_function(inner.get("value") if isinstance(inner, dict) else None)
        registered = config.get("registered_name", class_name)
        module = config.get("module")
        if class_name == "function":
            if not isinstance(inner, str):
                raise TypeError(f"A function's config must be its name, got {inner!r}.")
            return retrieve(inner, registered, module, custom_objects, "function")
        cls = retrieve(class_name, registered, module, custom_objects)
        if isinstance(cls, types.FunctionType):
            return cls
        if not hasattr(cls, "from_config"):
            raise TypeError(f"{class_name!r} has no from_config() method to rebuild it.")
        if not isinstance(inner, (dict, type(None))):
            raise TypeError(f"The config of a {class_name!r} must be a dict, got {_short(inner)}.")
        try:
            instance = cls.from_config(dict(inner or {}))
        except TypeError as err:
            raise TypeError(
                f"{cls.__name__} could not be rebuilt from its config: {err}. Objects that its "
                "get_config() returns (layers, models, ...) must be deserialized in its "
                f"from_config(). Config: {_short(config)}"
            ) from None
        build = config.get("build_config")
        if build and hasattr(instance, "build_from_config") and not instance.built:
            instance.build_from_config(build)
        compile_config = config.get("compile_config")
        if compile_config and hasattr(instance, "compile_from_config"):
            instance.compile_from_config(compile_config)
        return instance


def _numpy_value(config: Any) -> np.ndarray:
    dtype = np.dtype(str(config.get("dtype"))) if isinstance(config, dict) else None
    if dtype is None or dtype.kind not in "biuf":
        raise ValueError(f"A __numpy__ config needs a numeric dtype, got {_short(config)}.")
    return np.array(config.get("value"), dtype=dtype)


def _short(config: Any, limit: int = 400) -> str:
    text = repr(config)
    return text if len(text) <= limit else text[:limit] + "..."


# -- layers ----------------------------------------------------------------------------------
@export("layers.serialize")
def serialize(layer: Any) -> dict:
    """A layer as Keras 3 saves it: {"module", "class_name", "config", "registered_name"}."""
    return serialize_keras_object(layer)


@export("layers.deserialize")
def deserialize(config: dict, custom_objects: dict | None = None, safe_mode: bool = True) -> Any:
    """The layer a `serialize` dict describes (also the older {"class_name", "config"} form):
    a class of `sl.layers`, a registered one, or one in `custom_objects`."""
    if not isinstance(config, dict) or not isinstance(config.get("class_name"), str):
        raise ValueError(f"A layer config must be a dict with a class_name, got {_short(config)}.")
    layer = deserialize_keras_object(config, custom_objects, safe_mode)
    if isinstance(layer, types.FunctionType):
        raise ValueError(f"{config['class_name']!r} names a function, not a layer.")
    return layer
