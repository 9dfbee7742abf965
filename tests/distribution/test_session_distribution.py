"""`Session(config=SessionConfig(distribution=...))` and `fit` under a distribution: the same
numbers as one device, with batches split over the batch axis and variables laid out by the
distribution (optimizer slots as their variable), on the 4 virtual CPU devices of conftest.py."""

import contextlib

import numpy as np
import pytest
from jax.sharding import PartitionSpec

import sluice as sl
from sluice import layers as L
from sluice._keras.layers import runtime
from sluice.distribution import DataParallel, DeviceMesh, LayoutMap, ModelParallel
from sluice.framework.compiler.sharding import StepShardings

TOLERANCE = dict(rtol=1e-5, atol=1e-6)


@pytest.fixture(autouse=True)
def no_distribution():
    sl.distribution.set_distribution(None)
    yield
    sl.distribution.set_distribution(None)


def _config(distribution=None, **kwargs):
    return sl.SessionConfig(distribution=distribution, **kwargs)


def _model_parallel():
    """Kernels split by columns over "model", dense_0's bias too; batches over "batch". The
    keys match the variables only: their Adam slots are laid out by colocation."""
    layout_map = LayoutMap(DeviceMesh((2, 2), ("batch", "model")))
    layout_map[r"^dense_\d/kernel$"] = (None, "model")
    layout_map["^dense_0/bias$"] = ("model",)
    return ModelParallel(layout_map=layout_map)


def _numbers(seed=0):
    """An initializer of NumPy-drawn constants: the same numbers in every session, and a
    program that compiles at once (a random initializer's takes seconds on a small machine)."""
    rng = np.random.default_rng(seed)

    def initializer(shape, dtype=None, partition_info=None):
        return sl.constant(rng.uniform(-0.5, 0.5, size=shape).astype(np.float32))

    return initializer


def _mlp():
    """A two-layer MLP trained by Adam; returns (x, y, loss, train_op)."""
    x = sl.placeholder(sl.float32, [None, 8], name="x")
    y = sl.placeholder(sl.float32, [None, 4], name="y")
    h, initializer = x, _numbers()
    for i, units in enumerate((16, 4)):
        with sl.variable_scope(f"dense_{i}"):
            w = sl.get_variable("kernel", [h.shape[1], units], initializer=initializer)
            b = sl.get_variable("bias", [units], initializer=initializer)
        h = sl.matmul(h, w) + b
        if i == 0:
            h = sl.tanh(h)
    loss = sl.reduce_mean(sl.square(h - y))
    return x, y, loss, sl.train.AdamOptimizer(0.05).minimize(loss)


def _batches(steps=5, batch=8):
    rng = np.random.default_rng(0)
    return [
        (
            rng.normal(size=(batch, 8)).astype(np.float32),
            rng.normal(size=(batch, 4)).astype(np.float32),
        )
        for _ in range(steps)
    ]


def _train(config, x, y, loss, train_op, batches):
    """Losses of one step per batch, every variable's final value and the partition spec it is
    held with (`_specs`), by name."""
    with sl.Session(config=config) as sess:
        sess.run(sl.global_variables_initializer())
        losses = [sess.run([loss, train_op], {x: bx, y: by})[0] for bx, by in batches]
        values = sess.run({v.op.name: v for v in sl.global_variables()})
        specs = _specs(sess)
    return losses, values, specs


def _specs(sess):
    """The partition spec of every variable in the session's state (None: on one device)."""
    return {h: getattr(v.sharding, "spec", None) for h, v in sess._state.variables.items()}


def _assert_same(got, want):
    """Two lists, or two dicts, of arrays equal within TOLERANCE."""
    if isinstance(want, dict):
        assert got.keys() == want.keys()
    else:
        assert len(got) == len(want)
    for key in want if isinstance(want, dict) else range(len(want)):
        np.testing.assert_allclose(got[key], want[key], **TOLERANCE, err_msg=str(key))


@pytest.fixture
def recorded_feeds(monkeypatch):
    """The shardings compiled steps take their feeds in (their jit's in_shardings), by
    placeholder name."""
    found = {}
    feed_sharding = StepShardings.feed_sharding

    def recording(self, tensor):
        sharding = feed_sharding(self, tensor)
        found[tensor.op.name] = sharding.spec
        return sharding

    monkeypatch.setattr(StepShardings, "feed_sharding", recording)
    return found


# -- compiled training ------------------------------------------------------------------------
def test_mlp_training_equals_one_device(recorded_feeds):
    x, y, loss, train_op = _mlp()
    batches = _batches()
    want_losses, want_values, _ = _train(_config(), x, y, loss, train_op, batches)
    assert not recorded_feeds  # the plain session places nothing

    losses, values, specs = _train(_config(DataParallel()), x, y, loss, train_op, batches)
    _assert_same(losses, want_losses)
    _assert_same(values, want_values)
    assert recorded_feeds == {"x": PartitionSpec("batch"), "y": PartitionSpec("batch")}
    assert len(specs) == 13 and set(specs.values()) == {PartitionSpec()}  # all replicated

    recorded_feeds.clear()
    losses, values, specs = _train(_config(_model_parallel()), x, y, loss, train_op, batches)
    _assert_same(losses, want_losses)
    _assert_same(values, want_values)
    assert recorded_feeds == {"x": PartitionSpec("batch"), "y": PartitionSpec("batch")}
    split, by_model, whole = PartitionSpec(None, "model"), PartitionSpec("model"), PartitionSpec()
    assert specs == {
        "dense_0/kernel": split, "Adam/dense_0/kernel/mu": split, "Adam/dense_0/kernel/nu": split,
        "dense_1/kernel": split, "Adam/dense_1/kernel/mu": split, "Adam/dense_1/kernel/nu": split,
        "dense_0/bias": by_model, "Adam/dense_0/bias/mu": by_model,
        "Adam/dense_0/bias/nu": by_model,
        "dense_1/bias": whole, "Adam/dense_1/bias/mu": whole, "Adam/dense_1/bias/nu": whole,
        "Adam/count": whole,
    }  # fmt: skip


def test_lstm_with_gradients_equals_one_device():
    x = sl.placeholder(sl.float32, [None, 5, 3], name="x")
    cell = sl.cells.LSTMCell(8, initializer=_numbers())
    outputs, _ = sl.nn.dynamic_rnn(cell, x, dtype=sl.float32)
    loss = sl.reduce_mean(sl.square(outputs - 0.5))
    train_op = sl.train.GradientDescentOptimizer(0.5).minimize(loss)
    variables = sl.trainable_variables()
    grads = sl.gradients(loss, variables)
    rng = np.random.default_rng(1)
    feeds = [rng.normal(size=(8, 5, 3)).astype(np.float32) for _ in range(3)]

    def train(config):
        meta = sl.RunMetadata()
        with sl.Session(config=config) as sess:
            sess.run(sl.global_variables_initializer())
            runs = [sess.run([loss, grads, train_op], {x: f}, run_metadata=meta)[:2] for f in feeds]
            assert meta.engine == "compiled"  # the while loop and its gradient, on the mesh
            return runs, sess.run(variables)

    want_runs, want_values = train(_config())
    runs, values = train(_config(DataParallel()))
    for (loss_value, grad_values), (want_loss, want_grads) in zip(runs, want_runs):
        np.testing.assert_allclose(loss_value, want_loss, **TOLERANCE)
        _assert_same(grad_values, want_grads)
    _assert_same(values, want_values)


def test_random_ops_draw_the_same_numbers():
    x = sl.placeholder(sl.float32, [None, 6], name="x")
    dropped = sl.nn.dropout(x, rate=0.5, seed=3)
    uniform = sl.random_uniform([4, 3], seed=7)
    batch = np.ones((8, 6), np.float32)

    def draws(config):
        with sl.Session(config=config) as sess:
            return [sess.run([dropped, uniform], {x: batch}) for _ in range(3)]

    want = draws(_config())
    got = draws(_config(DataParallel()))
    for run, want_run in zip(got, want):
        for value, want_value in zip(run, want_run):
            np.testing.assert_array_equal(value, want_value)
    assert not np.array_equal(want[0][0], want[1][0])  # new numbers on every run


# -- feeds ------------------------------------------------------------------------------------
def test_a_batch_must_split_evenly_and_a_fixed_shape_is_replicated(recorded_feeds):
    x = sl.placeholder(sl.float32, [None, 3], name="x")
    fixed = sl.placeholder(sl.float32, [6, 3], name="fixed")
    total = sl.reduce_sum(x, axis=0) + sl.reduce_sum(fixed, axis=0)
    with sl.Session(config=_config(DataParallel())) as sess:
        with pytest.raises(ValueError, match=r"x:0 has 6 samples.*evenly over the 4 devices"):
            sess.run(total, {x: np.ones((6, 3), np.float32), fixed: np.ones((6, 3), np.float32)})
        value = sess.run(
            total, {x: np.ones((4, 3), np.float32), fixed: np.full((6, 3), 2.0, np.float32)}
        )
    np.testing.assert_array_equal(value, [16.0, 16.0, 16.0])
    assert recorded_feeds == {"x": PartitionSpec("batch"), "fixed": PartitionSpec()}


def test_a_layout_that_does_not_fit_names_the_variable():
    layout_map = LayoutMap(DeviceMesh((2, 2), ("batch", "model")))
    layout_map["odd"] = (None, "model")
    v = sl.get_variable("odd", [4, 3])
    with sl.Session(config=_config(ModelParallel(layout_map=layout_map))) as sess:
        with pytest.raises(ValueError, match=r"variable 'odd' has shape \(4, 3\).*size 3.*2 dev"):
            sess.run(v.initializer)


# -- interpreted runs and checkpoints ---------------------------------------------------------
def test_interpreted_runs_gather_and_place_back():
    x = sl.placeholder(sl.float32, [None, 4], name="x")
    with sl.variable_scope("dense_0"):
        w = sl.get_variable("kernel", [4, 4], initializer=_numbers())
    loss = sl.reduce_sum(sl.square(sl.matmul(x, w)))
    train_op = sl.train.GradientDescentOptimizer(0.01).minimize(loss)
    batches = [np.full((8, 4), i, np.float32) for i in (1, 2)]

    def train(config):
        with sl.Session(config=config) as sess:
            sess.run(w.initializer)
            meta = sl.RunMetadata()
            losses = [sess.run([loss, train_op], {x: b}, run_metadata=meta)[0] for b in batches]
            return losses, sess.run(w), _specs(sess), meta.engine

    want_losses, want_w, _, _ = train(_config())
    losses, got_w, specs, engine = train(_config(_model_parallel(), engine="interpreted"))
    assert engine == "interpreted"
    _assert_same(losses, want_losses)
    np.testing.assert_allclose(got_w, want_w, **TOLERANCE)
    assert specs == {"dense_0/kernel": PartitionSpec(None, "model")}  # laid out again


def test_saver_round_trip_between_one_device_and_a_distribution(tmp_path):
    """Saved on one device, restored under ModelParallel (laid out), saved from there (gathered)
    and restored on one device: the same numbers all the way."""
    _mlp()
    variables = sl.global_variables()
    names = [v.op.name for v in variables]
    saver = sl.train.Saver()
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        sess.run([v.assign(v + sl.cast(1, v.dtype)) for v in variables])  # no zeros
        want = sess.run(variables)
        first = saver.save(sess, str(tmp_path / "one_device"))
    with sl.Session(config=_config(_model_parallel())) as sess:
        saver.restore(sess, first)
        specs = _specs(sess)
        _assert_same(sess.run(variables), want)
        second = saver.save(sess, str(tmp_path / "distributed"))
        for suffix in ("a", "ab", "abc"):  # path lengths that no mesh divides: never split
            saver.restore(sess, saver.save(sess, str(tmp_path / f"distributed{suffix}")))
    assert (
        specs["dense_0/kernel"] == specs["Adam/dense_1/kernel/nu"] == PartitionSpec(None, "model")
    )
    assert specs["dense_0/bias"] == PartitionSpec("model")
    with sl.Session() as sess:
        saver.restore(sess, second)
        got = sess.run(variables)
    for name, value, want_value in zip(names, got, want):
        np.testing.assert_array_equal(value, want_value, err_msg=name)


# -- what a distribution does not run ---------------------------------------------------------
def test_device_requests_and_timeouts_are_unimplemented():
    with sl.device("/cpu:1"):
        a = sl.constant(2.0) * 3.0
    with sl.device("/cpu:0"):
        b = a + 1.0
    c = sl.constant(1.0) + 1.0
    with sl.Session(config=_config(DataParallel())) as sess:
        with pytest.raises(sl.errors.UnimplementedError, match="placed on 2 devices"):
            sess.run(b)
        with pytest.raises(sl.errors.UnimplementedError, match="timeout_in_ms"):
            sess.run(c, options=sl.RunOptions(timeout_in_ms=1000))
        assert sess.run(c) == 2.0


# -- Keras ------------------------------------------------------------------------------------
def _fit(distribution):
    """fit for two epochs and predict, under `distribution` (None: one device); returns the
    losses, the weights, the predictions and the model."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 6)).astype(np.float32)
    y = rng.normal(size=(32, 2)).astype(np.float32)
    model = sl.Sequential([
        sl.Input((6,)), L.Dense(8, activation="tanh", kernel_initializer=_numbers(1)),
        L.Dense(2, kernel_initializer=_numbers(2)),
    ])  # fmt: skip
    with distribution.scope() if distribution else contextlib.nullcontext():
        model.compile(sl.optimizers.Adam(0.05), "mse")
        history = model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    # outside the scope: compile() kept the distribution; 30 = 16 + 14, the 14 padded to 16
    predictions = model.predict(x[:30], batch_size=16, verbose=0)
    return history.history["loss"], model.get_weights(), predictions, model


def test_fit_and_predict_under_data_parallel_equal_one_device():
    want_losses, want_weights, want_predictions, _ = _fit(None)
    distribution = DataParallel()
    losses, weights, predictions, model = _fit(distribution)
    _assert_same(losses, want_losses)
    _assert_same(weights, want_weights)
    np.testing.assert_allclose(predictions, want_predictions, **TOLERANCE)
    assert sl.distribution.distribution() is None
    session = runtime.runtime_for(model.graph).session
    assert session.config.distribution is distribution
    assert {len(v.sharding.device_set) for v in session._state.variables.values()} == {4}
    x, y = np.zeros((30, 6), np.float32), np.zeros((30, 2), np.float32)
    with pytest.raises(ValueError, match=r"fit: the last batch of 6 samples .* the 4 devices"):
        model.fit(x, y, batch_size=8, verbose=0)
    with pytest.raises(ValueError, match=r"evaluate: batch_size of 6 samples .* the 4 devices"):
        model.evaluate(x, y, batch_size=6, verbose=0)
