"""The Keras public paths of the built-in models, losses and metrics, for the deserializer
(until issue 26 builds the registry from the `@export` declarations)."""

import types

from sluice._keras.models.model import Model
from sluice._keras.models.sequential import Sequential
from sluice._keras.saving import serialization


def register_builtins(losses: types.ModuleType, metrics: types.ModuleType) -> None:
    """Tells the deserializer the Keras public paths of the models, losses and metrics a
    config may name ("keras.losses.Huber"): every loss and metric of the public namespaces
    `losses` and `metrics` (`sl.losses`, `sl.metrics`). Called by `sl.models`, the lowest
    namespace that sees them all."""
    serialization.register_builtin("keras.Sequential", Sequential)
    serialization.register_builtin("keras.Model", Model)
    serialization.register_builtin("keras.src.models.functional.Functional", Model)
    for module, base in (("losses", losses.Loss), ("metrics", metrics.Metric)):
        namespace = losses if module == "losses" else metrics
        for name, obj in vars(namespace).items():
            is_class = isinstance(obj, type) and issubclass(obj, base)
            if is_class or (
                callable(obj)
                and not isinstance(obj, type)
                and name[0] != "_"
                and name not in ("get", "serialize", "deserialize")
            ):
                serialization.register_builtin(f"keras.{module}.{name}", obj)
