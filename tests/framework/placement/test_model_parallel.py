"""Training across devices gives the losses of the same model on one device: the whitepaper's
model-parallel layout (a 4-layer LSTM with one layer per device, in one dynamic_rnn loop) and
the classic TF1 data-parallel script (one tower per device, gradients averaged on a parameter
device)."""

import numpy as np
import pytest

import sluice as sl

from .split import by_device, on

BATCH, STEPS, DEPTH, UNITS = 4, 8, 5, 16
RNG = np.random.RandomState(0)
INPUTS = RNG.randn(BATCH, STEPS, DEPTH).astype(np.float32)
TARGETS = RNG.randn(BATCH, STEPS, UNITS).astype(np.float32) * 0.5


def stacked_lstm(layers: int, split: bool):
    """`layers` BasicLSTMCells in a MultiRNNCell, layer i on cpu:i when `split`."""
    x = sl.placeholder(sl.float32, [BATCH, STEPS, DEPTH], name="x")
    target = sl.placeholder(sl.float32, [BATCH, STEPS, UNITS], name="target")
    cells = [sl.nn.rnn_cell.BasicLSTMCell(UNITS) for _ in range(layers)]
    if split:
        cells = [sl.nn.rnn_cell.DeviceWrapper(cell, f"/cpu:{i}") for i, cell in enumerate(cells)]
    outputs, _ = sl.nn.dynamic_rnn(sl.nn.rnn_cell.MultiRNNCell(cells), x, dtype=sl.float32)
    loss = sl.reduce_mean(sl.square(outputs - target))
    train = sl.train.GradientDescentOptimizer(0.1).minimize(loss)
    return x, target, loss, train


def train_lstm(
    layers: int,
    split: bool,
    engine: str,
    weights: dict | None = None,
    metadata: sl.RunMetadata | None = None,
    steps: int = 3,
):
    """The losses of `steps` training steps from `weights` (by variable name; None: from the
    initializers), and the weights they started from."""
    with sl.Graph().as_default():
        x, target, loss, train = stacked_lstm(layers, split)
        with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
            sess.run(sl.global_variables_initializer())
            variables = sl.global_variables()
            for v in variables if weights is not None else ():
                v.load(weights[v.name], sess)
            initial = dict(zip([v.name for v in variables], sess.run(variables)))
            feeds = {x: INPUTS, target: TARGETS}
            losses = [
                sess.run([loss, train], feeds, run_metadata=metadata)[0] for _ in range(steps)
            ]
    return losses, initial


# The 4-layer model takes ~20 s on a 2-core machine, nearly all of it compiling its kernels for
# each of the four devices (~170 XLA programs), and 2 layers on 2 devices ~10 s: they run with
# the slow tests (`-m slow`); the default run trains across devices in test_multi_tower.py.
@pytest.mark.parametrize(
    "layers, engine",
    [
        pytest.param(2, "interpreted", marks=pytest.mark.slow),
        pytest.param(2, "auto", marks=pytest.mark.slow),
        pytest.param(4, "auto", marks=pytest.mark.slow),
        pytest.param(4, "interpreted", marks=pytest.mark.slow),
    ],
)
def test_lstm_with_a_layer_per_device_trains_like_one_device(layers, engine):
    want, weights = train_lstm(layers, split=False, engine="auto")
    metadata = sl.RunMetadata()
    got, started_from = train_lstm(
        layers, split=True, engine=engine, weights=weights, metadata=metadata
    )
    assert len(weights) == 2 * layers  # a kernel and a bias per layer
    for name, value in weights.items():
        np.testing.assert_array_equal(started_from[name], value)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert want[-1] < want[0]  # it trains
    parts = by_device(metadata)
    assert list(parts) == [f"CPU:{i}" for i in range(layers)]
    # each layer's device runs its part of the forward loop and of the backward loop, and
    # receives values inside both; it holds its layer's state Merges in both loops, which trigger
    # its Recvs every iteration: no control loop is needed
    assert all(part.recvs > 0 and part.control_loops == 0 for part in parts.values())


PARAMS_W = RNG.randn(DEPTH, 3).astype(np.float32)
PARAMS_B = np.array([0.1, -0.2, 0.3], np.float32)
EXAMPLES = 12  # split evenly into 2 or 3 towers
FEATURES = RNG.randn(EXAMPLES, DEPTH).astype(np.float32)
LABELS = RNG.randn(EXAMPLES, 3).astype(np.float32)


def model(w, b, features, labels):
    logits = sl.matmul(features, w) + b
    return sl.reduce_mean(sl.square(sl.tanh(logits) - labels))


def multi_tower(towers: int, split: bool):
    """The TF1 multi-tower script: variables on the parameter device cpu:0, tower i on cpu:i+1
    with its slice of the batch, the towers' gradients averaged on cpu:0 and applied once."""
    x = sl.placeholder(sl.float32, [EXAMPLES, DEPTH], name="x")
    y = sl.placeholder(sl.float32, [EXAMPLES, 3], name="y")
    with on("/cpu:0", split):
        w = sl.Variable(PARAMS_W, name="w")
        b = sl.Variable(PARAMS_B, name="b")
        x_slices, y_slices = sl.split(x, towers), sl.split(y, towers)
    opt = sl.train.GradientDescentOptimizer(0.5)
    tower_grads, tower_losses = [], []
    for i in range(towers):
        with on(f"/cpu:{i + 1}", split), sl.name_scope(f"tower_{i}"):
            loss = model(w, b, x_slices[i], y_slices[i])
            tower_losses.append(loss)
            tower_grads.append(opt.compute_gradients(loss, [w, b]))
    with on("/cpu:0", split):
        averaged = []
        for pairs in zip(*tower_grads):
            grads = [g for g, _ in pairs]
            averaged.append((sl.reduce_mean(sl.stack(grads), axis=0), pairs[0][1]))
        train = opt.apply_gradients(averaged)
        loss = sl.add_n(tower_losses) / float(towers)
    return x, y, loss, train


def one_device_full_batch():
    """The same model trained on the whole batch on one device: the mean of equal slices' mean
    losses is the mean loss, so its gradient is the towers' average gradient."""
    x = sl.placeholder(sl.float32, [EXAMPLES, DEPTH], name="x")
    y = sl.placeholder(sl.float32, [EXAMPLES, 3], name="y")
    w = sl.Variable(PARAMS_W, name="w")
    b = sl.Variable(PARAMS_B, name="b")
    loss = model(w, b, x, y)
    return x, y, loss, sl.train.GradientDescentOptimizer(0.5).minimize(loss)


def train_script(build, engine="auto", steps=5, metadata=None):
    with sl.Graph().as_default():
        x, y, loss, train = build()
        with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
            sess.run(sl.global_variables_initializer())
            return [
                sess.run([loss, train], {x: FEATURES, y: LABELS}, run_metadata=metadata)[0]
                for _ in range(steps)
            ]


# test_multi_tower.py runs the script with get_variable sharing, two towers, engine "auto"; here
# three towers beside a parameter device, interpreted, also against full-batch training.
@pytest.mark.parametrize("towers, engine", [(3, "interpreted")])
def test_multi_tower_script_trains_like_one_device(towers, engine):
    metadata = sl.RunMetadata()
    got = train_script(lambda: multi_tower(towers, split=True), engine, metadata=metadata)
    same_script_one_device = train_script(lambda: multi_tower(towers, split=False))
    full_batch = train_script(one_device_full_batch)
    np.testing.assert_allclose(got, same_script_one_device, rtol=1e-5)
    np.testing.assert_allclose(got, full_batch, rtol=1e-5)
    assert got[-1] < got[0]
    assert list(by_device(metadata)) == [f"CPU:{i}" for i in range(towers + 1)]
