"""MNIST digits: 60,000 training and 10,000 test images of 28x28 grey pixels (uint8), labels
0-9 (uint8), read from Keras's `mnist.npz`.

>>> (x_train, y_train), (x_test, y_test) = sl.datasets.mnist.load_data()  # doctest: +SKIP
>>> x_train.shape, y_train.shape                                          # doctest: +SKIP
((60000, 28, 28), (60000,))
"""

from __future__ import annotations

import numpy as np

from sluice._export import export
from sluice._keras.datasets import files, safe_arrays

__all__ = ["load_data"]

ORIGIN = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz"
FILE_HASH = "731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1"


@export("datasets.mnist.load_data")
def load_data(path: str = "mnist.npz") -> tuple:
    """`(x_train, y_train), (x_test, y_test)` from the Keras cache (downloaded when missing).

    Args:
      path: the file's name in the cache folder (`~/.keras/datasets` or `$KERAS_HOME/datasets`).

    Raises:
      sl.datasets.DownloadError: not cached and not downloadable (names the URL and the path).
      ValueError: the file lacks an array or its images and labels disagree in number.
    """
    where = files.get_file(path, ORIGIN, FILE_HASH)
    arrays = safe_arrays.read_npz(where)
    keys = ("x_train", "y_train", "x_test", "y_test")
    safe_arrays.require(arrays, keys, where)
    x_train, y_train, x_test, y_test = (arrays[k] for k in keys)
    for x, y, split in ((x_train, y_train, "train"), (x_test, y_test, "test")):
        if x.ndim != 3 or y.ndim != 1 or len(x) != len(y):
            raise ValueError(
                f"{where}: x_{split} {x.shape} and y_{split} {y.shape} are not "
                "(n, rows, cols) images with n labels."
            )
    return (x_train, np.asarray(y_train)), (x_test, np.asarray(y_test))
