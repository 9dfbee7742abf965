"""Models: `Model` (functional and subclassed) and `Sequential`, and their training loop
(`compile`, `fit`, `evaluate`, `predict`); `load_model` and `clone_model`."""

from sluice import losses, metrics
from sluice.layers import serialization
from sluice.models.cloning import clone_model
from sluice.models.model import Model
from sluice.models.sequential import Sequential
from sluice.saving.keras_archive import load_model


def _register_builtins() -> None:
    """Tells the deserializer the Keras public paths of the models, losses and metrics a
    config may name ("keras.losses.Huber"). Done here: the lowest package that sees them all."""
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


_register_builtins()

__all__ = ["Model", "Sequential", "clone_model", "load_model"]
