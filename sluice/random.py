"""`sl.random`: TF1.15's `tf.random` namespace over sluice's random ops.

The implementation is sluice/_tf1/random.py."""

from sluice._tf1.random import (
    categorical,
    gamma,
    get_seed,
    log_uniform_candidate_sampler,
    multinomial,
    normal,
    poisson,
    set_random_seed,
    shuffle,
    stateless_categorical,
    stateless_multinomial,
    stateless_normal,
    stateless_truncated_normal,
    stateless_uniform,
    truncated_normal,
    uniform,
    uniform_candidate_sampler,
)

__all__ = [
    "categorical",
    "gamma",
    "get_seed",
    "log_uniform_candidate_sampler",
    "multinomial",
    "normal",
    "poisson",
    "set_random_seed",
    "shuffle",
    "stateless_categorical",
    "stateless_multinomial",
    "stateless_normal",
    "stateless_truncated_normal",
    "stateless_uniform",
    "truncated_normal",
    "uniform",
    "uniform_candidate_sampler",
]
