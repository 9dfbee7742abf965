"""TF1's `tf.contrib.layers.batch_norm` (layers_test.py's BatchNormTest, graph mode, names
forwarded from `tf.` to `sl.`): TF1's variable names and collections, values at 1e-6 against a
NumPy reference, the moving statistics after UPDATE_OPS (unbiased variance on the fused path,
biased on the plain one), in-place updates, a bool Tensor `is_training`, NCHW, gradients."""

import numpy as np
import pytest

import sluice as tf

layers = tf.contrib.layers
EPS = 1e-3


def _reference(x, axes, eps=EPS, gamma=1.0, beta=0.0):
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def _data(shape, seed=0):
    return np.random.RandomState(seed).uniform(-1.0, 3.0, shape).astype(np.float32)


def _bessel(x, axes):
    n = np.prod([x.shape[a] for a in axes])
    return n / (n - 1.0)


def test_variable_names_collections_and_defaults():
    # testCreateVariables, testMovingAverageVariables: scale is off by default
    layers.batch_norm(tf.ones([5, 3, 3, 4]))
    names = [v.op.name for v in tf.global_variables()]
    assert sorted(names) == ["BatchNorm/beta", "BatchNorm/moving_mean", "BatchNorm/moving_variance"]
    assert [v.op.name for v in tf.trainable_variables()] == ["BatchNorm/beta"]
    assert sorted(v.op.name for v in tf.model_variables()) == sorted(names)
    assert len(tf.get_collection(tf.GraphKeys.UPDATE_OPS)) == 2
    layers.batch_norm(tf.ones([5, 4]), scale=True, scope="bn")
    assert [v.op.name for v in tf.trainable_variables()] == [
        "BatchNorm/beta",
        "bn/beta",
        "bn/gamma",
    ]
    assert tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES, "bn/")[0].shape.as_list() == [4]


def test_variables_collections_list_and_dict():
    # testVariablesCollections
    layers.batch_norm(
        tf.ones([2, 3]), scale=True, variables_collections={"beta": ["b"], "moving_mean": "mm"}
    )
    assert [v.op.name for v in tf.get_collection("b")] == ["BatchNorm/beta"]
    assert [v.op.name for v in tf.get_collection("mm")] == ["BatchNorm/moving_mean"]
    layers.batch_norm(tf.ones([2, 3]), scale=True, scope="s", variables_collections=["all"])
    assert sorted(v.op.name for v in tf.get_collection("all")) == [
        "s/beta",
        "s/gamma",
        "s/moving_mean",
        "s/moving_variance",
    ]


def test_reuse_shares_variables_and_adds_update_ops():
    # testReuseVariables, testReuseUpdateOps
    x = tf.ones([5, 3, 3, 4])
    layers.batch_norm(x, scale=True, scope="bn")
    layers.batch_norm(x, scale=True, scope="bn", reuse=True)
    assert len(tf.global_variables()) == 4
    assert len(tf.get_collection(tf.GraphKeys.UPDATE_OPS)) == 4
    with pytest.raises(ValueError, match="already exists"):
        layers.batch_norm(x, scale=True, scope="bn")


@pytest.mark.parametrize(
    "fused,shape",
    [(None, [6, 3]), (False, [6, 3]), (True, [4, 2, 3, 3]), (False, [4, 2, 3, 3])]
    + [(None, [4, 5, 3])],
)
def test_training_values_and_moving_statistics(fused, shape):
    # _testDelayedUpdateMovingVars: the output uses the batch moments; after UPDATE_OPS the
    # moving statistics moved by (1 - decay); the fused path (rank 2 or 4) uses the unbiased
    # variance for the moving one.
    x = _data(shape)
    axes = tuple(range(len(shape) - 1))
    gamma = np.array([0.5, 2.0, 1.5], np.float32)
    beta = np.array([0.1, -0.2, 0.3], np.float32)
    y = layers.batch_norm(
        tf.constant(x),
        decay=0.9,
        scale=True,
        fused=fused,
        param_initializers={
            "gamma": tf.constant_initializer(gamma),
            "beta": tf.constant_initializer(beta),
            "moving_mean": tf.constant_initializer(0.5),
        },
    )
    moving_mean, moving_var = tf.model_variables()[2:]
    assert moving_mean.op.name == "BatchNorm/moving_mean"
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out = sess.run(y)
        np.testing.assert_allclose(sess.run([moving_mean, moving_var]), [[0.5] * 3, [1.0] * 3])
        for _ in range(2):
            sess.run(updates)
        mm, mv = sess.run([moving_mean, moving_var])
    np.testing.assert_allclose(out, _reference(x, axes, gamma=gamma, beta=beta), atol=1e-5)
    fused_path = fused is not False and len(shape) in (2, 4)
    var = x.var(axis=axes) * (_bessel(x, axes) if fused_path else 1.0)
    np.testing.assert_allclose(mm, 0.5 * 0.81 + x.mean(axis=axes) * 0.19, rtol=1e-6)
    np.testing.assert_allclose(mv, 0.81 + var * 0.19, rtol=1e-6)


@pytest.mark.parametrize("fused", [True, False])
def test_none_updates_collections_updates_in_place(fused):
    # _testNoneUpdatesCollections: each run of the output moves the statistics
    x = _data([8, 3])
    y = layers.batch_norm(tf.constant(x), decay=0.5, updates_collections=None, fused=fused)
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == []
    mm, mv = tf.model_variables()[1:]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out = sess.run(y)
        np.testing.assert_allclose(out, _reference(x, (0,)), atol=1e-5)
        np.testing.assert_allclose(sess.run(mm), x.mean(0) * 0.5, rtol=1e-6)
        var = x.var(0) * (_bessel(x, (0,)) if fused else 1.0)
        np.testing.assert_allclose(sess.run(mv), 0.5 + var * 0.5, rtol=1e-6)
        sess.run(y)
        np.testing.assert_allclose(sess.run(mm), x.mean(0) * 0.75, rtol=1e-6)


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("in_place", [False, True])
def test_is_training_tensor_both_ways(fused, in_place):
    # _testIsTrainingVariable, _testNoneUpdatesCollectionIsTrainingVariable
    x = _data([4, 2, 2, 3])
    axes = (0, 1, 2)
    training = tf.placeholder(tf.bool, [])
    y = layers.batch_norm(
        tf.constant(x),
        decay=0.9,
        is_training=training,
        fused=fused,
        updates_collections=None if in_place else tf.GraphKeys.UPDATE_OPS,
        param_initializers={"moving_variance": tf.constant_initializer(4.0)},
    )
    mm, mv = tf.model_variables()[1:]
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        # inference: the moving statistics (0 and 4), nothing moves
        out = sess.run([y] + updates, {training: False})[0]
        np.testing.assert_allclose(out, x / np.sqrt(4.0 + EPS), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(sess.run([mm, mv]), [[0.0] * 3, [4.0] * 3])
        # training: the batch statistics, and one update
        out = sess.run([y] + updates, {training: True})[0]
        np.testing.assert_allclose(out, _reference(x, axes), atol=1e-5)
        var = x.var(axis=axes) * (_bessel(x, axes) if fused else 1.0)
        np.testing.assert_allclose(sess.run(mm), x.mean(axis=axes) * 0.1, rtol=1e-6)
        np.testing.assert_allclose(sess.run(mv), 4.0 * 0.9 + var * 0.1, rtol=1e-6)
        moved = sess.run([mm, mv])
        out = sess.run(y, {training: False})
        expected = (x - moved[0]) / np.sqrt(moved[1] + EPS)
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_is_training_false_adds_no_updates_and_uses_moving_statistics():
    # testNoUpdatesWhenIsTrainingFalse, testEvalMovingVars
    x = _data([3, 2, 2, 3])
    y = layers.batch_norm(
        tf.constant(x),
        is_training=False,
        param_initializers={
            "moving_mean": tf.constant_initializer([1.0, 2.0, 3.0]),
            "moving_variance": tf.constant_initializer([4.0, 5.0, 6.0]),
        },
    )
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out = sess.run(y)
    expected = (x - [1.0, 2.0, 3.0]) / np.sqrt(np.array([4.0, 5.0, 6.0]) + EPS)
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("training", [True, False])
def test_nchw_matches_nhwc(fused, training):
    # testNHWCAndNCHWTrainingProduceSameOutput / InferenceProduceSameOutput
    x = _data([4, 3, 2, 5])  # NCHW, 3 channels
    init = {"moving_mean": tf.constant_initializer([0.1, 0.2, 0.3])}
    y_nchw = layers.batch_norm(
        tf.constant(x),
        data_format="NCHW",
        is_training=training,
        scale=True,
        fused=fused,
        param_initializers=init,
        updates_collections=None,
        scope="a",
    )
    y_nhwc = layers.batch_norm(
        tf.constant(x.transpose(0, 2, 3, 1)),
        is_training=training,
        scale=True,
        fused=fused,
        param_initializers=init,
        updates_collections=None,
        scope="b",
    )
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        a, b = sess.run([y_nchw, y_nhwc])
        stats = sess.run(tf.model_variables())
    np.testing.assert_allclose(a, b.transpose(0, 3, 1, 2), rtol=1e-6, atol=1e-6)
    if training:
        np.testing.assert_allclose(a, _reference(x, (0, 2, 3)), atol=1e-5)
    np.testing.assert_allclose(stats[2], stats[6], rtol=1e-6)  # a/moving_mean, b/moving_mean
    np.testing.assert_allclose(stats[3], stats[7], rtol=1e-6)


def test_nchw_rank2_and_bad_formats():
    x = _data([6, 3])
    y = layers.batch_norm(tf.constant(x), data_format="NCHW")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(y), _reference(x, (0,)), atol=1e-5)
    with pytest.raises(ValueError, match="NCHW or NHWC"):
        layers.batch_norm(tf.ones([2, 3]), data_format="NCDHW")
    with pytest.raises(ValueError, match="undefined channels"):
        layers.batch_norm(tf.placeholder(tf.float32, [None, 2, 2, None]))
    with pytest.raises(ValueError, match="undefined channels"):
        layers.batch_norm(tf.placeholder(tf.float32, [None, None, 2, 2]), data_format="NCHW")
    with pytest.raises(ValueError, match="undefined rank"):
        layers.batch_norm(tf.placeholder(tf.float32))
    with pytest.raises(NotImplementedError, match="renorm"):
        layers.batch_norm(tf.ones([2, 3]), renorm=True)


def test_fused_epsilon_floor_only_on_the_fused_path():
    # nn.fused_batch_norm raises epsilon to 1.001e-5; the plain path keeps it
    x = _data([8, 2]) * 0.005
    outs = [
        layers.batch_norm(tf.constant(x), epsilon=1e-8, fused=fused, scope=str(fused))
        for fused in (True, False)
    ]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        fused_out, plain_out = sess.run(outs)
    np.testing.assert_allclose(fused_out, _reference(x, (0,), eps=1.001e-5), rtol=1e-5)
    np.testing.assert_allclose(plain_out, _reference(x, (0,), eps=1e-8), rtol=1e-5)
    assert np.abs(fused_out - plain_out).max() > 1e-3


def test_zero_debias_moving_mean():
    # testZeroDebiasMovingMean: after one update the debiased mean is the batch mean
    x = _data([5, 3])
    layers.batch_norm(tf.constant(x), decay=0.9, zero_debias_moving_mean=True)
    names = sorted(v.op.name for v in tf.global_variables())
    assert "BatchNorm/moving_mean/biased" in names
    assert "BatchNorm/moving_mean/local_step" in names
    mm = [v for v in tf.global_variables() if v.op.name == "BatchNorm/moving_mean"][0]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(tf.get_collection(tf.GraphKeys.UPDATE_OPS))
        np.testing.assert_allclose(sess.run(mm), x.mean(0), rtol=1e-5)


def test_batch_weights_weighted_moments():
    x = _data([4, 3])
    w = np.array([1.0, 2.0, 0.0, 1.0], np.float32)
    y = layers.batch_norm(tf.constant(x), batch_weights=w, decay=0.0)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out, _ = sess.run([y, tf.get_collection(tf.GraphKeys.UPDATE_OPS)])
        mm, mv = sess.run(tf.model_variables()[1:])
    mean = (w[:, None] * x).sum(0) / w.sum()
    var = (w[:, None] * (x - mean) ** 2).sum(0) / w.sum()
    np.testing.assert_allclose(out, (x - mean) / np.sqrt(var + EPS), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mm, mean, rtol=1e-6)
    np.testing.assert_allclose(mv, var, rtol=1e-5)


def test_regularizers_activation_and_outputs_collections():
    # testCreateOpBetaRegularizer / GammaRegularizer
    reg = lambda v: tf.reduce_sum(v) * 2.0  # noqa: E731
    y = layers.batch_norm(
        tf.constant(_data([4, 3])),
        scale=True,
        param_regularizers={"beta": reg, "gamma": reg},
        activation_fn=tf.nn.relu,
        outputs_collections="outs",
    )
    losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert len(losses) == 2
    assert tf.get_collection("outs") == [y]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sorted(sess.run(losses)) == [0.0, 6.0]
        assert sess.run(y).min() >= 0.0


@pytest.mark.parametrize("fused", [True, False])
def test_gradient_matches_finite_differences(fused):
    x = np.random.RandomState(1).randn(3, 2, 1, 2)
    xp = tf.placeholder(tf.float64, x.shape)
    y = layers.batch_norm(
        xp,
        scale=True,
        fused=fused,
        param_initializers={"gamma": tf.constant_initializer([1.5, 0.5])},
    )
    w = np.random.RandomState(2).randn(*x.shape)
    loss = tf.reduce_sum(y * w)
    # TF1's layer path (rank 4, UPDATE_OPS) makes gamma first
    gamma, beta = tf.trainable_variables()
    assert (beta.op.name, gamma.op.name) == ("BatchNorm/beta", "BatchNorm/gamma")
    gx, gbeta, ggamma = tf.gradients(loss, [xp, beta, gamma])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sym, db, dg = sess.run([gx, gbeta, ggamma], {xp: x})
        flat = x.reshape(-1)
        num = np.zeros_like(flat)
        for k in range(flat.size):
            vals = []
            for sign in (1.0, -1.0):
                shifted = flat.copy()
                shifted[k] += sign * 1e-6
                vals.append(sess.run(loss, {xp: shifted.reshape(x.shape)}))
            num[k] = (vals[0] - vals[1]) / 2e-6
    np.testing.assert_allclose(sym.reshape(-1), num, rtol=1e-4, atol=1e-6)
    xhat = _reference(x, (0, 1, 2), eps=max(EPS, 1.001e-5))
    np.testing.assert_allclose(db, w.sum(axis=(0, 1, 2)), rtol=1e-6)
    np.testing.assert_allclose(dg, (w * xhat).sum(axis=(0, 1, 2)), rtol=1e-6)
