"""TF1's functional core layers (`tf.layers.dense`, `dropout`, `flatten`): variable names and
scopes as TF1 makes them, values against NumPy in both engines, gradients against central
differences."""

import numpy as np
import pytest

import sluice as sl
from sluice.testing import check_gradients

ENGINES = ["compiled", "interpreted"]
RNG = np.random.default_rng(7)


def session(engine="compiled"):
    return sl.Session(config=sl.SessionConfig(engine=engine))


def names(variables):
    return [v.name for v in variables]


# -- names, scopes, reuse -----------------------------------------------------------------------
def test_dense_names_its_variables_and_ops_as_tf1():
    x = sl.placeholder(sl.float32, [None, 3])
    y = sl.layers.dense(x, 4, activation=sl.nn.relu)
    y1 = sl.layers.dense(y, 2)
    assert names(sl.trainable_variables()) == [
        "dense/kernel:0",
        "dense/bias:0",
        "dense_1/kernel:0",
        "dense_1/bias:0",
    ]
    assert (y.name, y1.name) == ("dense/Relu:0", "dense_1/BiasAdd:0")
    assert sl.global_variables()[0].shape.as_list() == [3, 4]
    assert y1.shape.as_list() == [None, 2]


def test_dense_reuses_a_named_scope_with_reuse_true_and_auto_reuse():
    x = sl.placeholder(sl.float32, [None, 3])
    a = sl.layers.dense(x, 4, name="fc")
    b = sl.layers.dense(x, 4, name="fc", reuse=True)
    c = sl.layers.dense(x, 4, name="fc", reuse=sl.AUTO_REUSE)
    assert names(sl.global_variables()) == ["fc/kernel:0", "fc/bias:0"]
    assert (a.name, b.name, c.name) == ("fc/BiasAdd:0", "fc_1/BiasAdd:0", "fc_2/BiasAdd:0")
    with pytest.raises(ValueError, match="fc/kernel already exists"):
        sl.layers.dense(x, 4, name="fc")
    with pytest.raises(ValueError, match="shape"):
        sl.layers.dense(x, 5, name="fc", reuse=True)
    with pytest.raises(ValueError, match="other/kernel does not exist"):
        sl.layers.dense(x, 4, name="other", reuse=True)


def test_dense_follows_the_enclosing_variable_scope_and_its_reuse():
    x = sl.placeholder(sl.float32, [None, 3])
    with sl.variable_scope("tower"):
        sl.layers.dense(x, 2)
        sl.layers.dense(x, 2)
    with sl.variable_scope("tower", reuse=True):  # the same names again: shared
        sl.layers.dense(x, 2)
        sl.layers.dense(x, 2)
    with sl.variable_scope("tower2", initializer=sl.constant_initializer(0.5)):
        sl.layers.dense(x, 2, use_bias=False)
    with sl.variable_scope("tower"):  # TF1: entered again without reuse, the names clash
        with pytest.raises(ValueError, match="tower/dense/kernel already exists"):
            sl.layers.dense(x, 2)
    assert names(sl.global_variables()) == [
        "tower/dense/kernel:0",
        "tower/dense/bias:0",
        "tower/dense_1/kernel:0",
        "tower/dense_1/bias:0",
        "tower2/dense/kernel:0",
    ]
    with session() as s:
        s.run(sl.global_variables_initializer())
        np.testing.assert_array_equal(s.run(sl.global_variables()[-1]), np.full((3, 2), 0.5))


def test_dense_kernel_defaults_to_glorot_uniform_and_bias_to_zeros():
    sl.layers.dense(sl.placeholder(sl.float32, [None, 30]), 20)
    with session() as s:
        s.run(sl.global_variables_initializer())
        kernel, bias = s.run(sl.trainable_variables())
    limit = np.sqrt(6.0 / (30 + 20))
    assert np.all(np.abs(kernel) <= limit) and np.std(kernel) > limit / 3
    np.testing.assert_array_equal(bias, np.zeros(20))


def test_dense_trainable_false_makes_global_variables_only():
    sl.layers.dense(sl.placeholder(sl.float32, [None, 3]), 2, trainable=False)
    assert sl.trainable_variables() == []
    assert names(sl.global_variables()) == ["dense/kernel:0", "dense/bias:0"]


# -- values --------------------------------------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_dense_values_match_numpy_for_rank_2_and_rank_3_inputs(engine):
    x2 = sl.placeholder(sl.float64, [None, 3])
    x3 = sl.placeholder(sl.float64, [None, 4, 3])
    y2 = sl.layers.dense(x2, 5, activation=sl.tanh, bias_initializer=sl.constant_initializer(0.1))
    y3 = sl.layers.dense(x3, 2, name="seq")
    assert y3.shape.as_list() == [None, 4, 2]
    assert sl.global_variables()[0].dtype == sl.float64  # the inputs' dtype
    a, b = RNG.normal(size=(2, 3)), RNG.normal(size=(2, 4, 3))
    with session(engine) as s:
        s.run(sl.global_variables_initializer())
        k, bias, k3, b3 = s.run(sl.global_variables())
        got2, got3 = s.run([y2, y3], {x2: a, x3: b})
    np.testing.assert_allclose(got2, np.tanh(a @ k + bias), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got3, b @ k3 + b3, rtol=1e-6, atol=1e-6)


def test_dense_gradients_match_central_differences():
    x = RNG.normal(size=(3, 4))
    kernel, bias = RNG.normal(size=(4, 2)), RNG.normal(size=(2,))

    def build(x, k, b):
        def getter(getter, name, *args, **kwargs):  # the weights are the checked inputs
            return {"net/dense/kernel": k, "net/dense/bias": b}[name]

        with sl.variable_scope("net", custom_getter=getter):
            return sl.layers.dense(x, 2, activation=sl.sigmoid)

    check_gradients(build, [x, kernel, bias])


# -- regularizers --------------------------------------------------------------------------------
def test_regularizers_add_their_losses_once_per_variable():
    x = sl.placeholder(sl.float32, [None, 3])
    l2 = sl.layers.regularizers.L2(0.5)
    sl.layers.dense(
        x,
        2,
        kernel_regularizer=l2,
        bias_regularizer=l2,
        bias_initializer=sl.constant_initializer(1.0),
        name="fc",
    )
    sl.layers.dense(x, 2, kernel_regularizer=l2, name="fc", reuse=True)  # no new loss
    losses = sl.get_collection(sl.GraphKeys.REGULARIZATION_LOSSES)
    assert len(losses) == 2
    assert losses[0].name.startswith("fc/kernel/Regularizer/")
    with session() as s:
        s.run(sl.global_variables_initializer())
        kernel = s.run(sl.global_variables()[0])
        got = s.run(losses)
    np.testing.assert_allclose(got, [0.5 * np.sum(kernel**2), 0.5 * 2.0], rtol=1e-6)


def test_activity_regularizer_is_divided_by_the_batch_size():
    x = sl.placeholder(sl.float64, [None, 2])
    y = sl.layers.dense(
        x,
        2,
        activity_regularizer=lambda t: sl.reduce_sum(sl.abs(t)),
        kernel_initializer=sl.constant_initializer(1.0),
    )
    (loss,) = sl.get_collection(sl.GraphKeys.REGULARIZATION_LOSSES)
    value = np.array([[1.0, -2.0], [3.0, 0.5], [0.0, 1.0]])
    with session() as s:
        s.run(sl.global_variables_initializer())
        out, got = s.run([y, loss], {x: value})
    np.testing.assert_allclose(got, np.abs(out).sum() / 3, rtol=1e-6)


# -- errors --------------------------------------------------------------------------------------
def test_dense_refuses_bad_inputs_when_the_graph_is_built():
    with pytest.raises(ValueError, match="min_ndim=2"):
        sl.layers.dense(sl.placeholder(sl.float32, [3]), 2)
    with pytest.raises(ValueError, match="last dimension of the inputs to `Dense`"):
        sl.layers.dense(sl.placeholder(sl.float32, [None, None]), 2)
    with pytest.raises(TypeError, match="non-floating point dtype int32"):
        sl.layers.dense(sl.placeholder(sl.int32, [None, 3]), 2)


# -- dropout and flatten -------------------------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_dropout_runs_only_in_training_also_with_a_bool_tensor(engine):
    x = sl.ones([200, 50])
    training = sl.placeholder(sl.bool, [])
    off = sl.layers.dropout(x, 0.3)  # TF1's default: training=False
    on = sl.layers.dropout(x, 0.3, training=True, seed=1)
    switch = sl.layers.dropout(x, 0.3, training=training, seed=2)
    assert off.name.startswith("dropout/") and on.name.startswith("dropout_1/")
    with session(engine) as s:
        np.testing.assert_array_equal(s.run(off), np.ones((200, 50)))
        np.testing.assert_array_equal(s.run(switch, {training: False}), np.ones((200, 50)))
        for value in (s.run(on), s.run(switch, {training: True})):
            assert set(np.unique(value)) <= {0.0, np.float32(1 / 0.7)}
            assert abs(np.mean(value == 0) - 0.3) < 0.03


def test_dropout_refuses_a_rate_outside_0_1():
    with pytest.raises(ValueError, match="rate"):
        sl.layers.dropout(sl.ones([2]), 1.0, training=True)


def test_flatten_keeps_the_batch_and_orders_channels_first_features_channels_last():
    value = np.arange(2 * 3 * 2 * 2, dtype=np.float32).reshape(2, 3, 2, 2)  # NCHW
    x = sl.placeholder(sl.float32, [None, 3, 2, 2])
    last = sl.layers.flatten(x)
    first = sl.layers.flatten(x, data_format="channels_first")
    unknown = sl.layers.flatten(sl.placeholder(sl.float32, [None, None, 2]))
    assert last.shape.as_list() == [None, 12] and unknown.shape.as_list() == [None, None]
    with session() as s:
        a, b = s.run([last, first], {x: value})
    np.testing.assert_array_equal(a, value.reshape(2, 12))
    np.testing.assert_array_equal(b, value.transpose(0, 2, 3, 1).reshape(2, 12))
