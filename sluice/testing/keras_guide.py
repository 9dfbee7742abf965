"""The custom `train_step` of the Keras guide "Customizing what happens in fit() with
TensorFlow", as a mixin, for tests and benchmarks that compare it with `fit`'s built-in step.

>>> class GuideModel(GuideTrainStep, sl.Model):
...     pass
>>> inputs = sl.Input((3,))
>>> model = GuideModel(inputs, sl.layers.Dense(1)(inputs))
>>> model.compile("sgd", "mse", metrics=["mae"])
>>> history = model.fit(np.ones((4, 3)), np.ones((4, 1)), epochs=1, verbose=0)
>>> sorted(history.history)
['loss', 'mae']
"""

from __future__ import annotations

from typing import Any

from sluice.framework.autodiff.tape import GradientTape


class GuideTrainStep:
    """`train_step` as the guide writes it: the forward pass and `compute_loss` under a
    `GradientTape`, `optimizer.apply` of the gradients, and every metric of `self.metrics`
    updated (the loss tracker with the loss, the others with targets and predictions) and
    returned. Put it before the model class: `class M(GuideTrainStep, sl.Model)`."""

    def train_step(self, data: Any) -> dict:
        x, y = data
        with GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(y=y, y_pred=y_pred)
        weights = self.trainable_variables
        self.optimizer.apply(tape.gradient(loss, weights), weights)
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            else:
                metric.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}
