"""Models: `Model` (functional and subclassed) and `Sequential`, and their training loop
(`compile`, `fit`, `evaluate`, `predict`)."""

from sluice.models.model import Model
from sluice.models.sequential import Sequential

__all__ = ["Model", "Sequential"]
