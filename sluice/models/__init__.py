"""Models: `Model` (functional and subclassed) and `Sequential`, and their training loop
(`compile`, `fit`, `evaluate`, `predict`); `load_model` and `clone_model`."""

from sluice import losses, metrics
from sluice._keras.models import builtins
from sluice._keras.models.cloning import clone_model
from sluice._keras.models.model import Model
from sluice._keras.models.sequential import Sequential
from sluice._keras.saving.keras_archive import load_model

builtins.register_builtins(losses, metrics)

__all__ = ["Model", "Sequential", "clone_model", "load_model"]
