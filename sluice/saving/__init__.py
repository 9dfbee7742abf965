"""Saving: a model's weights in one h5 file (`Model.save_weights` / `Model.load_weights`)."""

from sluice.saving.weights_file import load_weights, save_weights

__all__ = ["load_weights", "save_weights"]
