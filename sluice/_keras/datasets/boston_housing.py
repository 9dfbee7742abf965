"""Boston housing prices: 506 samples of 13 attributes (float64) and the median price in k$,
read from Keras's `boston_housing.npz`, shuffled with `seed` and split as Keras does.

(Keras warns about this data set's ethical problem: one attribute encodes a racial proportion;
use it to illustrate such problems rather than as a benchmark.)
"""

from __future__ import annotations

import numpy as np

from sluice._export import export
from sluice._keras.datasets import files, safe_arrays

__all__ = ["load_data"]

ORIGIN = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/boston_housing.npz"
FILE_HASH = "f553886a1f8d56431e820c5b82552d9d95cfcb96d1e678153f8839538947dff5"


@export("datasets.boston_housing.load_data")
def load_data(path: str = "boston_housing.npz", test_split: float = 0.2, seed: int = 113):
    """`(x_train, y_train), (x_test, y_test)`: the first `1 - test_split` of the shuffled rows
    train, the rest test.

    Raises:
      ValueError: `test_split` outside [0, 1), or a file without matching `x` and `y`.
      sl.datasets.DownloadError: not cached and not downloadable.
    """
    if not 0 <= test_split < 1:
        raise ValueError(
            f"boston_housing.load_data: test_split must be in [0, 1), got {test_split}."
        )
    where = files.get_file(path, ORIGIN, FILE_HASH)
    arrays = safe_arrays.read_npz(where)
    safe_arrays.require(arrays, ("x", "y"), where)
    x, y = arrays["x"], arrays["y"]
    if x.ndim != 2 or len(x) != len(y):
        raise ValueError(f"{where}: x {x.shape} and y {y.shape} are not (n, attributes) and (n,).")
    indices = np.arange(len(x))
    np.random.RandomState(seed).shuffle(indices)
    x, y = x[indices], y[indices]
    split = int(len(x) * (1 - test_split))
    return (x[:split], y[:split]), (x[split:], y[split:])
