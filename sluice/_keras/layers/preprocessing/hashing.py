"""`Hashing`: integer features hashed into `num_bins` bins (Keras 3's
`keras/src/layers/preprocessing/hashing.py`), with the bins Keras gives: FarmHash's
Fingerprint64 of each value's decimal text modulo the number of bins (TF's
`strings.to_hash_bucket_fast`), floats truncated to int64 first.

Hashing runs on the host (a `py_func` op, `farmhash.fingerprint64` per distinct value), as
Keras's layer runs TensorFlow's string ops on the CPU: inside a compiled step it is a host
callback. String inputs do not exist in sluice's graphs, so only numbers are hashed; the
salted SipHash variant (`salt`) is not provided.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._export import export
from sluice._keras import config as keras_config
from sluice._keras.layers.base import Layer
from sluice._keras.layers.preprocessing import encoding, farmhash
from sluice.framework.ir import dtypes
from sluice.framework.ops.array import array_ops, fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.host import py_func_ops


def hash_bins(values: np.ndarray, num_bins: int, mask_value: Any = None) -> np.ndarray:
    """The int64 bin of each value (Keras's `_hash_values_to_bins` for numbers): with a
    `mask_value` (and more than one bin), that value is bin 0 and the others are hashed into
    bins 1 .. num_bins - 1."""
    values = np.asarray(values)
    bins = num_bins
    mask = None
    if mask_value is not None and bins > 1:
        bins -= 1
        mask = values == mask_value
    if np.issubdtype(values.dtype, np.floating):
        values = values.astype(np.int64)
    distinct, inverse = np.unique(values.astype(np.int64), return_inverse=True)
    hashed = np.array(
        [farmhash.fingerprint64(str(int(v)).encode()) % bins for v in distinct], np.int64
    )
    out = (
        hashed[inverse].reshape(values.shape) if distinct.size else np.zeros(values.shape, np.int64)
    )
    if mask is not None:
        out = np.where(mask, 0, out + 1)
    return out.astype(np.int64)


@export("layers.Hashing")
class Hashing(Layer):
    """Hashes numbers into `num_bins` bins (see the module docstring) and encodes the bin
    indices by `output_mode`: "int" (the layer's integer dtype, int64 by default), "one_hot",
    "multi_hot" or "count" (floatx()).

    Args:
      num_bins: the number of bins, mask bin included.
      mask_value: a value that goes to bin 0 (the others to bins 1 .. num_bins - 1).
      salt: not supported (Keras's salted SipHash64).
      output_mode: "int", "one_hot", "multi_hot" or "count".
      sparse: must be False.

    >>> layer = sl.layers.Hashing(num_bins=3)
    >>> np.asarray(layer(np.array([[1], [2], [3]]))).ravel().tolist()
    [0, 1, 0]
    """

    def __init__(
        self,
        num_bins: int,
        mask_value: Any = None,
        salt: Any = None,
        output_mode: str = "int",
        sparse: bool = False,
        **kwargs: Any,
    ):
        if kwargs.get("dtype") is None:
            kwargs["dtype"] = "int64" if output_mode == "int" else keras_config.floatx()
        super().__init__(**kwargs)
        if num_bins is None or num_bins <= 0:
            raise ValueError(
                "The `num_bins` for `Hashing` cannot be `None` or non-positive values. "
                f"Received: num_bins={num_bins}."
            )
        if output_mode == "int" and self.dtype not in ("int32", "int64"):
            raise ValueError(
                "When `output_mode='int'`, `dtype` should be an integer type, 'int32' or "
                f"'int64'. Received: dtype={self.dtype}"
            )
        encoding.check_output_mode("Hashing", output_mode)
        if sparse:
            raise ValueError("Hashing: `sparse=True` is not supported (no sparse tensors).")
        if salt is not None:
            raise NotImplementedError(
                "Hashing: `salt` (Keras's SipHash64 with a key) is not supported."
            )
        self.num_bins = int(num_bins)
        self.mask_value = mask_value
        self.salt = None
        self.output_mode = output_mode
        self.sparse = False

    def call(self, inputs: Any) -> Any:
        x = core_ops.convert_to_tensor(inputs)
        if not (dtypes.is_integer(x.dtype) or dtypes.is_floating(x.dtype)):
            raise TypeError(f"Hashing {self.name!r}: inputs must be numbers, got {x.dtype.name}.")
        if self.output_mode == "one_hot" and x.shape.rank and x.shape.dims[-1] == 1:
            x = array_ops.squeeze(x, [-1])

        def bins_of(values: np.ndarray) -> np.ndarray:
            return hash_bins(values, self.num_bins, self.mask_value)

        indices = py_func_ops.py_func(bins_of, [x], dtypes.int64, stateful=False)
        indices.set_shape(x.shape)
        dtype = self._dtype if self.output_mode == "int" else keras_config.floatx()
        out = encoding.encode_categorical_inputs(indices, self.output_mode, self.num_bins, dtype)
        return out if self.output_mode != "int" else fill_ops.cast(out, dtype)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        if self.output_mode == "int":
            return tuple(input_shape)
        if not input_shape:
            return (self.num_bins,)
        return tuple(input_shape)[:-1] + (self.num_bins,)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "num_bins": self.num_bins,
            "salt": self.salt,
            "mask_value": self.mask_value,
            "output_mode": self.output_mode,
            "sparse": self.sparse,
        }
