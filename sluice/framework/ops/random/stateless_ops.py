"""More stateless draws, for Keras's random functions on a seed tensor: StatelessRandomUniformInt,
StatelessRandomGammaV2 (with its alpha gradient), StatelessRandomBinomial and
StatelessRandomPermutation.

Like the stateless ops of `random_dist_ops`, each is a pure function of its inputs: the same
`seed` (an int32/int64 vector of two) gives the same numbers in every run and every session,
with JAX's threefry generator. The first three are TF's ops of the same names and inputs;
StatelessRandomPermutation (`n`, `seed` -> a permutation of `range(n)`) is sluice's own, from
which `shuffle` gathers.

>>> seed = sl.constant([4, 2])
>>> perm = sl.get_default_graph().create_op(
...     "StatelessRandomPermutation", [sl.constant(5), seed]).outputs[0]
>>> sorted(sl.Session().run(perm).tolist())
[0, 1, 2, 3, 4]
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from sluice.framework.ir import dtypes
from sluice.framework.ir.registry import not_differentiable, register_gradient, register_op
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import array_ops
from sluice.framework.ops.core.array_util import host_ints
from sluice.framework.ops.core.core_ops import apply_op
from sluice.framework.ops.core.shape_rules import constant_value, require_rank
from sluice.framework.ops.math import reduction_ops
from sluice.framework.ops.random.random_dist_ops import (
    _check_seed,
    _dims_or_minus_one,
    _seed_key,
)
from sluice.framework.ops.random.random_ops import _shape_infer, uniform_int_infer


def _shape(shape, op_type: str) -> tuple[int, ...]:
    return host_ints(shape, f"the shape of {op_type}")


# -- StatelessRandomUniformInt ------------------------------------------------------------------
def _uniform_int_infer(op) -> list:
    shape, seed, minval, maxval = op.inputs
    _check_seed(op, seed)
    return uniform_int_infer(shape, minval, maxval)


# Each draw is jitted on its own (per static shape), as random_ops does for its stateful draws:
# the interpreted engine calls kernels eagerly, and JAX's samplers are many primitives.
@functools.partial(jax.jit, static_argnums=(1,))
def _uniform_int(seed, shape, minval, maxval):
    return jax.random.randint(_seed_key(seed), shape, minval, maxval, minval.dtype)


def _uniform_int_kernel(shape, seed, minval, maxval, **_):
    return _uniform_int(seed, _shape(shape, "StatelessRandomUniformInt"), minval, maxval)


register_op(
    "StatelessRandomUniformInt",
    infer=_uniform_int_infer,
    kernel=_uniform_int_kernel,
    host_inputs=(0,),
)
not_differentiable("StatelessRandomUniformInt")


# -- StatelessRandomGammaV2 ---------------------------------------------------------------------
def _gamma_infer(op) -> list:
    shape, seed, alpha = op.inputs
    _check_seed(op, seed)
    if not dtypes.is_floating(alpha.dtype):
        raise TypeError(f"alpha must be floating, got {alpha.dtype.name}")
    out = _shape_infer(shape)
    if out.rank is not None and alpha.shape.rank is not None:
        if alpha.shape.rank > out.rank or not TensorShape(
            out.dims[out.rank - alpha.shape.rank :]
        ).is_compatible_with(alpha.shape):
            raise ValueError(f"the shape {out} must end with alpha's shape {alpha.shape}")
    return [(alpha.dtype, out)]


@functools.partial(jax.jit, static_argnums=(1,))
def _gamma(seed, shape, alpha):
    return jax.random.gamma(_seed_key(seed), alpha, shape, alpha.dtype)


def _gamma_kernel(shape, seed, alpha, **_):
    return _gamma(seed, _shape(shape, "StatelessRandomGammaV2"), alpha)


register_op("StatelessRandomGammaV2", infer=_gamma_infer, kernel=_gamma_kernel, host_inputs=(0,))


@register_gradient("StatelessRandomGammaV2")
def _stateless_gamma_grad(op, grad):
    """d sample / d alpha by implicit reparameterization (RandomGammaGrad), summed over the
    sample axes in front of alpha's."""
    sample = op.outputs[0]
    alpha = op.inputs[2]
    if sample.shape.rank is None or alpha.shape.rank is None:
        raise ValueError(
            f"StatelessRandomGammaV2 {op.name}: the gradient needs the ranks of the sample and "
            f"alpha, got {sample.shape} and {alpha.shape}"
        )
    lead = sample.shape.rank - alpha.shape.rank
    padded = array_ops.reshape(alpha, [1] * lead + _dims_or_minus_one(alpha))
    partial = apply_op("RandomGammaGrad", [padded, sample], {}).outputs[0]
    total = grad * partial
    if lead:
        total = reduction_ops.reduce_sum(total, axis=list(range(lead)))
    return [None, None, total]


# -- StatelessRandomBinomial --------------------------------------------------------------------
def _binomial_infer(op) -> list:
    shape, seed, counts, probs = op.inputs
    _check_seed(op, seed)
    for t, what in ((counts, "counts"), (probs, "probs")):
        if not dtypes.is_floating(t.dtype):
            raise TypeError(f"{what} must be floating, got {t.dtype.name}")
    dtype = op.get_attr("dtype")
    if not (dtypes.is_floating(dtype) or dtype in (dtypes.int32, dtypes.int64)):
        raise TypeError(f"dtype must be floating, int32 or int64, got {dtype.name}")
    return [(dtype, _shape_infer(shape))]


@functools.partial(jax.jit, static_argnums=(1, 4))
def _binomial(seed, shape, counts, probs, dtype):
    return jax.random.binomial(_seed_key(seed), counts, probs, shape, probs.dtype).astype(dtype)


def _binomial_kernel(shape, seed, counts, probs, *, dtype, **_):
    return _binomial(seed, _shape(shape, "StatelessRandomBinomial"), counts, probs, dtype)


register_op(
    "StatelessRandomBinomial", infer=_binomial_infer, kernel=_binomial_kernel, host_inputs=(0,)
)
not_differentiable("StatelessRandomBinomial")


# -- StatelessRandomPermutation -----------------------------------------------------------------
def _permutation_infer(op) -> list:
    n, seed = op.inputs
    _check_seed(op, seed)
    if n.dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"n must be int32 or int64, got {n.dtype.name}")
    require_rank(n, 0, "n")
    value = constant_value(n)
    if value is not None and value < 0:
        raise ValueError(f"n must be >= 0, got {int(value)}")
    return [(n.dtype, TensorShape([None if value is None else int(value)]))]


@functools.partial(jax.jit, static_argnums=(1, 2))
def _permutation(seed, size, dtype):
    return jax.random.permutation(_seed_key(seed), jnp.arange(size, dtype=dtype))


def _permutation_kernel(n, seed, **_):
    (size,) = host_ints(n, "the n of StatelessRandomPermutation")
    return _permutation(seed, size, n.dtype)


register_op(
    "StatelessRandomPermutation",
    infer=_permutation_infer,
    kernel=_permutation_kernel,
    host_inputs=(0,),
)
not_differentiable("StatelessRandomPermutation")
