"""What the ImageNet models share: caffe-style input preprocessing and Keras's weight files.

Keras publishes each model's ImageNet weights as an HDF5 file at a fixed URL and keeps a
downloaded copy in its cache, `~/.keras/models/` (or `$KERAS_HOME/models/`). `cached_weights`
returns that copy, downloading it first when it is missing and the network allows.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import urllib.error
import urllib.request
from typing import Any

import numpy as np

from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import array_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops

# ImageNet's mean pixel in BGR order, which the caffe-trained models subtract.
CAFFE_MEAN_BGR = (103.939, 116.779, 123.68)
_DOWNLOAD_TIMEOUT_S = 15


def preprocess_caffe(x: Any, data_format: str | None = None) -> Any:
    """Keras's "caffe" preprocessing: RGB -> BGR, then the ImageNet mean subtracted per channel
    (no scaling). `x` holds pixels in [0, 255], channels last: a NumPy array (a float copy is
    returned) or a Tensor.

    >>> preprocess_caffe(np.array([[255.0, 128.0, 0.0]]))
    array([[-103.939,   11.221,  131.32 ]])
    """
    if data_format not in (None, "channels_last"):
        raise ValueError(f"preprocess_input supports channels_last data only, got {data_format!r}.")
    if isinstance(x, Tensor):
        mean = core_ops.constant(np.array(CAFFE_MEAN_BGR, dtype=x.dtype.name))
        return math_ops.subtract(array_ops.reverse(x, [-1]), mean)
    x = np.asarray(x)
    if x.shape[-1:] != (3,):
        raise ValueError(f"preprocess_input expects 3 channels last, got shape {x.shape}.")
    dtype = x.dtype if np.issubdtype(x.dtype, np.floating) else np.float32
    return x[..., ::-1].astype(dtype) - np.asarray(CAFFE_MEAN_BGR, dtype=dtype)


def keras_cache_dir() -> str:
    """Where Keras keeps downloaded model files: `$KERAS_HOME/models` or `~/.keras/models`."""
    home = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    return os.path.join(home, "models")


def cached_weights(file_name: str, url: str, download: bool = True) -> str:
    """The path of Keras's weight file `file_name` in the Keras cache, downloaded from `url`
    first when it is not there (and `download`).

    Raises:
      FileNotFoundError: the file is not cached and cannot be downloaded; the message names the
        URL and the cache path, so the file can be fetched by hand.
    """
    path = os.path.join(keras_cache_dir(), file_name)
    if os.path.isfile(path):
        return path
    problem = "downloads are off"
    if download:
        try:
            _download(url, path)
            return path
        except (OSError, urllib.error.URLError) as err:
            problem = f"the download failed ({err})"
    raise FileNotFoundError(
        f"Keras's weight file {file_name!r} is not in the Keras cache and {problem}. Download "
        f"{url} and save it as {path} (or pass the file's path as `weights=`)."
    )


def _download(url: str, path: str) -> None:
    """Downloads `url` to `path` through a temporary file, so a broken download leaves none."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, partial = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out:
            with urllib.request.urlopen(url, timeout=_DOWNLOAD_TIMEOUT_S) as response:
                shutil.copyfileobj(response, out)
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.remove(partial)
