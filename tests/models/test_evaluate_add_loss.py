"""evaluate's loss is Keras 3's `compute_loss` in inference mode: the compiled loss plus the
`add_loss` terms of the forward pass and activity regularizers (numbers by hand)."""

import numpy as np

import sluice as sl

X = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)  # Dense(ones) gives [3, 7]
Y = np.array([[0.0], [1.0]], np.float32)
MSE = ((3.0 - 0.0) ** 2 + (7.0 - 1.0) ** 2) / 2  # 22.5


class HalfSum(sl.layers.Layer):
    def call(self, x):
        self.add_loss(sl.ops.sum(x) * 0.5)
        return x


def _dense(**kwargs):
    return sl.layers.Dense(1, kernel_initializer="ones", use_bias=False, **kwargs)


def test_add_loss_terms_count_in_evaluate():
    inputs = sl.Input((2,))
    model = sl.Model(inputs, HalfSum()(_dense()(inputs)))
    model.compile("sgd", "mse")
    np.testing.assert_allclose(model.evaluate(X, Y, verbose=0), MSE + 0.5 * 10.0, rtol=1e-6)


def test_activity_regularizers_count_in_evaluate():
    model = sl.Sequential([sl.Input((2,)), _dense(activity_regularizer=sl.regularizers.L2(0.01))])
    model.compile("sgd", "mse")
    want = MSE + 0.01 * (9.0 + 49.0) / 2  # divided by the batch size, as Keras 3
    np.testing.assert_allclose(model.evaluate(X, Y, verbose=0), want, rtol=1e-6)


def test_a_model_without_loss_terms_reuses_its_inference_pass():
    model = sl.Sequential([sl.Input((2,)), _dense()])
    model.compile("sgd", "mse")
    np.testing.assert_allclose(model.evaluate(X, Y, verbose=0), MSE, rtol=1e-6)
    assert [op.type for op in model.graph.get_operations()].count("MatMul") == 1
