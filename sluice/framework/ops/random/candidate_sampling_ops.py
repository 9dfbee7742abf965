"""Candidate samplers: LogUniformCandidateSampler and UniformCandidateSampler (TF1
`tf.nn.log_uniform_candidate_sampler`, `uniform_candidate_sampler`), the draws behind
`sampled_softmax_loss` and `nce_loss`.

Each op draws `num_sampled` classes in [0, range_max) and returns them with the expected number
of times each true and each sampled class would be drawn, as TF1's `RangeSampler`:

    log-uniform: value = floor(exp(u * log(range_max + 1))) - 1,
                 P(k) = log((k + 2) / (k + 1)) / log(range_max + 1)
    uniform:     P(k) = 1 / range_max
    expected count (unique):   -expm1(num_tries * log1p(-P(k)))  (P(k) * num_sampled if no repeats)
    expected count otherwise:  P(k) * num_sampled

With `unique`, draws that repeat a class are rejected (and counted in `num_tries`) until
`num_sampled` distinct classes are found; the draw is a `lax.while_loop`, so the compiled engine
traces it. The ops are stateful (a fresh draw per run, seeded like every random op).
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import not_differentiable, register_op
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.core.core_ops import apply_op, convert_to_tensor
from sluice.framework.ops.core.shape_rules import require_rank
from sluice.framework.ops.random.random_ops import get_seed


class SampledValues(NamedTuple):
    """What a candidate sampler returns (TF1 returns a plain 3-tuple; this one unpacks alike)."""

    sampled_candidates: Tensor
    true_expected_count: Tensor
    sampled_expected_count: Tensor


def _sampler_infer(op) -> list:
    true_classes = op.inputs[0]
    if true_classes.dtype != dtypes.int64:
        raise TypeError(f"{op.type}: true_classes must be int64, got {true_classes.dtype.name}")
    require_rank(true_classes, 2, "true_classes ([batch_size, num_true])")
    num_true, num_sampled = op.get_attr("num_true"), op.get_attr("num_sampled")
    range_max = op.get_attr("range_max")
    if true_classes.shape[1] not in (None, num_true):
        raise ValueError(
            f"{op.type}: true_classes of shape {true_classes.shape} must have num_true="
            f"{num_true} columns"
        )
    if range_max < 1 or num_sampled < 1:
        raise ValueError(
            f"{op.type}: range_max and num_sampled must be positive, got "
            f"{range_max} and {num_sampled}"
        )
    if op.get_attr("unique") and num_sampled > range_max:
        raise ValueError(
            f"{op.type}: num_sampled ({num_sampled}) must be <= range_max ({range_max}) when "
            "unique=True"
        )
    batch = true_classes.shape[0]
    return [
        (dtypes.int64, TensorShape([num_sampled])),
        (dtypes.float32, TensorShape([batch, num_true])),
        (dtypes.float32, TensorShape([num_sampled])),
    ]


def _log_uniform_probability(k, range_max):
    k = k.astype(jnp.float64)
    return jnp.log((k + 2.0) / (k + 1.0)) / jnp.log1p(jnp.float64(range_max))


def _log_uniform_draw(key, shape, range_max):
    u = jax.random.uniform(key, shape, jnp.float64)
    value = jnp.floor(jnp.exp(u * jnp.log1p(jnp.float64(range_max)))).astype(jnp.int64) - 1
    return value % range_max


def _uniform_probability(k, range_max):
    return jnp.full(k.shape, 1.0 / range_max, jnp.float64)


def _uniform_draw(key, shape, range_max):
    return jax.random.randint(key, shape, 0, range_max, jnp.int64)


def _draw_unique(key, draw, num_sampled, range_max):
    """`num_sampled` distinct classes in drawing order, and the number of draws it took."""

    def not_done(state):
        return state[0] < num_sampled

    def step(state):
        count, tries, key, taken, seen = state
        key, sub = jax.random.split(key)
        value = draw(sub, (), range_max)
        new = ~seen[value]
        taken = jnp.where(new, taken.at[count].set(value), taken)
        return count + new.astype(count.dtype), tries + 1, key, taken, seen.at[value].set(True)

    init = (
        jnp.int64(0),
        jnp.int64(0),
        key,
        jnp.zeros(num_sampled, jnp.int64),
        jnp.zeros(range_max, bool),
    )
    _, tries, _, taken, _ = lax.while_loop(not_done, step, init)
    return taken, tries


@functools.partial(jax.jit, static_argnums=(2, 3, 4, 5, 6))
def _sample(key, true_classes, draw, probability, num_sampled, unique, range_max):
    """The sampler's three outputs; jitted once per sampler and sizes (the interpreter runs
    stateful kernels outside the step's jit)."""
    if unique:
        sampled, tries = _draw_unique(key, draw, num_sampled, range_max)
    else:
        sampled, tries = draw(key, (num_sampled,), range_max), jnp.int64(num_sampled)

    def expected(k):
        p = probability(k, range_max)
        if not unique:
            return (p * num_sampled).astype(jnp.float32)
        repeats = -jnp.expm1(tries.astype(jnp.float64) * jnp.log1p(-p))
        return jnp.where(tries == num_sampled, p * num_sampled, repeats).astype(jnp.float32)

    return sampled, expected(true_classes), expected(sampled)


def _sampler_kernel(draw, probability):
    def kernel(ctx, true_classes, *, num_true, num_sampled, unique, range_max, **_):
        return _sample(
            ctx.random_key(), true_classes, draw, probability, num_sampled, unique, range_max
        )

    return kernel


for _op_type, _draw, _probability in (
    ("LogUniformCandidateSampler", _log_uniform_draw, _log_uniform_probability),
    ("UniformCandidateSampler", _uniform_draw, _uniform_probability),
):
    register_op(
        _op_type, infer=_sampler_infer, kernel=_sampler_kernel(_draw, _probability), stateful=True
    )
    not_differentiable(_op_type)


def _sampler(op_type, true_classes, num_true, num_sampled, unique, range_max, seed, name):
    true_classes = convert_to_tensor(true_classes, dtype=dtypes.int64, name="true_classes")
    seed1, seed2 = get_seed(seed)
    attrs = {
        "num_true": int(num_true),
        "num_sampled": int(num_sampled),
        "unique": bool(unique),
        "range_max": int(range_max),
        "seed": seed1,
        "seed2": seed2,
    }
    return SampledValues(*apply_op(op_type, [true_classes], attrs, name).outputs)


@export("random.log_uniform_candidate_sampler", "nn.log_uniform_candidate_sampler")
def log_uniform_candidate_sampler(
    true_classes: Any,
    num_true: int,
    num_sampled: int,
    unique: bool,
    range_max: int,
    seed: int | None = None,
    name: str | None = None,
) -> SampledValues:
    """Samples classes from the log-uniform (Zipfian) distribution over [0, range_max), the
    right prior for classes sorted by decreasing frequency (see the module text).

    Args:
      true_classes: an int64 [batch_size, num_true] Tensor, the target classes.
      num_true: the number of target classes per example.
      num_sampled: the number of classes to sample.
      unique: sample without repeats (rejecting repeated draws).
      range_max: the number of classes.
      seed: the op seed.
      name: a name for the operation.

    Returns:
      `(sampled_candidates [num_sampled] int64, true_expected_count [batch_size, num_true]
      float32, sampled_expected_count [num_sampled] float32)`.
    """
    return _sampler(
        "LogUniformCandidateSampler",
        true_classes,
        num_true,
        num_sampled,
        unique,
        range_max,
        seed,
        name,
    )


@export("random.uniform_candidate_sampler", "nn.uniform_candidate_sampler")
def uniform_candidate_sampler(
    true_classes: Any,
    num_true: int,
    num_sampled: int,
    unique: bool,
    range_max: int,
    seed: int | None = None,
    name: str | None = None,
) -> SampledValues:
    """Samples classes uniformly from [0, range_max); arguments and results as
    `log_uniform_candidate_sampler`."""
    return _sampler(
        "UniformCandidateSampler",
        true_classes,
        num_true,
        num_sampled,
        unique,
        range_max,
        seed,
        name,
    )
