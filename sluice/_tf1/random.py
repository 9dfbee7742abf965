"""`sl.random`: TF1.15's `tf.random` namespace over sluice's random ops.

Seeds follow TF1 everywhere: a graph seed (`set_random_seed`) and an op seed combine as in
`sl.framework.ops.random_ops.get_seed`; the `stateless_*` draws depend on their `seed` tensor
only (JAX's generator, so TF1's distribution but not TF1's exact numbers).

>>> with sl.Graph().as_default():
...     sl.random.set_random_seed(3)
...     x = sl.random.stateless_uniform([2], seed=[1, 2])
...     a, b = sl.Session().run(x), sl.Session().run(x)
>>> bool((a == b).all())
True
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.core.core_ops import convert_to_tensor
from sluice.framework.ops.math import math_ops
from sluice.framework.ops.random.candidate_sampling_ops import (
    log_uniform_candidate_sampler,
    uniform_candidate_sampler,
)
from sluice.framework.ops.random.random_dist_ops import (
    random_gamma,
    random_poisson,
    stateless_multinomial,
    stateless_random,
)
from sluice.framework.ops.random.random_ops import (
    get_seed,
    multinomial,
    random_normal,
    random_shuffle,
    random_uniform,
    truncated_normal,
)
from sluice.framework.ops.random.seed_stream import is_seed_stream

set_random_seed = graph_lib.set_random_seed
uniform = random_uniform
normal = random_normal
shuffle = random_shuffle
gamma = random_gamma
poisson = random_poisson


@export("random.categorical")
def categorical(
    logits: Any,
    num_samples: Any,
    dtype: Any = None,
    seed: Any = None,
    name: str | None = None,
) -> Tensor:
    """Class draws from `[batch, classes]` logits (TF1 `tf.random.categorical`): `multinomial`
    with the output dtype called `dtype` (int64 unless given). With a `keras.random.SeedGenerator`
    as `seed`, Keras's `keras.random.categorical`: a stateless draw from the generator's next
    seed, int32 unless given."""
    if dtype is None and is_seed_stream(seed):
        dtype = dtypes.int32
    return multinomial(logits, num_samples, seed=seed, name=name, output_dtype=dtype)


@export("random.stateless_categorical")
def stateless_categorical(
    logits: Any, num_samples: Any, seed: Any, dtype: Any = dtypes.int64, name: str | None = None
) -> Tensor:
    """`categorical` as a pure function of `seed` (a shape [2] int tensor)."""
    return stateless_multinomial(logits, num_samples, seed, output_dtype=dtype, name=name)


def _scaled(draw: Tensor, scale: Any, shift: Any, scope: str) -> Tensor:
    scale = convert_to_tensor(scale, dtype=draw.dtype, name="scale")
    shift = convert_to_tensor(shift, dtype=draw.dtype, name="shift")
    return math_ops.add(math_ops.multiply(draw, scale), shift, name=scope)


@export("random.stateless_uniform")
def stateless_uniform(
    shape: Any,
    seed: Any,
    minval: Any = 0,
    maxval: Any = None,
    dtype: Any = dtypes.float32,
    name: str | None = None,
) -> Tensor:
    """Uniform draws in `[minval, maxval)` (floating dtypes; maxval defaults to 1), the same for
    the same `seed` (TF1 `tf.random.stateless_uniform`).

    Raises:
      TypeError: for an integer dtype, which sluice does not draw statelessly.
    """
    dtype = dtypes.as_dtype(dtype)
    if not dtypes.is_floating(dtype):
        raise TypeError(f"stateless_uniform: sluice draws floating dtypes only, got {dtype.name}")
    maxval = 1 if maxval is None else maxval
    with graph_lib.name_scope(name, "stateless_random_uniform", [shape, seed]) as scope:
        draw = stateless_random("StatelessRandomUniform", shape, seed, dtype, None)
        minval = convert_to_tensor(minval, dtype=dtype, name="min")
        maxval = convert_to_tensor(maxval, dtype=dtype, name="max")
        return _scaled(draw, maxval - minval, minval, scope)


@export("random.stateless_normal")
def stateless_normal(
    shape: Any,
    seed: Any,
    mean: Any = 0.0,
    stddev: Any = 1.0,
    dtype: Any = dtypes.float32,
    name: str | None = None,
) -> Tensor:
    """Normal draws, the same for the same `seed` (TF1 `tf.random.stateless_normal`)."""
    with graph_lib.name_scope(name, "stateless_random_normal", [shape, seed]) as scope:
        draw = stateless_random("StatelessRandomNormal", shape, seed, dtype, None)
        return _scaled(draw, stddev, mean, scope)


@export("random.stateless_truncated_normal")
def stateless_truncated_normal(
    shape: Any,
    seed: Any,
    mean: Any = 0.0,
    stddev: Any = 1.0,
    dtype: Any = dtypes.float32,
    name: str | None = None,
) -> Tensor:
    """Normal draws cut at two standard deviations, the same for the same `seed`."""
    with graph_lib.name_scope(name, "stateless_truncated_normal", [shape, seed]) as scope:
        draw = stateless_random("StatelessTruncatedNormal", shape, seed, dtype, None)
        return _scaled(draw, stddev, mean, scope)


__all__ = [
    "categorical", "gamma", "get_seed", "log_uniform_candidate_sampler", "multinomial", "normal",
    "poisson", "set_random_seed", "shuffle", "stateless_categorical", "stateless_multinomial",
    "stateless_normal", "stateless_truncated_normal", "stateless_uniform", "truncated_normal",
    "uniform", "uniform_candidate_sampler",
]  # fmt: skip
