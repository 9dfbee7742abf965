"""TF1 spellings (`sl.train.*Optimizer`): TF1's argument names, defaults and update formulas.

Each class only maps its arguments onto a factory of `transforms`; everything else is the shared
`Optimizer`. The formulas below are TF1's kernels (`training_ops.cc`), reproduced by optax.
"""

from __future__ import annotations

from typing import Any

import optax

from sluice.optimizers import transforms
from sluice.optimizers.optimizer import Optimizer


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


class MomentumOptimizer(Optimizer):
    """accum = momentum * accum + grad; var -= lr * accum (nesterov: var -= lr * (grad +
    momentum * accum)). State: `<name>/<var>/trace`."""

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


class AdamOptimizer(Optimizer):
    """lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t); m = beta1*m + (1-beta1)*g;
    v = beta2*v + (1-beta2)*g^2; var -= lr_t * m / (sqrt(v) + epsilon).

    `epsilon` is TF1's "epsilon hat" (added after the bias-corrected rescaling), not optax's eps.
    State: `<name>/count` and `<name>/<var>/mu`, `<name>/<var>/nu`.
    """

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


class RMSPropOptimizer(Optimizer):
    """ms = decay*ms + (1-decay)*g^2; mom = momentum*mom + lr*g/sqrt(ms + epsilon); var -= mom.

    As in TF1, `ms` starts at ones (and `mg`, the centered mean, at zeros).
    State: `<name>/<var>/nu` (ms), `<name>/<var>/mu` (mg, centered only), `<name>/<var>/trace`
    (mom, when momentum > 0).
    """

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


class AdagradOptimizer(Optimizer):
    """accum += g^2 (starting at initial_accumulator_value); var -= lr * g / sqrt(accum).

    State: `<name>/<var>/sum_of_squares`.
    """

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
