"""Fashion-MNIST: 60,000 training and 10,000 test 28x28 grey images of clothes (uint8), labels
0-9 (uint8), read from the four gzipped IDX files Keras keeps in `datasets/fashion-mnist`.

Labels: 0 T-shirt/top, 1 Trouser, 2 Pullover, 3 Dress, 4 Coat, 5 Sandal, 6 Shirt, 7 Sneaker,
8 Bag, 9 Ankle boot.
"""

from __future__ import annotations

import gzip
import zlib

import numpy as np

from sluice._export import export
from sluice._keras.datasets import files

__all__ = ["load_data"]

ORIGIN_FOLDER = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
CACHE_SUBDIR = "datasets/fashion-mnist"
FILES = (
    "train-labels-idx1-ubyte.gz",
    "train-images-idx3-ubyte.gz",
    "t10k-labels-idx1-ubyte.gz",
    "t10k-images-idx3-ubyte.gz",
)
_LABELS_MAGIC, _IMAGES_MAGIC = 2049, 2051
# The largest file we accept once unzipped (60,000 images of 784 bytes and headers fit well).
_MAX_BYTES = 256 << 20


def _read_idx(path: str, magic: int, item_shape: tuple[int, ...]) -> np.ndarray:
    try:
        with gzip.open(path, "rb") as f:
            data = f.read(_MAX_BYTES + 1)
    except (OSError, EOFError, zlib.error) as e:  # not gzip, truncated, corrupted
        raise ValueError(f"{path} is not a readable gzip file ({type(e).__name__}: {e}).") from e
    if len(data) > _MAX_BYTES:
        raise ValueError(f"{path} unzips to more than {_MAX_BYTES} bytes; refusing it.")
    offset = 8 if magic == _LABELS_MAGIC else 16  # magic, count (, rows, cols): big-endian
    found, count = np.frombuffer(data[:8], ">u4") if len(data) >= offset else (None, 0)
    if found != magic or len(data) - offset != int(count) * int(np.prod(item_shape)):
        raise ValueError(
            f"{path} is not an IDX file (magic {magic}) of items of shape "
            f"{item_shape}: header {found, count}, {len(data)} bytes."
        )
    return np.frombuffer(data, np.uint8, offset=offset).reshape((count,) + item_shape)


@export("datasets.fashion_mnist.load_data")
def load_data() -> tuple:
    """`(x_train, y_train), (x_test, y_test)`: uint8 images (n, 28, 28) and labels (n,).

    Raises:
      sl.datasets.DownloadError: a file not cached and not downloadable.
      ValueError: a file that is not the IDX file it should be.
    """
    paths = [
        files.get_file(name, ORIGIN_FOLDER + name, cache_subdir=CACHE_SUBDIR) for name in FILES
    ]
    y_train = _read_idx(paths[0], _LABELS_MAGIC, ())
    x_train = _read_idx(paths[1], _IMAGES_MAGIC, (28, 28))
    y_test = _read_idx(paths[2], _LABELS_MAGIC, ())
    x_test = _read_idx(paths[3], _IMAGES_MAGIC, (28, 28))
    for x, y, split in ((x_train, y_train, "train"), (x_test, y_test, "test")):
        if len(x) != len(y):
            raise ValueError(f"fashion-mnist {split}: {len(x)} images but {len(y)} labels.")
    return (x_train, y_train), (x_test, y_test)
