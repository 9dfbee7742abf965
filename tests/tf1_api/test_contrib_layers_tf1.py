"""TF1's `tf.contrib.layers` (layers_test.py, initializers_test.py, regularizers_test.py in
graph mode, names forwarded from `tf.` to `sl.`): TF1's variable names, shapes, values."""

import numpy as np
import pytest

import sluice as tf

layers = tf.contrib.layers


def _run(fetches):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches)


def test_fully_connected_variable_names_and_values():
    x = tf.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    y = layers.fully_connected(
        x,
        2,
        weights_initializer=tf.constant_initializer([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]),
        biases_initializer=tf.constant_initializer(0.5),
    )
    names = sorted(v.op.name for v in tf.trainable_variables())
    assert names == ["fully_connected/biases", "fully_connected/weights"]
    assert y.op.name.startswith("fully_connected/")
    # relu is the default activation
    np.testing.assert_allclose(_run(y), [[4.5, 5.5], [10.5, 11.5]], rtol=1e-6)


def test_fully_connected_reuse_scope_and_higher_rank():
    x = tf.ones([2, 3, 4])
    y1 = layers.fully_connected(x, 5, scope="fc", activation_fn=None)
    y2 = layers.fully_connected(x, 5, scope="fc", reuse=True, activation_fn=None)
    assert y1.shape.as_list() == [2, 3, 5]
    assert len(tf.trainable_variables()) == 2
    a, b = _run([y1, y2])
    np.testing.assert_allclose(a, b, rtol=1e-6)
    with pytest.raises(ValueError):
        layers.fully_connected(x, 5.0)


def test_fully_connected_with_normalizer_has_no_biases():
    x = tf.ones([2, 3])
    layers.fully_connected(x, 4, normalizer_fn=layers.layer_norm)
    names = sorted(v.op.name for v in tf.trainable_variables())
    assert names == [
        "fully_connected/LayerNorm/beta",
        "fully_connected/LayerNorm/gamma",
        "fully_connected/weights",
    ]


def test_conv2d_names_shapes_and_values():
    images = tf.ones([1, 3, 3, 1])
    out = layers.conv2d(
        images, 2, [2, 2], padding="VALID", weights_initializer=tf.ones_initializer()
    )
    assert sorted(v.op.name for v in tf.global_variables()) == ["Conv/biases", "Conv/weights"]
    assert tf.global_variables()[0].shape.as_list() == [2, 2, 1, 2]
    assert out.shape.as_list() == [1, 2, 2, 2]
    np.testing.assert_allclose(_run(out), np.full([1, 2, 2, 2], 4.0), rtol=1e-6)
    out2 = layers.conv2d(images, 2, 3, stride=2)
    assert out2.shape.as_list() == [1, 2, 2, 2]
    assert "Conv_1/weights" in [v.op.name for v in tf.global_variables()]


def test_flatten():
    x = tf.ones([2, 3, 4])
    assert layers.flatten(x).shape.as_list() == [2, 12]
    p = tf.placeholder(tf.float32, [None, 2, None])
    flat = layers.flatten(p)
    with tf.Session() as sess:
        assert sess.run(flat, {p: np.ones([3, 2, 5])}).shape == (3, 10)
    with pytest.raises(ValueError):
        layers.flatten(tf.ones([3]))


def test_dropout_keeps_or_scales_and_follows_is_training():
    x = tf.ones([200, 50])
    train_mode = tf.placeholder(tf.bool, [])
    dropped = layers.dropout(x, 0.8, is_training=train_mode)  # keep_prob, not rate
    by_default = layers.dropout(x, keep_prob=0.5)  # is_training defaults to True
    assert dropped.op.name.startswith("Dropout/") and by_default.op.name.startswith("Dropout_1/")
    with tf.Session() as sess:
        training = sess.run(dropped, {train_mode: True})
        off = sess.run(dropped, {train_mode: False})
        half = sess.run(by_default)
    assert set(np.unique(training).round(5)) == {0.0, 1.25}
    assert abs((training > 0).mean() - 0.8) < 0.02
    np.testing.assert_array_equal(off, np.ones([200, 50]))
    assert set(np.unique(half).round(5)) == {0.0, 2.0}


def test_layer_norm_values():
    rng = np.random.RandomState(0)
    x = rng.randn(2, 3, 4).astype(np.float32)
    y = layers.layer_norm(tf.constant(x), begin_norm_axis=1, begin_params_axis=-1)
    assert sorted(v.op.name for v in tf.global_variables()) == ["LayerNorm/beta", "LayerNorm/gamma"]
    assert tf.global_variables()[0].shape.as_list() == [4]
    mean = x.mean(axis=(1, 2), keepdims=True)
    var = x.var(axis=(1, 2), keepdims=True)
    np.testing.assert_allclose(_run(y), (x - mean) / np.sqrt(var + 1e-12), rtol=1e-5, atol=1e-6)


def test_embed_sequence():
    ids = [[1, 2], [3, 0]]
    e = layers.embed_sequence(
        ids,
        vocab_size=4,
        embed_dim=2,
        initializer=tf.constant_initializer(np.arange(8.0).reshape(4, 2)),
    )
    assert [v.op.name for v in tf.global_variables()] == ["EmbedSequence/embeddings"]
    assert e.shape.as_list() == [2, 2, 2]
    np.testing.assert_allclose(
        _run(e), [[[2.0, 3.0], [4.0, 5.0]], [[6.0, 7.0], [0.0, 1.0]]], rtol=1e-6
    )
    with pytest.raises(ValueError, match="vocab size"):
        layers.embed_sequence(ids)


def test_l2_regularizer():
    # regularizers_test.testL2
    values = np.array([1.0, -1.0, 4.0, 2.0])
    weights = tf.constant(values)
    result = _run(layers.l2_regularizer(0.42)(weights))
    np.testing.assert_allclose(result, np.sum(values * values) / 2 * 0.42, rtol=1e-6)
    assert layers.l2_regularizer(0.0)(weights) is None
    with pytest.raises(ValueError):
        layers.l2_regularizer(-1.0)
    with pytest.raises(ValueError):
        layers.l2_regularizer(0)
    y = layers.fully_connected(
        tf.ones([1, 2]), 1, weights_regularizer=layers.l2_regularizer(0.5),
        weights_initializer=tf.ones_initializer(),
    )  # fmt: skip
    del y
    (loss,) = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    np.testing.assert_allclose(_run(loss), 0.5 * 2 / 2, rtol=1e-6)


@pytest.mark.parametrize(
    "mode,uniform,factor", [("FAN_IN", False, 2.0), ("FAN_AVG", True, 1.0), ("FAN_OUT", False, 1.0)]
)
def test_variance_scaling_initializer_statistics(mode, uniform, factor):
    # initializers_test: the variance is factor / n (truncated normal: contrib's 1.3 correction)
    shape = [100, 40]
    init = layers.variance_scaling_initializer(factor=factor, mode=mode, uniform=uniform, seed=1)
    values = _run(init(shape))
    n = {"FAN_IN": 100.0, "FAN_OUT": 40.0, "FAN_AVG": 70.0}[mode]
    assert abs(values.mean()) < 0.02
    np.testing.assert_allclose(values.var(), factor / n, rtol=0.1)
    if uniform:
        assert np.abs(values).max() <= np.sqrt(3.0 * factor / n) + 1e-6
    else:
        assert np.abs(values).max() <= 2 * np.sqrt(1.3 * factor / n) + 1e-6


def test_xavier_initializer():
    init = layers.xavier_initializer(uniform=True, seed=2)
    values = _run(init([30, 50]))
    assert np.abs(values).max() <= np.sqrt(6.0 / 80.0) + 1e-6
    with pytest.raises(TypeError):
        layers.xavier_initializer(dtype=tf.int32)
