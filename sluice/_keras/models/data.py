"""NumPy data for fit / evaluate / predict: one array per model input, batches, shuffling.

The built-in steps take one array per model input, then the targets and the sample weights.
A model that overrides `train_step` (`test_step`, `predict_step`) gets Keras's structure instead:
`pack_x_y_sample_weight(x, y, sample_weight)`, which is `x`, `(x,)`, `(x, y)` or
`(x, y, sample_weight)`, fed as one array per leaf (`to_arrays`).

The order of an epoch is `epoch_order(n, seed, epoch)`: a permutation drawn from a generator
seeded by (seed, epoch) alone, so a run resumed in the middle of an epoch sees the same order.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from sluice._export import export
from sluice._keras import config
from sluice._keras.models import compile_utils
from sluice._tf1.cells import nest
from sluice.framework.ir import dtypes


@export("utils.unpack_x_y_sample_weight")
def unpack_x_y_sample_weight(data: Any) -> tuple[Any, Any, Any]:
    """`(x, y, sample_weight)` of what a step receives, None for the parts it lacks (Keras 3's,
    for overridden `train_step`, `test_step` and `predict_step`): a tuple or list of 1, 2 or
    3 items is `(x,)`, `(x, y)` or `(x, y, sample_weight)`; anything else is `x` alone.

    Raises:
      ValueError: a tuple or list of more than 3 items.

    >>> unpack_x_y_sample_weight((np.ones(2), np.zeros(2)))[2] is None
    True
    """
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return data, None, None
    if 1 <= len(data) <= 3:
        return (tuple(data) + (None, None))[:3]
    raise ValueError(
        "Data is expected to be in format `x`, `(x,)`, `(x, y)`, or `(x, y, sample_weight)`, "
        f"found a tuple of {len(data)} items: {data}"
    )


@export("utils.pack_x_y_sample_weight")
def pack_x_y_sample_weight(x: Any, y: Any = None, sample_weight: Any = None) -> Any:
    """The structure `fit` gives a step for `x`, `y` and `sample_weight` (Keras 3's): `x` alone
    when there are no targets (`(x,)` when `x` is a tuple or list, so that it is not read as
    `(x, y)`), else `(x, y)` or `(x, y, sample_weight)`.

    >>> pack_x_y_sample_weight(np.ones(2)).shape, len(pack_x_y_sample_weight([1, 2]))
    ((2,), 1)
    """
    if y is None:
        return (x,) if isinstance(x, (tuple, list)) else x
    if sample_weight is None:
        return x, y
    return x, y, sample_weight


def to_arrays(value: Any) -> Any:
    """`value` with NumPy arrays as leaves: dicts and tuples are kept (lists become tuples, as
    Keras's TensorFlow data does), and a list or tuple of numbers is one array; None stays."""
    if value is None:
        return None
    if isinstance(value, dict):
        return {key: to_arrays(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)) and not all(_is_number(v) for v in value):
        items = [to_arrays(item) for item in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    return np.asarray(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (numbers.Number, np.generic))


def leaf_dtype(array: np.ndarray, where: str) -> dtypes.DType:
    """The placeholder dtype an array leaf is fed through: float arrays in `floatx`, integers
    as int32, booleans as bool (the rule of the model's own inputs).

    Raises:
      TypeError: for strings, objects and other arrays no placeholder takes.
    """
    if array.dtype == bool:
        return dtypes.bool_
    if np.issubdtype(array.dtype, np.integer):
        return dtypes.int32
    if np.issubdtype(array.dtype, np.floating):
        return dtypes.as_dtype(config.floatx())
    raise TypeError(
        f"{where}: arrays of dtype {array.dtype} cannot be fed to a step; give numbers "
        "(floats, integers or booleans)."
    )


def structure_signature(structure: Any) -> tuple:
    """What a step over Keras-structured data is traced for: the nest (its keys and nesting)
    and each leaf's dtype and per-example shape."""
    leaves = nest.flatten(structure)
    skeleton = str(nest.map_structure(lambda _: 0, structure))
    return skeleton, tuple((a.dtype.str, tuple(a.shape[1:])) for a in leaves)


def input_arrays(x: Any, input_names: list[str] | None, what: str = "x") -> list[np.ndarray]:
    """`x` (an array, a list/tuple of arrays, or a dict by input name) as one array per input
    (`input_names` None: the model is not built yet, any number of arrays)."""
    if x is None:
        raise ValueError(f"{what} needs input data `x` (NumPy arrays).")
    if isinstance(x, dict) and input_names is None:
        raise ValueError(
            f"{what}: a dict of inputs needs a built model (it has no input names yet)."
        )
    if isinstance(x, dict):
        missing = [n for n in input_names if n not in x]
        if missing:
            raise ValueError(f"{what} lacks the model inputs {missing}; it has {sorted(x)}.")
        arrays = [x[n] for n in input_names]
    elif isinstance(x, (list, tuple)):
        arrays = list(x)
    else:
        arrays = [x]
    if input_names is not None and len(arrays) != len(input_names):
        raise ValueError(
            f"The model has {len(input_names)} inputs ({input_names}) but {what} holds "
            f"{len(arrays)} arrays."
        )
    return [np.asarray(a) for a in arrays]


def target_array(y: Any) -> np.ndarray:
    """The one target array of a model with one output (`y` an array, or a list, tuple or dict
    of one)."""
    return target_arrays(y, [None], "y")[0]


def target_arrays(y: Any, output_names: list, what: str) -> list[np.ndarray | None]:
    """The targets of a built-in step, one array per output in flat order (None for an output
    without one): `y` is an array (one output), a list or tuple of one per output, or a dict by
    output name (`compile_utils.flat_targets`); None for no targets at all.

    Raises:
      ValueError: targets that do not match the outputs.
    """
    if y is None:
        return [None] * len(output_names)
    flat = compile_utils.flat_targets(y, output_names, f"{what}: the targets `y`")
    return [None if item is None else np.asarray(item) for item in flat]


def sample_weight_array(sample_weight: Any, outputs: int, what: str) -> np.ndarray | None:
    """One float32 weight per sample, for every output's loss.

    Raises:
      NotImplementedError: weights per output (a list or dict of arrays) for several outputs.
    """
    if sample_weight is None:
        return None
    if isinstance(sample_weight, (dict, list, tuple)) and outputs > 1:
        raise NotImplementedError(
            f"{what}: sample weights per output are not supported; give one array of "
            "per-sample weights, which weighs every output's loss."
        )
    return np.asarray(sample_weight, np.float32)


def num_samples(arrays: list[np.ndarray | None]) -> int:
    sizes = {len(a) for a in arrays if a is not None}
    if len(sizes) != 1:
        raise ValueError(
            "All data arrays must have the same number of samples (first dimension); got "
            f"{[len(a) for a in arrays if a is not None]}."
        )
    return sizes.pop()


def require_samples(n: int, what: str) -> None:
    """Raises ValueError when the data of `what` ("fit", "evaluate", ...) holds no sample."""
    if n == 0:
        raise ValueError(
            f"{what}: expected input data to be non-empty; `x` and `y` hold 0 samples."
        )


def batch_size_arg(value: Any, name: str = "batch_size", default: int = 32) -> int:
    """`value` as a batch size: `default` for None, else a positive integer.

    Raises:
      ValueError: naming the argument, for 0, a negative number or a non-integer.
    """
    if value is None:
        return default
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"`{name}` must be a positive integer, got {value!r}.")
    return int(value)


def split_validation(arrays: list, fraction: float) -> tuple[list, list]:
    """The first (1 - fraction) of the samples and the last `fraction` (before shuffling, as
    Keras does)."""
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"validation_split must be in (0, 1), got {fraction}.")
    n = num_samples(arrays)
    split = int(n * (1.0 - fraction))
    if split == 0 or split == n:
        raise ValueError(
            f"validation_split={fraction} leaves no training or validation samples of {n}."
        )
    head = [None if a is None else a[:split] for a in arrays]
    tail = [None if a is None else a[split:] for a in arrays]
    return head, tail


def epoch_order(n: int, seed: int, epoch: int, shuffle: bool) -> np.ndarray:
    """The sample order of `epoch`: a permutation fixed by (seed, epoch), or 0..n-1."""
    if not shuffle:
        return np.arange(n)
    return np.random.default_rng([int(seed), int(epoch)]).permutation(n)


def batch_indices(order: np.ndarray, batch_size: int, step: int) -> np.ndarray:
    return order[step * batch_size : (step + 1) * batch_size]


def num_batches(n: int, batch_size: int) -> int:
    """The batches of one epoch (of one evaluate / predict), at most `max_steps_per_epoch()`."""
    return config.capped_steps(-(-n // batch_size))


def take(arrays: list, index: Any) -> list:
    return [None if a is None else a[index] for a in arrays]


def split_structure(structure: Any, fraction: float) -> tuple[Any, Any]:
    """`split_validation` of every array of a nest (None leaves stay None)."""
    head, tail = split_validation(nest.flatten(structure), fraction)
    return nest.pack_sequence_as(structure, head), nest.pack_sequence_as(structure, tail)


def check_split_batches(n: int, batch_size: int, distribution: Any, what: str) -> None:
    """Under a distribution every batch is split evenly over the devices of its batch axis:
    `batch_size` and the last, partial batch (n % batch_size samples) must both divide."""
    shards = distribution.batch_shards if distribution is not None else 1
    last = n % batch_size
    for size, which in ((min(batch_size, n), "batch_size"), (last, "the last batch")):
        if size and size % shards:
            raise ValueError(
                f"{what}: {which} of {size} samples cannot be split evenly over the {shards} "
                f"devices of {type(distribution).__name__}'s {distribution.batch_dim_name!r} axis "
                f"({n} samples, batch_size {batch_size}). Use a batch size and a sample count "
                f"that are multiples of {shards}."
            )
