"""The optimizers Keras 3 has beyond SGD, Adam, AdamW, RMSprop and Adagrad: Nadam, Adamax,
Adadelta, Ftrl, Lion and Adafactor, with Keras's arguments, defaults and update formulas (each
docstring gives the formula; `keras_rules` says where optax's rule is used as it is).

>>> x = np.random.default_rng(0).normal(size=(32, 4)).astype("float32")
>>> model = sl.Sequential([sl.Input((4,)), sl.layers.Dense(1)])
>>> model.compile(optimizer="nadam", loss="mse")
>>> losses = model.fit(x, x.sum(axis=1), epochs=5, verbose=0).history["loss"]
>>> losses[-1] < losses[0]
True
"""

from __future__ import annotations

from typing import Any

import optax

from sluice._export import export
from sluice._keras.optimizers import keras_rules, transforms
from sluice._keras.optimizers.keras import _KerasOptimizer


@export("optimizers.Nadam")
class Nadam(_KerasOptimizer):
    """Adam with Nesterov momentum and Dozat's momentum schedule (Keras 3's Nadam); see
    `keras_rules.scale_by_keras_nadam` for the formula."""

    def __init__(
        self,
        learning_rate: Any = 0.001,
        beta_1: float = 0.9,
        beta_2: float = 0.999,
        epsilon: float = 1e-07,
        weight_decay: float | None = None,
        clipnorm: float | None = None,
        clipvalue: float | None = None,
        global_clipnorm: float | None = None,
        name: str = "nadam",
    ):
        super().__init__(learning_rate, name, weight_decay, clipnorm, clipvalue, global_clipnorm)
        self.beta_1, self.beta_2, self.epsilon = beta_1, beta_2, epsilon
        self._config.update(beta_1=beta_1, beta_2=beta_2, epsilon=epsilon)

    def _transform(self, learning_rate: Any) -> optax.GradientTransformation:
        direction = keras_rules.scale_by_keras_nadam(self.beta_1, self.beta_2, self.epsilon)
        return transforms._scaled([direction], learning_rate, self.weight_decay)


@export("optimizers.Adamax")
class Adamax(_KerasOptimizer):
    """Adam over the infinity norm: m = m + (g - m)(1 - beta_1); u = max(beta_2 u, |g|);
    var -= lr * m / ((1 - beta_1^t) (u + epsilon))."""

    def __init__(
        self,
        learning_rate: Any = 0.001,
        beta_1: float = 0.9,
        beta_2: float = 0.999,
        epsilon: float = 1e-07,
        weight_decay: float | None = None,
        clipnorm: float | None = None,
        clipvalue: float | None = None,
        global_clipnorm: float | None = None,
        name: str = "adamax",
    ):
        super().__init__(learning_rate, name, weight_decay, clipnorm, clipvalue, global_clipnorm)
        self.beta_1, self.beta_2, self.epsilon = beta_1, beta_2, epsilon
        self._config.update(beta_1=beta_1, beta_2=beta_2, epsilon=epsilon)

    def _transform(self, learning_rate: Any) -> optax.GradientTransformation:
        direction = keras_rules.scale_by_keras_adamax(self.beta_1, self.beta_2, self.epsilon)
        return transforms._scaled([direction], learning_rate, self.weight_decay)


@export("optimizers.Adadelta")
class Adadelta(_KerasOptimizer):
    """a = rho a + (1 - rho) g^2; delta = sqrt(d + epsilon) / sqrt(a + epsilon) * g;
    d = rho d + (1 - rho) delta^2; var -= lr * delta (optax's `scale_by_adadelta`)."""

    def __init__(
        self,
        learning_rate: Any = 0.001,
        rho: float = 0.95,
        epsilon: float = 1e-07,
        weight_decay: float | None = None,
        clipnorm: float | None = None,
        clipvalue: float | None = None,
        global_clipnorm: float | None = None,
        name: str = "adadelta",
    ):
        super().__init__(learning_rate, name, weight_decay, clipnorm, clipvalue, global_clipnorm)
        self.rho, self.epsilon = rho, epsilon
        self._config.update(rho=rho, epsilon=epsilon)

    def _transform(self, learning_rate: Any) -> optax.GradientTransformation:
        direction = optax.scale_by_adadelta(rho=self.rho, eps=self.epsilon)
        return transforms._scaled([direction], learning_rate, self.weight_decay)


@export("optimizers.Ftrl")
class Ftrl(_KerasOptimizer):
    """FTRL-proximal (McMahan et al. 2013), as TF1's `ApplyFtrlV2` (`transforms.ftrl`), with
    Keras's `beta` adding beta / (2 lr) to the l2 strength.

    Raises:
      ValueError: a negative `initial_accumulator_value` or regularization strength, or a
        positive `learning_rate_power`.
    """

    def __init__(
        self,
        learning_rate: Any = 0.001,
        learning_rate_power: float = -0.5,
        initial_accumulator_value: float = 0.1,
        l1_regularization_strength: float = 0.0,
        l2_regularization_strength: float = 0.0,
        l2_shrinkage_regularization_strength: float = 0.0,
        beta: float = 0.0,
        weight_decay: float | None = None,
        clipnorm: float | None = None,
        clipvalue: float | None = None,
        global_clipnorm: float | None = None,
        name: str = "ftrl",
    ):
        super().__init__(learning_rate, name, weight_decay, clipnorm, clipvalue, global_clipnorm)
        checks = {
            "initial_accumulator_value": initial_accumulator_value,
            "l1_regularization_strength": l1_regularization_strength,
            "l2_regularization_strength": l2_regularization_strength,
            "l2_shrinkage_regularization_strength": l2_shrinkage_regularization_strength,
        }
        for what, value in checks.items():
            if value < 0.0:
                raise ValueError(
                    f"`{what}` needs to be positive or zero. Received: {what}={value}."
                )
        if learning_rate_power > 0.0:
            raise ValueError(
                "`learning_rate_power` needs to be negative or zero. Received: "
                f"learning_rate_power={learning_rate_power}."
            )
        self.learning_rate_power = learning_rate_power
        self.initial_accumulator_value = initial_accumulator_value
        self.l1_regularization_strength = l1_regularization_strength
        self.l2_regularization_strength = l2_regularization_strength
        self.l2_shrinkage_regularization_strength = l2_shrinkage_regularization_strength
        self.beta = beta
        self._config.update(checks, learning_rate_power=learning_rate_power, beta=beta)

    def _transform(self, learning_rate: Any) -> optax.GradientTransformation:
        rule = transforms.ftrl(
            learning_rate,
            learning_rate_power=self.learning_rate_power,
            initial_accumulator_value=self.initial_accumulator_value,
            l1=self.l1_regularization_strength,
            l2=self.l2_regularization_strength,
            l2_shrinkage=self.l2_shrinkage_regularization_strength,
            beta=self.beta,
        )
        return keras_rules.decay_first(rule, learning_rate, self.weight_decay)


@export("optimizers.Lion")
class Lion(_KerasOptimizer):
    """var -= lr * sign(beta_1 m + (1 - beta_1) g); m = beta_2 m + (1 - beta_2) g (optax's
    `scale_by_lion`).

    Raises:
      ValueError: beta_1 outside (0, 1].
    """

    def __init__(
        self,
        learning_rate: Any = 0.001,
        beta_1: float = 0.9,
        beta_2: float = 0.99,
        weight_decay: float | None = None,
        clipnorm: float | None = None,
        clipvalue: float | None = None,
        global_clipnorm: float | None = None,
        name: str = "lion",
    ):
        super().__init__(learning_rate, name, weight_decay, clipnorm, clipvalue, global_clipnorm)
        if beta_1 <= 0 or beta_1 > 1:
            raise ValueError(
                "Argument `beta_1` must be in the [0, 1] range. Otherwise, the optimizer "
                f"degenerates to SignSGD. Received: beta_1={beta_1}."
            )
        self.beta_1, self.beta_2 = beta_1, beta_2
        self._config.update(beta_1=beta_1, beta_2=beta_2)

    def _transform(self, learning_rate: Any) -> optax.GradientTransformation:
        direction = optax.scale_by_lion(b1=self.beta_1, b2=self.beta_2)
        return transforms._scaled([direction], learning_rate, self.weight_decay)


@export("optimizers.Adafactor")
class Adafactor(_KerasOptimizer):
    """Adafactor (Shazeer and Stern 2018) as Keras 3 computes it: factored second moments for
    variables of rank 2 and more, the step size relative to the variable's RMS; see
    `keras_rules.keras_adafactor` for the formula."""

    def __init__(
        self,
        learning_rate: Any = 0.001,
        beta_2_decay: float = -0.8,
        epsilon_1: float = 1e-30,
        epsilon_2: float = 1e-3,
        clip_threshold: float = 1.0,
        relative_step: bool = True,
        weight_decay: float | None = None,
        clipnorm: float | None = None,
        clipvalue: float | None = None,
        global_clipnorm: float | None = None,
        name: str = "adafactor",
    ):
        super().__init__(learning_rate, name, weight_decay, clipnorm, clipvalue, global_clipnorm)
        self.beta_2_decay, self.epsilon_1, self.epsilon_2 = beta_2_decay, epsilon_1, epsilon_2
        self.clip_threshold, self.relative_step = clip_threshold, relative_step
        self._config.update(
            beta_2_decay=beta_2_decay,
            epsilon_1=epsilon_1,
            epsilon_2=epsilon_2,
            clip_threshold=clip_threshold,
            relative_step=relative_step,
        )

    def _transform(self, learning_rate: Any) -> optax.GradientTransformation:
        rule = keras_rules.keras_adafactor(
            learning_rate, self.beta_2_decay, self.epsilon_1, self.epsilon_2, self.clip_threshold
        )
        return keras_rules.decay_first(rule, learning_rate, self.weight_decay)
