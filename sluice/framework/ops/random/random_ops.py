"""Random-number ops: RandomStandardNormal, RandomUniform, RandomUniformInt, TruncatedNormal,
RandomShuffle, Multinomial; TF1's seed rules (`get_seed`).

The functions here are TF1's and, through the same names in `sl.random`, Keras 3's: given a
`SeedStream` (a `keras.random.SeedGenerator`) as `seed`, a function builds the stateless op of
its distribution on the stream's next seed instead of TF1's stateful op (see `seed_stream`).

Every op here is stateful: its kernel `kernel(ctx, *inputs, **attrs)` draws from
`ctx.random_key()`, a fresh JAX key per execution derived from the op's `seed`/`seed2` attrs and a
per-op counter, so each run gives new numbers and the same seeds give the same sequence.

Seeds follow TF1 (`get_seed`): with a graph-level seed (`set_random_seed`) and no op seed, the op
seed is the graph's last op id; with an op seed and no graph seed, the graph seed is
`DEFAULT_GRAPH_SEED`; with neither, both are drawn from the OS, so two graphs differ.

>>> def draw():
...     with sl.Graph().as_default():
...         sl.set_random_seed(1)
...         x = sl.random_normal([2, 3], mean=0.0, stddev=1.0)
...         return sl.Session().run(x)
>>> bool(np.all(draw() == draw()))   # same numbers in every new graph
True
"""

from __future__ import annotations

import functools
import random
from typing import Any

import jax
import numpy as np

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import not_differentiable, register_op
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import array_ops, fill_ops, gather_ops
from sluice.framework.ops.core.array_util import host_ints
from sluice.framework.ops.core.core_ops import apply_op, constant, convert_to_tensor
from sluice.framework.ops.core.shape_rules import constant_value, partial_shape_value, require_rank
from sluice.framework.ops.math import math_ops
from sluice.framework.ops.random.seed_stream import SeedStream, keyed_by_stream

DEFAULT_GRAPH_SEED = 87654321
_MAXINT32 = 2**31 - 1


@export("random.get_seed")
def get_seed(op_seed: int | None) -> tuple[int, int]:
    """The `(seed, seed2)` pair for a random op built in the default graph (TF1 rules).

    Args:
      op_seed: the op-level seed given by the user, or None.

    Returns:
      Two ints for the op's `seed` and `seed2` attrs; never `(0, 0)`.
    """
    g = graph_lib.get_default_graph()
    if g.seed is not None:
        if op_seed is None:
            op_seed = g.last_op_id  # TF1: the id of the last op built so far
        seeds = (g.seed % _MAXINT32, op_seed % _MAXINT32)
    elif op_seed is not None:
        seeds = (DEFAULT_GRAPH_SEED, op_seed % _MAXINT32)
    else:
        system = random.SystemRandom()
        seeds = (system.randrange(_MAXINT32), system.randrange(_MAXINT32))
    return (0, _MAXINT32) if seeds == (0, 0) else seeds


# -- shared helpers -----------------------------------------------------------------------------
def shape_tensor(shape: Any) -> Tensor:
    """A 1-D integer tensor for a shape given as a Tensor, a TensorShape or a list of dims."""
    if isinstance(shape, Tensor):
        return shape
    if isinstance(shape, TensorShape):
        if not shape.is_fully_defined():
            raise ValueError(f"a random op needs a fully defined shape, got {shape}")
        shape = shape.as_list()
    if isinstance(shape, (list, tuple)):
        if any(d is None for d in shape):
            raise ValueError(f"a random op needs every dimension of its shape, got {shape}")
        if any(isinstance(d, Tensor) for d in shape):
            return array_ops.stack([convert_to_tensor(d, dtype=dtypes.int32) for d in shape])
    return constant(np.asarray(shape, dtype=np.int64).astype(np.int32), name="shape")


def _shape_infer(shape: Tensor) -> TensorShape:
    if not dtypes.is_integer(shape.dtype):
        raise TypeError(f"the shape must be an int32 or int64 tensor, got {shape.dtype.name}")
    require_rank(shape, 1, "shape")
    return partial_shape_value(shape)


def _output_shape(ctx, shape) -> tuple[int, ...]:
    """The shape to draw: the op's static output shape when fully known, else the value of the
    shape input, a host input (concrete, never traced)."""
    static = ctx.op.outputs[0].shape if ctx.op is not None else TensorShape(None)
    if static.is_fully_defined():
        return tuple(static.as_list())
    return host_ints(shape, "the shape of a random op")


def _random_attrs(dtype: Any, seed: int | None) -> dict:
    seed1, seed2 = get_seed(seed)
    return {"dtype": dtypes.as_dtype(dtype), "seed": seed1, "seed2": seed2}


# TF1's stateful op -> the stateless op of the same distribution (random_dist_ops)
_STATELESS = {
    "RandomStandardNormal": "StatelessRandomNormal",
    "TruncatedNormal": "StatelessTruncatedNormal",
    "RandomUniform": "StatelessRandomUniform",
}


def _draw(op_type: str, shape: Any, dtype: Any, seed: Any) -> tuple[str, list, dict]:
    """(op type, inputs, attrs) of one draw: TF1's stateful `op_type` seeded by `get_seed`, or,
    for a `SeedStream`, its stateless twin on the stream's next seed."""
    if isinstance(seed, SeedStream):
        inputs = [shape_tensor(shape), seed.next()]
        return _STATELESS[op_type], inputs, {"dtype": dtypes.as_dtype(dtype)}
    return op_type, [shape_tensor(shape)], _random_attrs(dtype, seed)


def _require_float_attr(op) -> np.dtype:
    dtype = op.get_attr("dtype")
    if not dtypes.is_floating(dtype):
        raise TypeError(f"expected a floating dtype, got {dtype.name}")
    return dtype


def _is_python(value: Any, number: float) -> bool:
    return isinstance(value, (int, float)) and value == number


def _scaled(op_type: str, inputs: list, attrs: dict, scale: Any, shift: Any, scope: str) -> Tensor:
    """`op_type(*inputs) * scale + shift` in scope `scope`, the last op named by the scope; a
    multiplication by a Python 1 and an addition of a Python 0 are left out."""
    multiply, add = not _is_python(scale, 1), not _is_python(shift, 0)
    x = apply_op(op_type, inputs, attrs, name=None if multiply or add else scope).outputs[0]
    if multiply:
        scale = convert_to_tensor(scale, dtype=x.dtype, name="scale")
        x = math_ops.multiply(x, scale, name=None if add else scope)
    if add:
        x = math_ops.add(x, convert_to_tensor(shift, dtype=x.dtype, name="shift"), name=scope)
    return x


# -- RandomStandardNormal -----------------------------------------------------------------------
def _float_random_infer(op) -> list:
    return [(_require_float_attr(op), _shape_infer(op.inputs[0]))]


# Stateful kernels run outside `jax.jit`, so each draw is jitted on its own: one compiled
# function per static shape and dtype instead of one eager dispatch per primitive.
@functools.partial(jax.jit, static_argnums=(1, 2))
def _normal(key, shape, dtype):
    return jax.random.normal(key, shape, dtype)


def _standard_normal_kernel(ctx, shape, *, dtype, **_):
    return _normal(ctx.random_key(), _output_shape(ctx, shape), dtype)


register_op(
    "RandomStandardNormal",
    infer=_float_random_infer,
    kernel=_standard_normal_kernel,
    stateful=True,
    host_inputs=(0,),
)
not_differentiable("RandomStandardNormal")


@export("random_normal", "random.normal")
@keyed_by_stream
def random_normal(
    shape: Any,
    mean: Any = 0.0,
    stddev: Any = 1.0,
    dtype: Any = dtypes.float32,
    seed: int | None = None,
    name: str | None = None,
) -> Tensor:
    """Samples from a normal distribution (TF1 `tf.random_normal`).

    Args:
      shape: a 1-D integer Tensor or a list of ints, the output shape.
      mean: the mean, a scalar of `dtype`.
      stddev: the standard deviation, a scalar of `dtype`.
      dtype: a floating dtype (None: float32).
      seed: the op seed (see `get_seed`), or a `SeedStream` (a `keras.random.SeedGenerator`):
        then a stateless draw from its next seed.
      name: a name for the operation.

    Returns:
      A Tensor of `shape` and `dtype`, new values on every run (with a `SeedStream`: the values
      of the stream's seed).
    """
    with graph_lib.name_scope(name, "random_normal", [shape, mean, stddev]) as scope:
        op_type, inputs, attrs = _draw("RandomStandardNormal", shape, dtype or "float32", seed)
        return _scaled(op_type, inputs, attrs, stddev, mean, scope)


# -- TruncatedNormal ----------------------------------------------------------------------------
@functools.partial(jax.jit, static_argnums=(1, 2))
def _truncated_normal(key, shape, dtype):
    return jax.random.truncated_normal(key, -2.0, 2.0, shape, dtype)


def _truncated_normal_kernel(ctx, shape, *, dtype, **_):
    return _truncated_normal(ctx.random_key(), _output_shape(ctx, shape), dtype)


register_op(
    "TruncatedNormal",
    infer=_float_random_infer,
    kernel=_truncated_normal_kernel,
    stateful=True,
    host_inputs=(0,),
)
not_differentiable("TruncatedNormal")


@export("truncated_normal", "random.truncated_normal")
@keyed_by_stream
def truncated_normal(
    shape: Any,
    mean: Any = 0.0,
    stddev: Any = 1.0,
    dtype: Any = dtypes.float32,
    seed: int | None = None,
    name: str | None = None,
) -> Tensor:
    """Samples from a normal distribution truncated to two standard deviations around `mean`
    (TF1 `tf.truncated_normal`). Arguments and result as in `random_normal`."""
    with graph_lib.name_scope(name, "truncated_normal", [shape, mean, stddev]) as scope:
        op_type, inputs, attrs = _draw("TruncatedNormal", shape, dtype or "float32", seed)
        return _scaled(op_type, inputs, attrs, stddev, mean, scope)


# -- RandomUniform, RandomUniformInt ------------------------------------------------------------
@functools.partial(jax.jit, static_argnums=(1, 2))
def _uniform(key, shape, dtype):
    return jax.random.uniform(key, shape, dtype)


def _uniform_kernel(ctx, shape, *, dtype, **_):
    return _uniform(ctx.random_key(), _output_shape(ctx, shape), dtype)


register_op(
    "RandomUniform",
    infer=_float_random_infer,
    kernel=_uniform_kernel,
    stateful=True,
    host_inputs=(0,),
)
not_differentiable("RandomUniform")


def uniform_int_infer(shape: Tensor, minval: Tensor, maxval: Tensor) -> list:
    """The output of a uniform integer draw (RandomUniformInt, StatelessRandomUniformInt):
    `shape`'s value, in the dtype of the bounds, which must be int32 or int64 scalars of one
    dtype with `minval < maxval` when both are known."""
    if minval.dtype != maxval.dtype or minval.dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(
            f"minval and maxval must both be int32 or int64, got {minval.dtype.name} and "
            f"{maxval.dtype.name}"
        )
    require_rank(minval, 0, "minval")
    require_rank(maxval, 0, "maxval")
    low, high = constant_value(minval), constant_value(maxval)
    if low is not None and high is not None and not low < high:
        raise ValueError(f"need minval < maxval, got {int(low)} >= {int(high)}")
    return [(minval.dtype, _shape_infer(shape))]


def _uniform_int_infer(op) -> list:
    return uniform_int_infer(*op.inputs)


@functools.partial(jax.jit, static_argnums=(1,))
def _uniform_int(key, shape, minval, maxval):
    return jax.random.randint(key, shape, minval, maxval, minval.dtype)


def _uniform_int_kernel(ctx, shape, minval, maxval, **_):
    return _uniform_int(ctx.random_key(), _output_shape(ctx, shape), minval, maxval)


register_op(
    "RandomUniformInt",
    infer=_uniform_int_infer,
    kernel=_uniform_int_kernel,
    stateful=True,
    host_inputs=(0,),
)
not_differentiable("RandomUniformInt")


@export("random_uniform", "random.uniform")
@keyed_by_stream
def random_uniform(
    shape: Any,
    minval: Any = 0,
    maxval: Any = None,
    dtype: Any = dtypes.float32,
    seed: int | None = None,
    name: str | None = None,
) -> Tensor:
    """Samples uniformly from `[minval, maxval)` (TF1 `tf.random_uniform`).

    Args:
      shape: a 1-D integer Tensor or a list of ints, the output shape.
      minval: the inclusive lower bound, a scalar of `dtype`.
      maxval: the exclusive upper bound; defaults to 1 for floating dtypes, required for
        int32/int64.
      dtype: float16/32/64, int32 or int64 (None: float32).
      seed: the op seed (see `get_seed`), or a `SeedStream` (see `random_normal`).
      name: a name for the operation.

    Returns:
      A Tensor of `shape` and `dtype`, new values on every run.

    Raises:
      ValueError: for an integer dtype without `maxval`.
    """
    dtype = dtypes.as_dtype(dtype or "float32")
    if dtype in (dtypes.int32, dtypes.int64):
        if maxval is None:
            raise ValueError(f"random_uniform needs maxval for the integer dtype {dtype.name}")
        with graph_lib.name_scope(name, "random_uniform", [shape, minval, maxval]) as scope:
            inputs = [
                shape_tensor(shape),
                convert_to_tensor(minval, dtype=dtype, name="min"),
                convert_to_tensor(maxval, dtype=dtype, name="max"),
            ]
            if isinstance(seed, SeedStream):
                inputs.insert(1, seed.next())
                return apply_op("StatelessRandomUniformInt", inputs, {}, name=scope).outputs[0]
            seed1, seed2 = get_seed(seed)
            attrs = {"seed": seed1, "seed2": seed2}
            return apply_op("RandomUniformInt", inputs, attrs, name=scope).outputs[0]
    if maxval is None:
        maxval = 1
    with graph_lib.name_scope(name, "random_uniform", [shape, minval, maxval]) as scope:
        if isinstance(minval, (int, float)) and isinstance(maxval, (int, float)):
            scale = maxval - minval
        else:
            minval = convert_to_tensor(minval, dtype=dtype, name="min")
            maxval = convert_to_tensor(maxval, dtype=dtype, name="max")
            scale = math_ops.subtract(maxval, minval)
        op_type, inputs, attrs = _draw("RandomUniform", shape, dtype, seed)
        return _scaled(op_type, inputs, attrs, scale, minval, scope)


# -- RandomShuffle ------------------------------------------------------------------------------
def _shuffle_infer(op) -> list:
    value = op.inputs[0]
    return [(value.dtype, value.shape)]


@jax.jit
def _permute_rows(key, value):
    return jax.random.permutation(key, value, axis=0)


def _shuffle_kernel(ctx, value, **_):
    if value.ndim == 0:
        return value
    return _permute_rows(ctx.random_key(), value)


register_op("RandomShuffle", infer=_shuffle_infer, kernel=_shuffle_kernel, stateful=True)
not_differentiable("RandomShuffle")


@export("random_shuffle", "random.shuffle")
@keyed_by_stream
def random_shuffle(
    value: Any, seed: Any = None, name: str | None = None, *, axis: int = 0
) -> Tensor:
    """Shuffles `value` along its first dimension (TF1 `tf.random_shuffle`), or along `axis`
    (Keras's `keras.random.shuffle(x, axis=0, seed=None)`; its `axis` is keyword-only here,
    since TF1's second argument is the seed).

    Args:
      value: a Tensor; its slices along `axis` are permuted.
      seed: the op seed (see `get_seed`), or a `SeedStream` (see `random_normal`).
      name: a name for the operation.
      axis: the dimension to shuffle along.

    Returns:
      A Tensor of the same shape and dtype, in a new order on every run (with a `SeedStream`:
      the order of the stream's seed).
    """
    value = convert_to_tensor(value)
    rank = value.shape.rank
    if rank is not None and rank and not -rank <= axis < rank:
        raise ValueError(f"shuffle: axis {axis} is out of range for a tensor of rank {rank}")
    if isinstance(seed, SeedStream):
        with graph_lib.name_scope(name, "random_shuffle", [value]) as scope:
            if rank == 0:
                return value
            n = value.shape[axis] if rank is not None else None
            n = constant(n, dtypes.int32) if n is not None else fill_ops.shape(value)[axis]
            perm = apply_op("StatelessRandomPermutation", [n, seed.next()], {}).outputs[0]
            return gather_ops.gather(value, perm, axis=axis, name=scope)
    seed1, seed2 = get_seed(seed)
    attrs = {"seed": seed1, "seed2": seed2}
    if axis in (0, -rank if rank else 0):
        return apply_op("RandomShuffle", [value], attrs, name).outputs[0]
    if rank is None:
        raise ValueError(f"shuffle along axis {axis} needs the rank of {value.name}")
    perm = list(range(rank))
    perm[0], perm[axis % rank] = perm[axis % rank], 0  # a swap: its own inverse
    with graph_lib.name_scope(name, "random_shuffle", [value]) as scope:
        moved = apply_op("RandomShuffle", [array_ops.transpose(value, perm)], attrs).outputs[0]
        return array_ops.transpose(moved, perm, name=scope)


# -- Multinomial --------------------------------------------------------------------------------
def _multinomial_infer(op) -> list:
    logits, num_samples = op.inputs
    if not dtypes.is_floating(logits.dtype):
        raise TypeError(f"logits must be floating, got {logits.dtype.name}")
    require_rank(logits, 2, "logits ([batch_size, num_classes])")
    if num_samples.dtype != dtypes.int32:
        raise TypeError(f"num_samples must be int32, got {num_samples.dtype.name}")
    require_rank(num_samples, 0, "num_samples")
    n = constant_value(num_samples)
    if n is not None and n < 0:
        raise ValueError(f"num_samples must be >= 0, got {int(n)}")
    batch = logits.shape[0] if logits.shape.rank is not None else None
    shape = TensorShape([batch, None if n is None else int(n)])
    return [(op.get_attr("output_dtype"), shape)]


@functools.partial(jax.jit, static_argnums=(2, 3))
def _categorical(key, logits, num_samples, dtype):
    draws = jax.random.categorical(key, logits, axis=-1, shape=(num_samples, logits.shape[0]))
    return draws.T.astype(dtype)


def _multinomial_kernel(ctx, logits, num_samples, *, output_dtype, **_):
    n = ctx.op.outputs[0].shape[1] if ctx.op is not None else None
    n = host_ints(num_samples, "num_samples")[0] if n is None else n
    return _categorical(ctx.random_key(), logits, n, output_dtype)


register_op(
    "Multinomial",
    infer=_multinomial_infer,
    kernel=_multinomial_kernel,
    stateful=True,
    host_inputs=(1,),
)
not_differentiable("Multinomial")


@export("multinomial", "random.multinomial")
@keyed_by_stream
def multinomial(
    logits: Any,
    num_samples: Any,
    seed: int | None = None,
    name: str | None = None,
    output_dtype: Any = None,
) -> Tensor:
    """Draws class indices from categorical distributions (TF1 `tf.multinomial`).

    Args:
      logits: `[batch_size, num_classes]` unnormalized log-probabilities.
      num_samples: a scalar int32, the number of draws per row.
      seed: the op seed (see `get_seed`), or a `SeedStream` (see `random_normal`).
      name: a name for the operation.
      output_dtype: int32 or int64 (default).

    Returns:
      A `[batch_size, num_samples]` Tensor of class indices.
    """
    output_dtype = dtypes.as_dtype(output_dtype or dtypes.int64)
    if output_dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"output_dtype must be int32 or int64, got {output_dtype.name}")
    logits = convert_to_tensor(logits, name="logits")
    num_samples = convert_to_tensor(num_samples, dtype=dtypes.int32, name="num_samples")
    if isinstance(seed, SeedStream):
        inputs = [logits, num_samples, seed.next()]
        attrs = {"output_dtype": output_dtype}
        return apply_op("StatelessMultinomial", inputs, attrs, name).outputs[0]
    seed1, seed2 = get_seed(seed)
    attrs = {"seed": seed1, "seed2": seed2, "output_dtype": output_dtype}
    return apply_op("Multinomial", [logits, num_samples], attrs, name).outputs[0]
