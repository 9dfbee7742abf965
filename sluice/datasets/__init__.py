"""`sl.datasets`: Keras's small data sets, read from the files Keras caches and downloads.

Each module has Keras's `load_data` (same arguments, defaults, shapes and dtypes): `mnist`,
`fashion_mnist`, `cifar10`, `cifar100`, `imdb`, `reuters` (with `get_word_index`),
`boston_housing`. Files are looked up in `$KERAS_HOME/datasets` or `~/.keras/datasets` and
downloaded there from Keras's URLs when missing (see `files`); every file is read as untrusted
input (see `safe_arrays`).

>>> (x_train, y_train), (x_test, y_test) = sl.datasets.mnist.load_data()  # doctest: +SKIP
"""

from sluice._keras.datasets.files import DownloadError
from sluice.datasets import (
    boston_housing,
    cifar10,
    cifar100,
    fashion_mnist,
    imdb,
    mnist,
    reuters,
)

__all__ = [
    "DownloadError", "boston_housing", "cifar10", "cifar100", "fashion_mnist", "imdb", "mnist",
    "reuters",
]  # fmt: skip
