"""`sl.backend`: Keras 3's `keras.backend`, and the few tf.keras backend functions that Keras
code still calls through it (`int_shape`, `shape`, `dtype`, `cast`, `name_scope`,
`random_uniform`, `random_normal`, as Keras 3's `tf.keras` compatibility backend has them).

The settings (`floatx`, `epsilon`, `image_data_format`, `backend`) are `sl.config`'s.

>>> sl.backend.floatx(), sl.backend.epsilon(), sl.backend.backend()
('float32', 1e-07, 'jax')
>>> sl.backend.standardize_dtype(np.float32), sl.backend.result_type("int32", "float32")
('float32', 'float32')
"""

from __future__ import annotations

import gc
from typing import Any

import jax
import numpy as np

from sluice._export import export
from sluice._keras import config
from sluice._keras.utils import naming, rng_utils
from sluice.framework.ir import concrete
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.random import random_ops
from sluice.framework.variables import Variable

__all__ = [
    "cast",
    "clear_session",
    "dtype",
    "get_uid",
    "int_shape",
    "is_float_dtype",
    "is_int_dtype",
    "is_keras_tensor",
    "random_normal",
    "random_uniform",
    "result_type",
    "standardize_dtype",
]

for _name in (
    "floatx",
    "set_floatx",
    "epsilon",
    "set_epsilon",
    "image_data_format",
    "set_image_data_format",
    "backend",
):
    export(f"backend.{_name}")(getattr(config, _name))
export("backend.shape")(fill_ops.shape)  # tf.keras's backend.shape is tf.shape
export("backend.name_scope")(graph_lib.name_scope)  # and backend.name_scope tf.name_scope

# Keras's dtype names (keras/src/backend/common/dtypes.py ALLOWED_DTYPES)
ALLOWED_DTYPES = (
    "float16", "float32", "float64", "uint8", "uint16", "uint32", "uint64", "int8", "int16",
    "int32", "int64", "bfloat16", "bool", "string", "float8_e4m3fn", "float8_e5m2",
    "complex64", "complex128",
)  # fmt: skip
_FLOAT8 = ("float8_e4m3fn", "float8_e5m2")
# Python types as the JAX backend names them (sluice's Python ints are int32, as TF1's)
_PYTHON_TYPES = {bool: "bool", int: "int32", float: "float32", str: "string", complex: "complex64"}


@export("backend.standardize_dtype", "utils.standardize_dtype")
def standardize_dtype(dtype: Any) -> str:
    """The Keras name of `dtype` ("float32", "int64", ...): a name, a NumPy or JAX dtype or
    scalar type, a sluice dtype, or a Python type (int: "int32", float: "float32"); None is
    `floatx()`.

    >>> sl.backend.standardize_dtype(None), sl.backend.standardize_dtype(sl.int64)
    ('float32', 'int64')

    Raises:
      ValueError: not one of Keras's dtypes.
    """
    if dtype is None:
        return config.floatx()
    for kind, name in _PYTHON_TYPES.items():
        if dtype is kind:
            return name
    if isinstance(dtype, str) and dtype == "int":  # Keras's spelling of the default int
        return "int32"
    if isinstance(dtype, str):
        name = dtype
    elif hasattr(dtype, "name") and isinstance(dtype.name, str):  # np.dtype, sluice's dtypes
        name = dtype.name
    elif isinstance(dtype, type) and issubclass(dtype, np.generic):  # np.float32, jnp.float32
        name = np.dtype(dtype).name
    else:
        name = getattr(dtype, "__name__", None)
    if name not in ALLOWED_DTYPES:
        raise ValueError(
            f"Invalid dtype: {dtype!r}; Keras's dtypes are {', '.join(ALLOWED_DTYPES)}."
        )
    return name


@export("backend.is_float_dtype")
def is_float_dtype(dtype: Any) -> bool:
    """Whether `dtype` is a float (bfloat16, float16/32/64, the float8s).

    >>> sl.backend.is_float_dtype("bfloat16"), sl.backend.is_float_dtype(int)
    (True, False)
    """
    name = standardize_dtype(dtype)
    return name.startswith("float") or name.startswith("bfloat")


@export("backend.is_int_dtype")
def is_int_dtype(dtype: Any) -> bool:
    """Whether `dtype` is a signed or unsigned integer.

    >>> sl.backend.is_int_dtype("uint8"), sl.backend.is_int_dtype("bool")
    (True, False)
    """
    name = standardize_dtype(dtype)
    return name.startswith("int") or name.startswith("uint")


@export("backend.result_type")
def result_type(*dtypes: Any) -> str:
    """The dtype of an operation on values of `dtypes`, by Keras's promotion rules (JAX's
    lattice, `jnp.result_type`): Python `int` and `float` are weak types that take the width
    of the other operands, or of `floatx()` when they are alone (int: int32, float: float32).
    None is `floatx()`; no argument gives `floatx()`.

    Unlike Keras on JAX, which narrows 64-bit results to 32 bits as JAX does without x64,
    sluice keeps them: its ops compute in float64 and int64 (TF's rule, Keras on TensorFlow).

    >>> sl.backend.result_type("bfloat16", int), sl.backend.result_type("int32", "float32")
    ('bfloat16', 'float32')
    >>> sl.backend.result_type("uint8", "int8"), sl.backend.result_type(int, float)
    ('int16', 'float32')

    Raises:
      ValueError: a float8 dtype with another (no implicit conversion), or an unknown dtype.
    """
    if not dtypes:
        return config.floatx()
    args = []
    for d in dtypes:
        if d is None:
            d = config.floatx()
        if d is int or d is float:
            args.append(d)  # a weak type, promoted by JAX's rules
            continue
        name = standardize_dtype(d)
        if name in _FLOAT8 and len(dtypes) > 1:
            raise ValueError(
                f"There is no implicit conversion from float8 dtypes to others; cast explicitly. "
                f"Received: {dtypes}"
            )
        if name == "string":
            raise ValueError(f"result_type: 'string' takes part in no type promotion ({dtypes}).")
        args.append(name)
    with jax.enable_x64(True):  # JAX's lattice at full width
        out, weak = jax.dtypes.result_type(*args, return_weak_type_flag=True)
    name = np.dtype(out).name
    if weak and name != "bool":  # a weak type alone: the width of floatx
        bits = config.floatx()[-2:]
        kind = "float" if name.startswith(("float", "bfloat")) else name.rstrip("0123456789")
        name = f"{kind}{bits}"
    return name


@export("backend.is_keras_tensor", "utils.is_keras_tensor")
def is_keras_tensor(x: Any) -> bool:
    """Whether `x` is a symbolic tensor: one from `sl.Input`, a layer called on it, or an op on
    such tensors (a graph `Tensor` whose value needs a run). Arrays, weights and concrete
    tensors (made from constants alone, whose value is known) are not.

    >>> sl.backend.is_keras_tensor(sl.Input((3,))), sl.backend.is_keras_tensor(np.ones(3))
    (True, False)
    """
    return isinstance(x, Tensor) and not concrete.is_concrete(x)


@export("backend.get_uid")
def get_uid(prefix: str = "") -> int:
    """A counter per `prefix`: 1 at the first call, then 2, 3, ... (`clear_session` restarts
    them).

    >>> sl.backend.get_uid("doctest_prefix"), sl.backend.get_uid("doctest_prefix")
    (1, 2)
    """
    return naming.get_uid(prefix)


@export("backend.clear_session", "utils.clear_session")
def clear_session(free_memory: bool = True) -> None:
    """Starts Keras's global state afresh, as Keras does: a new default graph (so new inputs
    and the layers called on them are named from scratch: "dense", "dense_1", ...), and
    `get_uid`'s counters at zero. Models that still exist keep their own graph, weights and
    session, and go on working. The seed of `sl.utils.set_random_seed`, if any, seeds the new
    graph too.

    Args:
      free_memory: run Python's garbage collector, so that graphs and values no longer
        referenced are released now.

    Raises:
      AssertionError: called inside `with graph.as_default()`.
    """
    graph_lib.reset_default_graph()
    seed = rng_utils.get_random_seed()
    if seed is not None:
        graph_lib.get_default_graph().seed = seed
    naming.reset_uids()
    if free_memory:
        gc.collect()


# -- tf.keras's backend functions that Keras 3 keeps for tf.keras code -----------------------------
@export("backend.int_shape")
def int_shape(x: Any) -> tuple | None:
    """The static shape of `x` as a tuple of ints and None (unknown dims); None when the rank
    is unknown.

    >>> sl.backend.int_shape(sl.Input((3, 4))), sl.backend.int_shape(np.zeros((2, 5)))
    ((None, 3, 4), (2, 5))
    """
    shape = x.shape
    if isinstance(shape, tuple):
        return shape
    if getattr(shape, "rank", 0) is None:
        return None
    return tuple(shape.as_list())


@export("backend.dtype")
def dtype(x: Any) -> str:
    """The name of the dtype of `x` (a tensor, a weight or an array).

    >>> sl.backend.dtype(sl.Input((3,), dtype="int32"))
    'int32'
    """
    return np.dtype(x.dtype).name


@export("backend.cast")
def cast(x: Any, dtype: Any) -> Any:
    """`x` as `dtype`: a graph op for a symbolic tensor or weight, else a NumPy array.

    >>> sl.backend.cast(np.array([1.7, -2.2]), "int32")
    array([ 1, -2], dtype=int32)
    """
    name = standardize_dtype(dtype)
    if isinstance(x, (Tensor, Variable)) or getattr(x, "graph_variable", None) is not None:
        return fill_ops.cast(x, name)
    return np.asarray(x).astype(name)


def _legacy_seed(seed: int | None) -> int:
    # tf.keras drew a seed from NumPy's global generator, so np.random.seed fixes the draws
    return int(np.random.randint(10e6)) if seed is None else int(seed)


@export("backend.random_uniform")
def random_uniform(
    shape: Any, minval: float = 0.0, maxval: float = 1.0, dtype: Any = None, seed: int | None = None
) -> Tensor:
    """A tensor of `shape` drawn uniformly from [minval, maxval) (a graph op; dtype default
    `floatx()`; seed default a draw from NumPy's global generator, as tf.keras)."""
    return random_ops.random_uniform(
        shape, minval, maxval, dtype=standardize_dtype(dtype), seed=_legacy_seed(seed)
    )


@export("backend.random_normal")
def random_normal(
    shape: Any, mean: float = 0.0, stddev: float = 1.0, dtype: Any = None, seed: int | None = None
) -> Tensor:
    """A tensor of `shape` drawn from a normal distribution (a graph op; dtype default
    `floatx()`; seed default a draw from NumPy's global generator, as tf.keras)."""
    return random_ops.random_normal(
        shape, mean, stddev, dtype=standardize_dtype(dtype), seed=_legacy_seed(seed)
    )
