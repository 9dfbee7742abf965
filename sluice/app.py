"""`sl.app`: TF1's `tf.app` (`run` and `flags`), on `sl.flags`.

The implementation is sluice/_tf1/app.py."""

from sluice import flags
from sluice._tf1.app import run, usage

__all__ = ["flags", "run", "usage"]
