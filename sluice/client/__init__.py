"""`sl.client`: TF1's `tensorflow.python.client` helpers that programs import (`timeline`)."""

from sluice.framework import timeline

__all__ = ["timeline"]
