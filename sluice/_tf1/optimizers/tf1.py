"""TF1 spellings (`sl.train.*Optimizer`): TF1's argument names, defaults and update formulas.

Each class only maps its arguments onto a factory of `transforms`; everything else is the shared
`Optimizer`. The formulas below are TF1's kernels (`training_ops.cc`), reproduced by optax.
"""

from __future__ import annotations

from typing import Any

import optax

from sluice._export import export
from sluice._keras.optimizers import transforms
from sluice._keras.optimizers.optimizer import Optimizer


@export("train.GradientDescentOptimizer")
class GradientDescentOptimizer(Optimizer):
    """var -= learning_rate * grad.

    >>> w = sl.Variable(5.0)
    >>> train_op = sl.train.GradientDescentOptimizer(0.1).minimize(sl.square(w - 2.0))
    >>> with sl.Session() as sess:
    ...     sess.run(sl.global_variables_initializer())
    ...     sess.run(train_op)
    ...     print(sess.run(w))   # 5 - 0.1 * 2 * (5 - 2)
    4.4
    """

    sparse_update = "rows"  # TF1: scatter_sub(var, indices, lr * values), repeats summed

    def __init__(
        self,
        learning_rate: Any,
        use_locking: bool = False,
        name: str = "GradientDescent",
        **clipping: Any,
    ):
        super().__init__(learning_rate, name, **clipping)

    def _transform(self, learning_rate: Any) -> optax.GradientTransformation:
        return transforms.sgd(learning_rate)


@export("train.MomentumOptimizer")
class MomentumOptimizer(Optimizer):
    """accum = momentum * accum + grad; var -= lr * accum (nesterov: var -= lr * (grad +
    momentum * accum)). State: `<name>/<var>/trace`.

    An IndexedSlices gradient updates only its rows' accum and var (TF1's sparse_apply_momentum):
    the other rows' accum does not decay and they do not move."""

    sparse_update = "rows"

    def __init__(
        self,
        learning_rate: Any,
        momentum: float,
        use_locking: bool = False,
        name: str = "Momentum",
        use_nesterov: bool = False,
        **clipping: Any,
    ):
        super().__init__(learning_rate, name, **clipping)
        self._momentum = momentum
        self._use_nesterov = use_nesterov

    def _transform(self, learning_rate: Any) -> optax.GradientTransformation:
        return transforms.sgd(learning_rate, self._momentum, self._use_nesterov)


@export("train.AdamOptimizer")
class AdamOptimizer(Optimizer):
    """lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t); m = beta1*m + (1-beta1)*g;
    v = beta2*v + (1-beta2)*g^2; var -= lr_t * m / (sqrt(v) + epsilon).

    `epsilon` is TF1's "epsilon hat" (added after the bias-corrected rescaling), not optax's eps.
    State: `<name>/count` and `<name>/<var>/mu`, `<name>/<var>/nu`.

    An IndexedSlices gradient is applied densely: TF1's sparse Adam decays every row's m and v
    and moves every row, which is the dense update of the summed slices.
    """

    sparse_update = "dense"

    def __init__(
        self,
        learning_rate: Any = 0.001,
        beta1: float = 0.9,
        beta2: float = 0.999,
        epsilon: float = 1e-08,
        use_locking: bool = False,
        name: str = "Adam",
        **clipping: Any,
    ):
        super().__init__(learning_rate, name, **clipping)
        self._beta1, self._beta2, self._epsilon = beta1, beta2, epsilon

    def _transform(self, learning_rate: Any) -> optax.GradientTransformation:
        return transforms.adam(learning_rate, self._beta1, self._beta2, self._epsilon)


@export("train.RMSPropOptimizer")
class RMSPropOptimizer(Optimizer):
    """ms = decay*ms + (1-decay)*g^2; mom = momentum*mom + lr*g/sqrt(ms + epsilon); var -= mom.

    As in TF1, `ms` starts at ones (and `mg`, the centered mean, at zeros).
    State: `<name>/<var>/nu` (ms), `<name>/<var>/mu` (mg, centered only), `<name>/<var>/trace`
    (mom, when momentum > 0). An IndexedSlices gradient updates only its rows (TF1's
    sparse_apply_rms_prop).
    """

    sparse_update = "rows"

    def __init__(
        self,
        learning_rate: Any,
        decay: float = 0.9,
        momentum: float = 0.0,
        epsilon: float = 1e-10,
        use_locking: bool = False,
        centered: bool = False,
        name: str = "RMSProp",
        **clipping: Any,
    ):
        super().__init__(learning_rate, name, **clipping)
        self._decay, self._momentum, self._epsilon, self._centered = (
            decay,
            momentum,
            epsilon,
            centered,
        )

    def _transform(self, learning_rate: Any) -> optax.GradientTransformation:
        return transforms.rmsprop(
            learning_rate,
            self._decay,
            self._momentum,
            self._epsilon,
            self._centered,
            initial_scale=1.0,
        )


@export("train.AdagradOptimizer")
class AdagradOptimizer(Optimizer):
    """accum += g^2 (starting at initial_accumulator_value); var -= lr * g / sqrt(accum).

    State: `<name>/<var>/sum_of_squares`. An IndexedSlices gradient updates only its rows (TF1's
    sparse_apply_adagrad).
    """

    sparse_update = "rows"

    def __init__(
        self,
        learning_rate: Any,
        initial_accumulator_value: float = 0.1,
        use_locking: bool = False,
        name: str = "Adagrad",
        **clipping: Any,
    ):
        if initial_accumulator_value <= 0.0:
            raise ValueError(
                f"initial_accumulator_value must be positive, got {initial_accumulator_value}."
            )
        super().__init__(learning_rate, name, **clipping)
        self._initial_accumulator_value = initial_accumulator_value

    def _transform(self, learning_rate: Any) -> optax.GradientTransformation:
        return transforms.adagrad(learning_rate, self._initial_accumulator_value, epsilon=0.0)


@export("train.AdadeltaOptimizer")
class AdadeltaOptimizer(Optimizer):
    """accum = rho*accum + (1-rho)*g^2; update = sqrt(accum_update + epsilon) /
    sqrt(accum + epsilon) * g; accum_update = rho*accum_update + (1-rho)*update^2;
    var -= lr * update (TF1's ApplyAdadelta, which is optax's adadelta).

    State: `<name>/<var>/e_g` (accum) and `<name>/<var>/e_x` (accum_update). An IndexedSlices
    gradient updates only its rows (TF1's sparse_apply_adadelta).
    """

    sparse_update = "rows"

    def __init__(
        self,
        learning_rate: Any = 0.001,
        rho: float = 0.95,
        epsilon: float = 1e-8,
        use_locking: bool = False,
        name: str = "Adadelta",
        **clipping: Any,
    ):
        super().__init__(learning_rate, name, **clipping)
        self._rho, self._epsilon = rho, epsilon

    def _transform(self, learning_rate: Any) -> optax.GradientTransformation:
        return transforms.adadelta(learning_rate, self._rho, self._epsilon)


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


@export("train.FtrlOptimizer")
class FtrlOptimizer(Optimizer):
    """FTRL-proximal (McMahan et al. 2013), TF1's ApplyFtrl / ApplyFtrlV2 (see
    `transforms.ftrl` for the update).

    State: `<name>/count`, `<name>/<var>/accumulator` (starting at initial_accumulator_value)
    and `<name>/<var>/linear`. An IndexedSlices gradient updates only its rows (TF1's
    sparse_apply_ftrl).

    Raises:
      ValueError: learning_rate_power > 0, or a negative initial accumulator or regularization
        strength (as TF1).
    """

    sparse_update = "rows"

    def __init__(
        self,
        learning_rate: Any,
        learning_rate_power: float = -0.5,
        initial_accumulator_value: float = 0.1,
        l1_regularization_strength: float = 0.0,
        l2_regularization_strength: float = 0.0,
        use_locking: bool = False,
        name: str = "Ftrl",
        accum_name: str | None = None,
        linear_name: str | None = None,
        l2_shrinkage_regularization_strength: float = 0.0,
        **clipping: Any,
    ):
        _require(
            initial_accumulator_value >= 0.0,
            f"initial_accumulator_value {initial_accumulator_value} needs to be positive or zero",
        )
        _require(
            learning_rate_power <= 0.0,
            f"learning_rate_power {learning_rate_power} needs to be negative or zero",
        )
        _require(
            l1_regularization_strength >= 0.0,
            f"l1_regularization_strength {l1_regularization_strength} needs to be positive or zero",
        )
        _require(
            l2_regularization_strength >= 0.0,
            f"l2_regularization_strength {l2_regularization_strength} needs to be positive or zero",
        )
        _require(
            l2_shrinkage_regularization_strength >= 0.0,
            f"l2_shrinkage_regularization_strength {l2_shrinkage_regularization_strength} "
            "needs to be positive or zero",
        )
        super().__init__(learning_rate, name, **clipping)
        self._ftrl_args = (
            learning_rate_power,
            initial_accumulator_value,
            l1_regularization_strength,
            l2_regularization_strength,
            l2_shrinkage_regularization_strength,
        )

    def _transform(self, learning_rate: Any) -> optax.GradientTransformation:
        return transforms.ftrl(learning_rate, *self._ftrl_args)


@export("train.ProximalGradientDescentOptimizer")
class ProximalGradientDescentOptimizer(Optimizer):
    """prox = var - lr*g; var = sign(prox) * max(|prox| - lr*l1, 0) / (1 + lr*l2) (TF1's
    ApplyProximalGradientDescent). State: `<name>/count`."""

    sparse_update = "rows"

    def __init__(
        self,
        learning_rate: Any,
        l1_regularization_strength: float = 0.0,
        l2_regularization_strength: float = 0.0,
        use_locking: bool = False,
        name: str = "ProximalGradientDescent",
        **clipping: Any,
    ):
        super().__init__(learning_rate, name, **clipping)
        self._l1, self._l2 = l1_regularization_strength, l2_regularization_strength

    def _transform(self, learning_rate: Any) -> optax.GradientTransformation:
        return transforms.proximal_gradient_descent(learning_rate, self._l1, self._l2)


@export("train.ProximalAdagradOptimizer")
class ProximalAdagradOptimizer(Optimizer):
    """accum += g^2; lr_t = lr / sqrt(accum); prox = var - lr_t*g;
    var = sign(prox) * max(|prox| - lr_t*l1, 0) / (1 + lr_t*l2) (TF1's ApplyProximalAdagrad).
    State: `<name>/count`, `<name>/<var>/accumulator`.

    Raises:
      ValueError: initial_accumulator_value not positive.
    """

    sparse_update = "rows"

    def __init__(
        self,
        learning_rate: Any,
        initial_accumulator_value: float = 0.1,
        l1_regularization_strength: float = 0.0,
        l2_regularization_strength: float = 0.0,
        use_locking: bool = False,
        name: str = "ProximalAdagrad",
        **clipping: Any,
    ):
        _require(
            initial_accumulator_value > 0.0,
            f"initial_accumulator_value must be positive, got {initial_accumulator_value}",
        )
        super().__init__(learning_rate, name, **clipping)
        self._args = (
            initial_accumulator_value,
            l1_regularization_strength,
            l2_regularization_strength,
        )

    def _transform(self, learning_rate: Any) -> optax.GradientTransformation:
        return transforms.proximal_adagrad(learning_rate, *self._args)
