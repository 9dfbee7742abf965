"""A TF1 program built from the functional layers trains: conv2d, batch_normalization (its
updates run through the UPDATE_OPS control dependencies), pooling, dropout, flatten and dense
with a regularizer, one `training` switch for all of them."""

import numpy as np
import pytest

import sluice as sl


@pytest.mark.slow  # a training step to compile: ~5 s of CPU per engine
@pytest.mark.parametrize("engine", ["compiled", "interpreted"])
def test_a_tf1_convnet_trains_and_updates_its_moving_statistics(engine):
    x = sl.placeholder(sl.float32, [None, 6, 6, 2])
    labels = sl.placeholder(sl.int32, [None])
    training = sl.placeholder_with_default(True, [])
    h = sl.layers.conv2d(x, 4, 3, padding="same", activation=sl.nn.relu)
    h = sl.layers.batch_normalization(h, training=training)
    h = sl.layers.max_pooling2d(h, 2, 2)
    h = sl.layers.dropout(sl.layers.flatten(h), 0.1, training=training)
    logits = sl.layers.dense(h, 3, kernel_regularizer=sl.layers.regularizers.L2(1e-3))
    loss = (
        sl.reduce_mean(sl.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        + sl.losses.get_regularization_loss()
    )
    with sl.control_dependencies(sl.get_collection(sl.GraphKeys.UPDATE_OPS)):
        train = sl.train.GradientDescentOptimizer(0.1).minimize(loss)
    moving_mean = sl.global_variables()[4]
    assert moving_mean.name == "batch_normalization/moving_mean:0"
    rng = np.random.default_rng(0)
    feed = {x: rng.normal(size=(8, 6, 6, 2)).astype(np.float32), labels: rng.integers(0, 3, 8)}
    with sl.Session(config=sl.SessionConfig(engine=engine)) as s:
        s.run(sl.global_variables_initializer())
        before = s.run(loss, {**feed, training: False})
        for _ in range(5):
            s.run(train, feed)
        after = s.run(loss, {**feed, training: False})
        moved = s.run(moving_mean)
    assert after < 0.5 * before
    assert np.all(moved != 0.0)
