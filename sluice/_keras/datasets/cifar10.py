"""CIFAR-10: 50,000 training and 10,000 test colour images of 32x32 pixels (uint8) in 10
classes, read from the Python batches of Keras's `cifar-10-batches-py` (see `cifar`).

Labels: 0 airplane, 1 automobile, 2 bird, 3 cat, 4 deer, 5 dog, 6 frog, 7 horse, 8 ship,
9 truck.
"""

from __future__ import annotations

import os

import numpy as np

from sluice._export import export
from sluice._keras.datasets import cifar

__all__ = ["load_data"]

FOLDER = "cifar-10-batches-py"
ORIGIN = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
FILE_HASH = "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce"


@export("datasets.cifar10.load_data")
def load_data() -> tuple:
    """`(x_train, y_train), (x_test, y_test)`: images (n, 32, 32, 3) uint8 in channels_last,
    labels (n, 1) uint8; training = data_batch_1..5 in order, test = test_batch.

    Raises:
      sl.datasets.DownloadError: not cached and not downloadable.
      ValueError: a batch file that is not a CIFAR batch.
    """
    folder = cifar.batches_folder(FOLDER, ORIGIN, FILE_HASH, "data_batch_1")
    train = [cifar.load_batch(os.path.join(folder, f"data_batch_{i}")) for i in range(1, 6)]
    x_train = np.concatenate([x for x, _ in train])
    y_train = np.concatenate([y for _, y in train]).reshape(-1, 1)
    x_test, y_test = cifar.load_batch(os.path.join(folder, "test_batch"))
    return (
        (cifar.to_image_data_format(x_train), y_train),
        (cifar.to_image_data_format(x_test), y_test.reshape(-1, 1)),
    )
