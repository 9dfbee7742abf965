"""`sl.io`: TF's `tf.io` namespace; here its file API, `sl.io.gfile` (see `sluice.gfile`)."""

from sluice import gfile

__all__ = ["gfile"]
