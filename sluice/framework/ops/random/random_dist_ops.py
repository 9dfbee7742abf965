"""More random ops: RandomGamma (with its alpha gradient), RandomPoissonV2, and the stateless
draws StatelessRandomUniform, StatelessRandomNormal, StatelessTruncatedNormal,
StatelessMultinomial (TF1 `tf.random.gamma`, `poisson`, `stateless_*`).

RandomGamma and RandomPoissonV2 are stateful and seeded like every op in `random_ops`. Their
output shape is `shape + alpha.shape` (`shape + lam.shape`): one draw per parameter per sample.
The gamma sample is differentiable in alpha through the implicit reparameterization TF1 uses
(d sample / d alpha = -(d CDF / d alpha) / pdf, `lax.random_gamma_grad`).

Stateless ops are pure functions of their `seed` input (a 2-vector): the same seed gives the
same numbers in every run and every session. The numbers are JAX's threefry draws, not TF's
Philox ones, so they match TF1's distribution but not its exact values.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import not_differentiable, register_gradient, register_op
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import array_ops, fill_ops
from sluice.framework.ops.core.array_util import host_ints
from sluice.framework.ops.core.core_ops import apply_op, convert_to_tensor
from sluice.framework.ops.core.shape_rules import constant_value, require_rank
from sluice.framework.ops.math import math_ops, reduction_ops
from sluice.framework.ops.random.random_ops import (
    _output_shape,
    _shape_infer,
    get_seed,
    shape_tensor,
)
from sluice.framework.ops.random.seed_stream import SeedStream, keyed_by_stream


def _sample_shape(op) -> TensorShape:
    """`shape + param.shape` for an op whose inputs are (shape, param)."""
    shape, param = op.inputs
    return _shape_infer(shape).concatenate(param.shape)


def _require_float(op, tensor: Tensor, what: str) -> None:
    if not dtypes.is_floating(tensor.dtype):
        raise TypeError(f"{op.type}: {what} must be floating, got {tensor.dtype.name}")


# -- RandomGamma --------------------------------------------------------------------------------
def _gamma_infer(op) -> list:
    _require_float(op, op.inputs[1], "alpha")
    return [(op.inputs[1].dtype, _sample_shape(op))]


@functools.partial(jax.jit, static_argnums=(1,))
def _gamma(key, shape, alpha):
    return jax.random.gamma(key, alpha, shape, alpha.dtype)


def _gamma_kernel(ctx, shape, alpha, **_):
    return _gamma(ctx.random_key(), _output_shape(ctx, shape), alpha)


register_op(
    "RandomGamma", infer=_gamma_infer, kernel=_gamma_kernel, stateful=True, host_inputs=(0,)
)


def _gamma_grad_infer(op) -> list:
    alpha, sample = op.inputs
    if alpha.dtype != sample.dtype:
        raise TypeError(
            f"RandomGammaGrad: alpha and sample differ in dtype: {alpha.dtype.name} "
            f"vs {sample.dtype.name}"
        )
    return [(alpha.dtype, sample.shape)]


register_op(
    "RandomGammaGrad",
    infer=_gamma_grad_infer,
    kernel=lambda alpha, sample, **_: lax.random_gamma_grad(alpha, sample),
)
not_differentiable("RandomGammaGrad")


@register_gradient("RandomGamma")
def _random_gamma_grad(op, grad):
    shape, alpha = op.inputs
    sample_dims = shape.shape[0]
    if sample_dims is None or alpha.shape.rank is None:
        raise ValueError(
            f"RandomGamma {op.name}: the gradient needs static ranks of shape and "
            f"alpha, got shape of shape {shape.shape} and alpha {alpha.shape}"
        )
    # alpha gets leading unit axes so it lines up with the sample's trailing axes.
    padded = array_ops.reshape(alpha, [1] * sample_dims + _dims_or_minus_one(alpha))
    partial = apply_op("RandomGammaGrad", [padded, op.outputs[0]], {}).outputs[0]
    total = grad * partial
    if sample_dims == 0:
        return [None, total]
    return [None, reduction_ops.reduce_sum(total, axis=list(range(sample_dims)))]


def _dims_or_minus_one(t: Tensor) -> list:
    dims = t.shape.as_list()
    if sum(d is None for d in dims) > 1:
        raise ValueError(f"RandomGamma: the gradient needs alpha's shape, got {t.shape}")
    return [-1 if d is None else d for d in dims]


@export("random.gamma")
@keyed_by_stream
def random_gamma(
    shape: Any,
    alpha: Any,
    beta: Any = None,
    dtype: Any = dtypes.float32,
    seed: int | None = None,
    name: str | None = None,
) -> Tensor:
    """Samples from Gamma(alpha, beta) for every alpha/beta pair (TF1 `tf.random.gamma`; also
    Keras's `keras.random.gamma(shape, alpha, dtype=None, seed=None)`: a dtype given as the third
    positional argument, where TF1 has `beta`, is taken as the dtype).

    Args:
      shape: the sample shape, a 1-D integer Tensor or a list of ints.
      alpha: concentration, a float Tensor; broadcast with `beta`.
      beta: inverse scale (rate), default 1.
      dtype: float16/32/64 (None: float32).
      seed: the op seed (see `random_ops.get_seed`), or a `SeedStream` (a
        `keras.random.SeedGenerator`): then a stateless draw from its next seed.
      name: a name for the operation.

    Returns:
      A Tensor of shape `shape + broadcast(alpha, beta).shape`, differentiable in alpha and beta.
    """
    if isinstance(beta, (str, dtypes.DType)):  # Keras's positional dtype
        beta, dtype = None, beta
    dtype = dtype or dtypes.float32
    with graph_lib.name_scope(name, "random_gamma", [shape, alpha, beta]) as scope:
        alpha = convert_to_tensor(alpha, dtype=dtype, name="alpha")
        beta = convert_to_tensor(1.0 if beta is None else beta, dtype=dtype, name="beta")
        alpha_broadcast = alpha + fill_ops.zeros_like(beta)
        if isinstance(seed, SeedStream):
            full = array_ops.concat([shape_tensor(shape), array_ops.shape(alpha_broadcast)], axis=0)
            inputs = [full, seed.next(), alpha_broadcast]
            sample = apply_op("StatelessRandomGammaV2", inputs, {}).outputs[0]
        else:
            seed1, seed2 = get_seed(seed)
            attrs = {"seed": seed1, "seed2": seed2}
            inputs = [shape_tensor(shape), alpha_broadcast]
            sample = apply_op("RandomGamma", inputs, attrs).outputs[0]
        return math_ops.maximum(
            math_ops.divide(sample, beta), convert_to_tensor(_tiny(dtype), dtype=dtype), name=scope
        )


def _tiny(dtype: Any) -> float:
    """The smallest positive normal number of `dtype`: TF1 clamps gamma draws to it."""
    return float(jnp.finfo(dtypes.as_dtype(dtype)).tiny)


# -- RandomPoissonV2 ----------------------------------------------------------------------------
def _poisson_infer(op) -> list:
    rate = op.inputs[1]
    if not (dtypes.is_floating(rate.dtype) or dtypes.is_integer(rate.dtype)):
        raise TypeError(f"RandomPoissonV2: lam must be a number, got {rate.dtype.name}")
    return [(op.get_attr("dtype"), _sample_shape(op))]


@functools.partial(jax.jit, static_argnums=(1, 3))
def _poisson(key, shape, rate, dtype):
    return jax.random.poisson(key, rate, shape).astype(dtype)


def _poisson_kernel(ctx, shape, rate, *, dtype, **_):
    return _poisson(ctx.random_key(), _output_shape(ctx, shape), rate, dtype)


register_op(
    "RandomPoissonV2", infer=_poisson_infer, kernel=_poisson_kernel, stateful=True, host_inputs=(0,)
)
not_differentiable("RandomPoissonV2")


@export("random.poisson")
def random_poisson(
    lam: Any,
    shape: Any,
    dtype: Any = dtypes.float32,
    seed: int | None = None,
    name: str | None = None,
) -> Tensor:
    """Samples from Poisson(lam) for every rate in `lam` (TF1 `tf.random.poisson`).

    Returns:
      A Tensor of shape `shape + lam.shape` and `dtype` (float or int32/int64).
    """
    dtype = dtypes.as_dtype(dtype)
    if not (dtypes.is_floating(dtype) or dtype in (dtypes.int32, dtypes.int64)):
        raise TypeError(f"random_poisson: dtype must be floating, int32 or int64, got {dtype.name}")
    with graph_lib.name_scope(name, "random_poisson", [lam, shape]) as scope:
        rate = convert_to_tensor(lam, name="lam")
        if not dtypes.is_floating(rate.dtype):
            rate = convert_to_tensor(lam, dtype=dtypes.float32, name="lam")
        seed1, seed2 = get_seed(seed)
        attrs = {"seed": seed1, "seed2": seed2, "dtype": dtype}
        return apply_op("RandomPoissonV2", [shape_tensor(shape), rate], attrs, name=scope).outputs[
            0
        ]


# -- stateless draws ----------------------------------------------------------------------------
def _seed_key(seed):
    seed = seed.astype(jnp.uint32)
    return jax.random.fold_in(jax.random.key(seed[0]), seed[1])


def _check_seed(op, seed: Tensor) -> None:
    if seed.dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"{op.type}: seed must be int32 or int64, got {seed.dtype.name}")
    require_rank(seed, 1, "seed")
    if seed.shape[0] not in (None, 2):
        raise ValueError(f"{op.type}: seed must have shape [2], got {seed.shape}")


def _stateless_infer(op) -> list:
    shape, seed = op.inputs
    _check_seed(op, seed)
    dtype = op.get_attr("dtype")
    if not dtypes.is_floating(dtype):
        raise TypeError(f"{op.type}: dtype must be floating, got {dtype.name}")
    return [(dtype, _shape_infer(shape))]


_STATELESS_DRAWS = {
    "StatelessRandomUniform": lambda key, shape, dtype: jax.random.uniform(key, shape, dtype),
    "StatelessRandomNormal": lambda key, shape, dtype: jax.random.normal(key, shape, dtype),
    "StatelessTruncatedNormal": (
        lambda key, shape, dtype: jax.random.truncated_normal(key, -2.0, 2.0, shape, dtype)
    ),
}


def _stateless_kernel(draw):
    # jitted per static shape and dtype: the interpreted engine calls kernels eagerly
    jitted = jax.jit(
        lambda seed, shape, dtype: draw(_seed_key(seed), shape, dtype), static_argnums=(1, 2)
    )

    def kernel(shape, seed, *, dtype, **_):
        return jitted(seed, host_ints(shape, "the shape of a stateless random op"), dtype)

    return kernel


for _op_type, _draw in _STATELESS_DRAWS.items():
    register_op(_op_type, infer=_stateless_infer, kernel=_stateless_kernel(_draw), host_inputs=(0,))
    not_differentiable(_op_type)


def stateless_random(op_type: str, shape: Any, seed: Any, dtype: Any, name: str | None) -> Tensor:
    """One stateless draw of `op_type` (a key of `_STATELESS_DRAWS`)."""
    dtype = dtypes.as_dtype(dtype)
    seed = convert_to_tensor(seed, name="seed")
    return apply_op(op_type, [shape_tensor(shape), seed], {"dtype": dtype}, name).outputs[0]


def _stateless_multinomial_infer(op) -> list:
    logits, num_samples, seed = op.inputs
    _check_seed(op, seed)
    if not dtypes.is_floating(logits.dtype):
        raise TypeError(f"StatelessMultinomial: logits must be floating, got {logits.dtype.name}")
    require_rank(logits, 2, "logits ([batch_size, num_classes])")
    require_rank(num_samples, 0, "num_samples")
    n = constant_value(num_samples)
    return [
        (op.get_attr("output_dtype"), TensorShape([logits.shape[0], None if n is None else int(n)]))
    ]


def _stateless_multinomial_kernel(logits, num_samples, seed, *, output_dtype, **_):
    (n,) = host_ints(num_samples, "num_samples")
    draws = jax.random.categorical(_seed_key(seed), logits, axis=-1, shape=(n, logits.shape[0]))
    return draws.T.astype(output_dtype)


register_op(
    "StatelessMultinomial",
    infer=_stateless_multinomial_infer,
    kernel=_stateless_multinomial_kernel,
    host_inputs=(1,),
)
not_differentiable("StatelessMultinomial")


@export("random.stateless_multinomial")
def stateless_multinomial(
    logits: Any,
    num_samples: Any,
    seed: Any,
    output_dtype: Any = dtypes.int64,
    name: str | None = None,
) -> Tensor:
    """Class draws as `multinomial`, a pure function of `seed` (TF1 `stateless_multinomial`)."""
    output_dtype = dtypes.as_dtype(output_dtype)
    if output_dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"output_dtype must be int32 or int64, got {output_dtype.name}")
    inputs = [
        convert_to_tensor(logits, name="logits"),
        convert_to_tensor(num_samples, dtype=dtypes.int32, name="num_samples"),
        convert_to_tensor(seed, name="seed"),
    ]
    return apply_op("StatelessMultinomial", inputs, {"output_dtype": output_dtype}, name).outputs[0]
