"""TF1's `tf.layers.batch_normalization`: its variables and collections, train and inference
values against NumPy, the moving-average updates in UPDATE_OPS (the fused path's unbiased
variance, the plain path's biased one), a bool Tensor `training`, and gradients."""

import numpy as np
import pytest

import sluice as sl
from sluice.testing import check_gradients

ENGINES = ["compiled", "interpreted"]
RNG = np.random.default_rng(5)
EPS = 1e-3


def session(engine="compiled"):
    return sl.Session(config=sl.SessionConfig(engine=engine))


def np_bn(x, mean, var, gamma=1.0, beta=0.0, eps=EPS):
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def test_variables_and_collections_are_tf1s():
    x = sl.placeholder(sl.float32, [None, 3])
    y = sl.layers.batch_normalization(x, training=True)
    sl.layers.batch_normalization(x, training=False, name="bn")
    sl.layers.batch_normalization(x, training=True, name="bn", reuse=True)
    assert [v.name for v in sl.global_variables()] == [
        "batch_normalization/gamma:0",
        "batch_normalization/beta:0",
        "batch_normalization/moving_mean:0",
        "batch_normalization/moving_variance:0",
        "bn/gamma:0",
        "bn/beta:0",
        "bn/moving_mean:0",
        "bn/moving_variance:0",
    ]
    assert [v.name for v in sl.trainable_variables()] == [
        "batch_normalization/gamma:0",
        "batch_normalization/beta:0",
        "bn/gamma:0",
        "bn/beta:0",
    ]
    assert sl.moving_average_variables() == []
    # training=False adds no update; each training call adds two
    assert len(sl.get_collection(sl.GraphKeys.UPDATE_OPS)) == 4
    assert y.shape.as_list() == [None, 3] and y.name.startswith("batch_normalization/")


def test_center_and_scale_false_make_no_beta_or_gamma():
    sl.layers.batch_normalization(
        sl.placeholder(sl.float32, [None, 4, 4, 2]), center=False, scale=False, training=True
    )
    sl.layers.batch_normalization(
        sl.placeholder(sl.float32, [None, 2]), center=False, trainable=False
    )
    assert [v.name for v in sl.global_variables()] == [
        "batch_normalization/moving_mean:0",
        "batch_normalization/moving_variance:0",
        "batch_normalization_1/gamma:0",
        "batch_normalization_1/moving_mean:0",
        "batch_normalization_1/moving_variance:0",
    ]
    assert sl.trainable_variables() == []


SLOW = pytest.mark.slow


@pytest.mark.parametrize(
    "engine, shape, axis, fused",
    [
        # the plain path: biased variance for the moving average
        ("compiled", (6, 3), -1, False),
        ("interpreted", (6, 3), -1, False),
        # fused, NHWC: unbiased variance for the moving average
        ("compiled", (4, 3, 2, 3), -1, True),
        ("interpreted", (4, 3, 2, 3), -1, True),
        # fused, NCHW; and plain with the features axis not last
        ("compiled", (4, 3, 2, 3), 1, True),
        pytest.param("interpreted", (4, 3, 2, 3), 1, True, marks=SLOW),
        ("compiled", (4, 3, 5), 1, False),
        pytest.param("interpreted", (4, 3, 5), 1, False, marks=SLOW),
    ],
)
def test_training_normalizes_with_batch_statistics_and_updates_the_moving_ones(
    engine, shape, axis, fused
):
    value = RNG.normal(loc=2.0, size=shape)
    x = sl.placeholder(sl.float64, shape)
    init = {
        "gamma_initializer": sl.constant_initializer(1.5),
        "beta_initializer": sl.constant_initializer(-0.5),
    }
    y = sl.layers.batch_normalization(x, axis=axis, momentum=0.9, training=True, **init)
    updates = sl.get_collection(sl.GraphKeys.UPDATE_OPS)
    moving_mean, moving_variance = sl.global_variables()[2:]
    reduce = tuple(i for i in range(len(shape)) if i != axis % len(shape))
    keep = [1 if i in reduce else shape[i] for i in range(len(shape))]
    mean, var = value.mean(reduce), value.var(reduce)
    n = value.size / mean.size
    with session(engine) as s:
        s.run(sl.global_variables_initializer())
        np.testing.assert_allclose(
            s.run(y, {x: value}),
            np_bn(value, mean.reshape(keep), var.reshape(keep), 1.5, -0.5),
            rtol=1e-6,
            atol=1e-6,
        )
        # the updates did not run: nothing depends on them
        np.testing.assert_array_equal(s.run(moving_mean), np.zeros(mean.shape))
        s.run(updates, {x: value})
        got_mean, got_var = s.run([moving_mean, moving_variance])
    batch_var = var * n / (n - 1) if fused else var
    np.testing.assert_allclose(got_mean, 0.1 * mean, rtol=1e-6)
    np.testing.assert_allclose(got_var, 0.9 + 0.1 * batch_var, rtol=1e-6)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("shape", [(5, 3), (2, 2, 2, 3)])
def test_a_bool_tensor_switches_train_and_inference_in_one_graph(engine, shape):
    value = RNG.normal(size=shape)
    x = sl.placeholder(sl.float64, shape)
    training = sl.placeholder(sl.bool, [])
    y = sl.layers.batch_normalization(
        x,
        training=training,
        momentum=0.5,
        moving_mean_initializer=sl.constant_initializer(0.25),
        moving_variance_initializer=sl.constant_initializer(4.0),
    )
    with sl.control_dependencies(sl.get_collection(sl.GraphKeys.UPDATE_OPS)):
        step = sl.identity(y)
    moving = sl.global_variables()[2:]
    axes = tuple(range(len(shape) - 1))
    with session(engine) as s:
        s.run(sl.global_variables_initializer())
        np.testing.assert_allclose(
            s.run(step, {x: value, training: False}), np_bn(value, 0.25, 4.0), rtol=1e-6, atol=1e-6
        )
        np.testing.assert_allclose(s.run(moving), [np.full(3, 0.25), np.full(3, 4.0)])
        np.testing.assert_allclose(
            s.run(step, {x: value, training: True}),
            np_bn(value, value.mean(axes), value.var(axes)),
            rtol=1e-6,
            atol=1e-6,
        )
        got_mean, got_var = s.run(moving)
    n = value.size / 3
    batch_var = value.var(axes) * (n / (n - 1) if len(shape) == 4 else 1.0)
    np.testing.assert_allclose(got_mean, 0.5 * 0.25 + 0.5 * value.mean(axes), rtol=1e-6)
    np.testing.assert_allclose(got_var, 0.5 * 4.0 + 0.5 * batch_var, rtol=1e-6)


def test_fused_false_on_4d_inputs_takes_the_plain_paths_biased_variance():
    value = RNG.normal(size=(2, 2, 2, 2))
    x = sl.placeholder(sl.float64, value.shape)
    sl.layers.batch_normalization(x, training=True, fused=False, momentum=0.0)
    with session() as s:
        s.run(sl.global_variables_initializer())
        s.run(sl.get_collection(sl.GraphKeys.UPDATE_OPS), {x: value})
        got = s.run(sl.global_variables()[3])
    np.testing.assert_allclose(got, value.var((0, 1, 2)), rtol=1e-6)


@pytest.mark.parametrize("shape", [(4, 3), (2, 2, 2, 2)])
def test_training_gradients_match_central_differences(shape):
    x = RNG.normal(size=shape)
    channels = shape[-1]
    gamma, beta = RNG.normal(size=channels), RNG.normal(size=channels)

    def build(x, gamma, beta):
        def getter(getter, name, *args, **kwargs):
            given = {"net/batch_normalization/gamma": gamma, "net/batch_normalization/beta": beta}
            return given[name] if name in given else getter(name, *args, **kwargs)

        with sl.variable_scope("net", custom_getter=getter):
            return sl.layers.batch_normalization(x, training=True)

    check_gradients(build, [x, gamma, beta], rtol=1e-5, atol=1e-5)


def test_bad_arguments_fail_when_the_graph_is_built():
    x = sl.placeholder(sl.float32, [None, 3])
    with pytest.raises(ValueError, match="Invalid axis: 2"):
        sl.layers.batch_normalization(x, axis=2)
    with pytest.raises(ValueError, match="undefined `axis` dimension"):
        sl.layers.batch_normalization(sl.placeholder(sl.float32, [None, None]))
    with pytest.raises(ValueError, match="undefined rank"):
        sl.layers.batch_normalization(sl.placeholder(sl.float32, None))
    with pytest.raises(NotImplementedError, match="renorm"):
        sl.layers.batch_normalization(x, renorm=True)
    with pytest.raises(TypeError, match="training must be"):
        sl.layers.batch_normalization(x, training="yes")
