"""CIFAR-100: 50,000 training and 10,000 test colour images of 32x32 pixels (uint8) in 100
fine classes grouped in 20 coarse ones, read from Keras's `cifar-100-python` (see `cifar`)."""

from __future__ import annotations

import os

from sluice._export import export
from sluice._keras.datasets import cifar

__all__ = ["load_data"]

FOLDER = "cifar-100-python"
ORIGIN = "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz"
FILE_HASH = "85cd44d02ba6437773c5bbd22e183051d648de2e7d6b014e1ef29b855ba677a7"


@export("datasets.cifar100.load_data")
def load_data(label_mode: str = "fine") -> tuple:
    """`(x_train, y_train), (x_test, y_test)`: images (n, 32, 32, 3) uint8, labels (n, 1) uint8
    of the "fine" (100) or "coarse" (20) classes.

    Raises:
      ValueError: another `label_mode`, or a file that is not a CIFAR batch.
      sl.datasets.DownloadError: not cached and not downloadable.
    """
    if label_mode not in ("fine", "coarse"):
        raise ValueError(
            f"cifar100.load_data: label_mode must be 'fine' or 'coarse', got {label_mode!r}."
        )
    folder = cifar.batches_folder(FOLDER, ORIGIN, FILE_HASH, "train")
    key = f"{label_mode}_labels"
    x_train, y_train = cifar.load_batch(os.path.join(folder, "train"), label_key=key)
    x_test, y_test = cifar.load_batch(os.path.join(folder, "test"), label_key=key)
    return (
        (cifar.to_image_data_format(x_train), y_train.reshape(-1, 1)),
        (cifar.to_image_data_format(x_test), y_test.reshape(-1, 1)),
    )
