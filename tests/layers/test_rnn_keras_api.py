"""Keras 3's RNN API: user-written cells (alone and stacked) inside one while loop, masks from
Masking (holes and left padding too), go_backwards, zero_output_for_mask, unroll, initial
states passed in calls (a seq2seq model), stateful layers, Bidirectional with user cells, and
configs. References are NumPy loops of Keras 3's `backend.rnn` (TensorFlow backend)."""

import numpy as np
import pytest

import sluice as sl
from sluice import layers as L
from sluice._keras import ops
from sluice._keras.layers.tracking import get_mask
from sluice._keras.saving import serialization
from sluice._tf1.cells import nest


@sl.saving.register_keras_serializable(package="test_rnn")
class AccumulatingCell(L.Layer):
    """A user cell as the Keras guide writes them, with two states and an output that is not
    its first state: h = tanh(x @ kernel + h @ recurrent_kernel); output = 2 h; acc += h."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.state_size = [units, units]
        self.output_size = units

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], self.units), name="kernel")
        self.recurrent_kernel = self.add_weight(
            shape=(self.units, self.units), name="recurrent_kernel"
        )

    def call(self, inputs, states):
        h, acc = states
        h = ops.tanh(ops.matmul(inputs, self.kernel) + ops.matmul(h, self.recurrent_kernel))
        return 2.0 * h, [h, acc + h]

    def get_config(self):
        return {**super().get_config(), "units": self.units}


def accumulating_step(w):
    def step(x, states):
        h, acc = states
        h = np.tanh(x @ w["kernel"] + h @ w["recurrent_kernel"])
        return 2.0 * h, [h, acc + h]

    return step


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def lstm_step(w):
    def step(x, states):
        h, c = states
        i, f, g, o = np.split(x @ w["kernel"] + h @ w["recurrent_kernel"] + w["bias"], 4, -1)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        h = _sigmoid(o) * np.tanh(c)
        return h, [h, c]

    return step


def numpy_rnn(step, x, states, mask=None, go_backwards=False, zero_output_for_mask=False):
    """Keras 3's backend.rnn (TensorFlow backend): (last_output, outputs, final states)."""
    batch, time = x.shape[:2]
    mask = np.ones((batch, time), bool) if mask is None else mask
    if go_backwards:
        x, mask = x[:, ::-1], mask[:, ::-1]
    previous, outputs = None, []
    for t in range(time):
        out, new = step(x[:, t], states)
        previous = np.zeros_like(out) if previous is None else previous
        keep = mask[:, t : t + 1]
        previous = np.where(keep, out, previous)
        states = [np.where(keep, n, s) for n, s in zip(new, states)]
        outputs.append(np.where(keep, previous, 0.0) if zero_output_for_mask else previous)
    outputs = np.stack(outputs, 1)
    return outputs[:, -1], outputs, states


def weights_by_name(layer, rng, sess, scale=0.6):
    """Loads random values into the layer's weights; {short name: value}."""
    values = {}
    for v in layer.weights:
        value = scale * rng.normal(size=v.shape.as_list())
        v.load(value, sess)
        values[v.op.name.split("/")[-1]] = value
    return values


RNG = np.random.default_rng(0)
X = RNG.normal(size=(3, 5, 4))
X[0, :2] = 0.0  # left padding
X[1, 2] = 0.0  # a hole in the middle
X[2, 3:] = 0.0  # right padding
MASK = np.any(X != 0.0, axis=-1)
COMBINATIONS = [(gb, zero) for gb in (False, True) for zero in (False, True)]


@pytest.fixture(scope="module")
def masked_user_cell_graph():
    """Masking, then one RNN(AccumulatingCell) per (go_backwards, zero_output_for_mask)."""
    g = sl.Graph()
    with g.as_default():
        x = sl.placeholder(sl.float64, [3, 5, 4])
        masked = L.Masking(dtype="float64")(x)
        rnns, outputs = [], []
        for gb, zero in COMBINATIONS:
            rnn = L.RNN(
                AccumulatingCell(3, dtype="float64"), return_sequences=True, return_state=True,
                go_backwards=gb, zero_output_for_mask=zero, dtype="float64",
            )  # fmt: skip
            rnns.append(rnn)
            outputs.append(rnn(masked))
    return g, x, masked, rnns, outputs


@pytest.mark.parametrize("engine", ["compiled", "interpreted"])
def test_user_cell_with_masks_matches_keras_loop(masked_user_cell_graph, engine):
    g, x, masked, rnns, outputs = masked_user_cell_graph
    rng = np.random.default_rng(1)
    with sl.Session(graph=g, config=sl.SessionConfig(engine=engine)) as sess:
        w = weights_by_name(rnns[0], rng, sess)
        for rnn in rnns[1:]:
            for v in rnn.weights:
                v.load(w[v.op.name.split("/")[-1]], sess)
        got = sess.run(outputs, {x: X})
    zeros = [np.zeros((3, 3)), np.zeros((3, 3))]
    for (gb, zero), (sequence, h, acc) in zip(COMBINATIONS, got):
        _, expected, (exp_h, exp_acc) = numpy_rnn(
            accumulating_step(w), X, zeros, MASK, go_backwards=gb, zero_output_for_mask=zero
        )
        np.testing.assert_allclose(sequence, expected, atol=1e-12)
        np.testing.assert_allclose(h, exp_h, atol=1e-12)
        np.testing.assert_allclose(acc, exp_acc, atol=1e-12)


def test_user_cell_steps_inside_one_while_loop(masked_user_cell_graph):
    g, _, masked, rnns, outputs = masked_user_cell_graph
    ops_ = g.get_operations()
    assert sum(op.type == "LoopCond" for op in ops_) == len(rnns)  # one loop per call
    # the cell's two matmuls are built once per layer (a loop body, not one copy per step)
    assert sum(op.type == "MatMul" for op in ops_) == 2 * len(rnns)
    for rnn in rnns:  # its weights are created outside the loop
        assert [v.op.name for v in rnn.weights] == [
            f"{rnn.name}/accumulating_cell/kernel",
            f"{rnn.name}/accumulating_cell/recurrent_kernel",
        ]
        assert all(v.op._control_flow_context is None for v in rnn.weights)
    assert get_mask(outputs[0][0]) is get_mask(masked)  # return_sequences keeps the mask
    assert get_mask(outputs[0][1]) is None


def test_masking_zeroes_padding_and_gives_the_mask():
    x = sl.placeholder(sl.float32, [2, 3, 2])
    layer = L.Masking(mask_value=-1.0)
    y = layer(x)
    value = np.array([[[1, -1], [-1, -1], [2, 3]], [[-1, -1], [0, 0], [-1, 4]]], np.float32)
    with sl.Session() as sess:
        out, mask = sess.run([y, get_mask(y)], {x: value})
    np.testing.assert_array_equal(mask, [[True, False, True], [False, True, True]])
    np.testing.assert_array_equal(out, value * mask[..., None])
    assert layer.get_config()["mask_value"] == -1.0
    with pytest.raises(ValueError, match="Masking .* last axis"):
        L.Masking()(sl.placeholder(sl.float32, [4]))


def test_stacked_cells_match_numpy_with_nested_states():
    rng = np.random.default_rng(2)
    x = sl.placeholder(sl.float64, [3, 5, 4])
    initial = [sl.placeholder(sl.float64, [3, n]) for n in (3, 3, 2, 2)]
    rnn = L.RNN(
        [L.LSTMCell(3, dtype="float64"), AccumulatingCell(2, dtype="float64")],
        return_state=True, dtype="float64",
    )  # fmt: skip
    out, (h1, c1), (h2, acc2) = rnn(L.Masking(dtype="float64")(x), initial_state=initial)
    assert isinstance(rnn.cell, L.StackedRNNCells) and rnn.state_size == [[3, 3], [2, 2]]
    assert rnn.compute_output_shape((None, 5, 4)) == [
        (None, 2),
        [(None, 3), (None, 3)],
        [(None, 2), (None, 2)],
    ]
    init_values = [0.3 * rng.normal(size=t.shape.as_list()) for t in initial]
    with sl.Session() as sess:
        values = {v: 0.5 * rng.normal(size=v.shape.as_list()) for v in rnn.weights}
        for v, value in values.items():
            v.load(value, sess)
        got = sess.run([out, h1, c1, h2, acc2], {x: X, **dict(zip(initial, init_values))})
    names = [v.op.name.split("/") for v in rnn.weights]
    w1 = {n[-1]: values[v] for n, v in zip(names, rnn.weights) if n[-2] == "lstm_cell"}
    w2 = {n[-1]: values[v] for n, v in zip(names, rnn.weights) if n[-2] == "accumulating_cell"}

    def stacked(x_t, states):
        y, new1 = lstm_step(w1)(x_t, states[:2])
        y, new2 = accumulating_step(w2)(y, states[2:])
        return y, new1 + new2

    last, _, finals = numpy_rnn(stacked, X, init_values, MASK)
    for g_, e in zip(got, [last] + finals):
        np.testing.assert_allclose(g_, e, atol=1e-12)


def test_unroll_computes_what_the_loop_computes():
    rng = np.random.default_rng(3)
    x = sl.placeholder(sl.float64, [3, 5, 4])
    masked = L.Masking(dtype="float64")(x)
    kinds = [
        lambda **kw: L.LSTM(3, return_sequences=True, go_backwards=True, dtype="float64", **kw),
        lambda **kw: L.RNN(AccumulatingCell(3, dtype="float64"), return_state=True,
                           dtype="float64", **kw),
    ]  # fmt: skip
    pairs = [(make(), make(unroll=True)) for make in kinds]
    loops_before = sum(op.type == "LoopCond" for op in sl.get_default_graph().get_operations())
    results = [(loop(masked), unrolled(masked)) for loop, unrolled in pairs]
    loops = sum(op.type == "LoopCond" for op in sl.get_default_graph().get_operations())
    assert loops - loops_before == len(pairs)  # only the rolled layers built a loop
    with sl.Session() as sess:
        for loop, unrolled in pairs:
            for a, b in zip(loop.weights, unrolled.weights):
                value = 0.5 * rng.normal(size=a.shape.as_list())
                a.load(value, sess)
                b.load(value, sess)
        got = sess.run(results, {x: X})
    for rolled, unrolled in got:
        for a, b in zip(nest.flatten(rolled), nest.flatten(unrolled)):
            np.testing.assert_allclose(a, b, atol=1e-12)
    with pytest.raises(ValueError, match="Cannot unroll a RNN if the time dimension"):
        L.LSTM(2, unroll=True)(sl.placeholder(sl.float32, [None, None, 3]))


@pytest.mark.parametrize(
    "engine", ["compiled", pytest.param("interpreted", marks=pytest.mark.slow)]
)
def test_gradients_flow_through_a_user_cell(engine):
    """Symbolic gradients (a backward while loop through the user cell's call) against
    central differences, for the inputs, an initial state and a weight."""
    rng = np.random.default_rng(4)
    g = sl.Graph()
    with g.as_default():
        x = sl.placeholder(sl.float64, [2, 3, 2])
        h0 = sl.placeholder(sl.float64, [2, 2])
        rnn = L.RNN(AccumulatingCell(2, dtype="float64"), return_sequences=True, dtype="float64")
        mask = sl.constant([[True, True, False], [False, True, True]])
        y = rnn(x, initial_state=[h0, h0 * 0.5], mask=mask)
        loss = sl.reduce_sum(y * sl.constant(rng.normal(size=(2, 3, 2))))
        kernel = rnn.cell.kernel
        grads = sl.gradients(loss, [x, h0, kernel])
    feed = {x: rng.normal(size=(2, 3, 2)), h0: rng.normal(size=(2, 2))}
    with sl.Session(graph=g, config=sl.SessionConfig(engine=engine)) as sess:
        sess.run(sl.global_variables_initializer())
        symbolic = sess.run(grads, feed)
        for target, grad, index in [
            (x, symbolic[0], (0, 1, 1)),
            (x, symbolic[0], (1, 2, 0)),
            (h0, symbolic[1], (1, 0)),
            (kernel, symbolic[2], (0, 1)),
        ]:
            slopes = []
            for shift in (1e-6, -1e-6):
                if target is kernel:
                    value = np.array(sess.run(kernel))
                    value[index] += shift
                    kernel.load(value, sess)
                    slopes.append(sess.run(loss, feed))
                    value[index] -= shift
                    kernel.load(value, sess)
                else:
                    shifted = dict(feed)
                    shifted[target] = feed[target].copy()
                    shifted[target][index] += shift
                    slopes.append(sess.run(loss, shifted))
            np.testing.assert_allclose(
                grad[index], (slopes[0] - slopes[1]) / 2e-6, rtol=1e-6, atol=1e-8
            )  # central differences in float64


def _stateful_pair(batch_input_shape):
    """A stateful LSTM model on chunks and a stateless twin on whole sequences."""
    stateful = sl.Sequential([
        L.LSTM(3, stateful=True, return_sequences=True, batch_input_shape=batch_input_shape),
        L.Dense(1),
    ])  # fmt: skip
    whole = sl.Sequential([sl.Input((None, 2)), L.LSTM(3, return_sequences=True), L.Dense(1)])
    whole.build((None, 6, 2))
    whole.set_weights(stateful.get_weights())
    return stateful, whole


@pytest.fixture(scope="module")
def stateful_models():
    sl.set_random_seed(6)
    return _stateful_pair((2, 3, 2))


def test_stateful_states_carry_over_and_reset(stateful_models):
    stateful, whole = stateful_models
    lstm = stateful.layers[0]
    x = np.random.default_rng(6).normal(size=(2, 6, 2)).astype(np.float32)
    lstm.reset_states()
    first = stateful.predict(x[:, :3], verbose=0, batch_size=2)
    second = stateful.predict(x[:, 3:], verbose=0, batch_size=2)
    expected = whole.predict(x, verbose=0)
    np.testing.assert_allclose(np.concatenate([first, second], 1), expected, atol=1e-5)
    h = sl.ops.convert_to_numpy(lstm.states[0])  # the final h, written back by predict
    dense_kernel, dense_bias = stateful.layers[1].get_weights()
    np.testing.assert_allclose(h @ dense_kernel + dense_bias, expected[:, -1], atol=1e-5)
    lstm.reset_states()
    assert not np.any(sl.ops.convert_to_numpy(lstm.states[1]))
    np.testing.assert_allclose(stateful.predict(x[:, :3], verbose=0, batch_size=2), first,
                               atol=1e-6)  # fmt: skip
    values = [np.full((2, 3), 0.5, np.float32), np.ones((2, 3), np.float32)]
    lstm.reset_state(values)
    np.testing.assert_array_equal(sl.ops.convert_to_numpy(lstm.states[1]), values[1])
    with pytest.raises(ValueError, match="state .* has shape \\(2, 3\\).* \\(3,\\)"):
        lstm.reset_states([np.zeros(3), np.zeros(3)])
    with pytest.raises(ValueError, match="expects 2 states"):
        lstm.reset_states([np.zeros((2, 3))])
    with pytest.raises(ValueError, match="state .* is float32, the value given holds <U1 values"):
        lstm.reset_states([np.full((2, 3), "a"), np.zeros((2, 3))])


def test_stateful_states_are_not_weights(stateful_models, tmp_path):
    stateful, whole = stateful_models
    lstm = stateful.layers[0]
    assert [v.op.name for v in lstm.states] == ["lstm/rnn_state", "lstm/rnn_state_1"]
    assert all(not v.trainable for v in lstm.states)
    state_ids = {id(v) for v in lstm.states}
    assert not state_ids & {id(v) for v in stateful.weights}  # Keras 3 leaves them out
    assert len(stateful.get_weights()) == len(whole.get_weights()) == 5
    path = str(tmp_path / "stateful.weights.h5")
    stateful.save_weights(path)
    whole.load_weights(path)  # the same file fits the stateless twin
    for a, b in zip(stateful.get_weights(), whole.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_stateful_needs_a_fixed_batch_size():
    with pytest.raises(ValueError, match="batch size must be static.*batch_size="):
        L.GRU(2, stateful=True)(sl.Input((3, 2)))
    x = sl.Input((3, 2), batch_size=4)
    layer = L.RNN(AccumulatingCell(2), stateful=True)
    layer(x)
    assert [tuple(v.shape.as_list()) for v in layer.states] == [(4, 2), (4, 2)]
    with pytest.raises(ValueError, match="stateful with a batch size of 4"):
        layer(sl.Input((3, 2), batch_size=3))
    assert L.GRU(2).states is None
    L.GRU(2).reset_states()  # not stateful: nothing to reset (as in Keras 3)
    bidirectional = L.Bidirectional(L.LSTM(3, stateful=True))
    bidirectional(x)
    assert [v.op.name for v in bidirectional.states] == [
        f"{bidirectional.name}/{d}_lstm/rnn_state{n}" for d in ("forward", "backward")
        for n in ("", "_1")
    ]  # fmt: skip
    bidirectional.reset_states()
    with pytest.raises(AttributeError, match="must be stateful"):
        L.Bidirectional(L.SimpleRNN(2)).reset_states()


@pytest.mark.parametrize("jit_compile", [True, pytest.param(False, marks=pytest.mark.slow)])
def test_fit_writes_the_final_states_back(jit_compile):
    sl.set_random_seed(7)
    inputs = sl.Input((3, 2), batch_size=2)
    layer = L.SimpleRNN(2, stateful=True)
    model = sl.Model(inputs, L.Dense(1)(layer(inputs)))
    model.compile(sl.optimizers.SGD(0.0), "mse", jit_compile=jit_compile)  # weights stay
    x = np.random.default_rng(7).normal(size=(2, 3, 2)).astype(np.float32)
    model.fit(x, np.zeros((2, 1)), batch_size=2, epochs=1, verbose=0, shuffle=False)
    assert len(layer.states) == 1
    after_fit = [sl.ops.convert_to_numpy(s) for s in layer.states]
    assert all(np.any(s) for s in after_fit)
    layer.reset_states()
    assert not any(np.any(sl.ops.convert_to_numpy(s)) for s in layer.states)
    model.predict(x, batch_size=2, verbose=0)  # from zeros again: the same final states
    for fit_state, state in zip(after_fit, layer.states):
        np.testing.assert_allclose(sl.ops.convert_to_numpy(state), fit_state, atol=1e-6)


def test_seq2seq_with_encoder_states_as_initial_state():
    """The Keras seq2seq example, with a user cell as the decoder: it starts from the encoder
    LSTM's states, trains, and the inference models are built again from the same layers."""
    sl.set_random_seed(8)
    latent, tokens = 4, 5
    encoder_inputs = sl.Input((None, tokens))
    _, state_h, state_c = L.LSTM(latent, return_state=True)(encoder_inputs)
    decoder_inputs = sl.Input((None, tokens))
    decoder = L.RNN(AccumulatingCell(latent), return_sequences=True, return_state=True)
    decoder_outputs, _, _ = decoder(decoder_inputs, initial_state=[state_h, state_c])
    decoder_dense = L.Dense(tokens, activation="softmax")
    model = sl.Model([encoder_inputs, decoder_inputs], decoder_dense(decoder_outputs))
    model.compile(sl.optimizers.Adam(0.05), "categorical_crossentropy")
    rng = np.random.default_rng(8)
    enc = np.eye(tokens, dtype=np.float32)[rng.integers(0, tokens, (8, 3))]
    dec = np.eye(tokens, dtype=np.float32)[rng.integers(0, tokens, (8, 2))]
    losses = model.fit([enc, dec], dec, batch_size=8, epochs=6, verbose=0).history["loss"]
    assert losses[-1] < 0.7 * losses[0]  # the user cell and the encoder both train

    encoder_model = sl.Model(encoder_inputs, [state_h, state_c])
    state_inputs = [sl.Input((latent,)), sl.Input((latent,))]
    outputs, h, acc = decoder(decoder_inputs, initial_state=state_inputs)
    decoder_model = sl.Model([decoder_inputs] + state_inputs, [decoder_dense(outputs), h, acc])
    states = encoder_model.predict(enc, verbose=0)
    step_outputs, _, _ = decoder_model.predict([dec] + states, verbose=0)
    np.testing.assert_allclose(step_outputs, model.predict([enc, dec], verbose=0), atol=1e-6)
    with pytest.raises(ValueError, match="has 2 states .* initial_state has 1"):
        decoder(decoder_inputs, initial_state=[state_h])


MERGE_MODES = ["concat", "sum", "mul", "ave", None]


def test_bidirectional_user_cell_merges_like_keras():
    rng = np.random.default_rng(9)
    x = sl.placeholder(sl.float64, [3, 5, 4])
    masked = L.Masking(dtype="float64")(x)
    layers, results = [], []
    for mode in MERGE_MODES:
        layers.append(L.Bidirectional(
            L.RNN(AccumulatingCell(2), return_sequences=True, return_state=True),
            merge_mode=mode, dtype="float64",
        ))  # fmt: skip
        results.append(layers[-1](masked))
    with sl.Session() as sess:
        fw_w = weights_by_name(layers[0].forward_layer, rng, sess)
        bw_w = weights_by_name(layers[0].backward_layer, rng, sess)
        for layer in layers[1:]:
            for v in layer.weights:
                w = fw_w if "/forward_rnn/" in v.op.name else bw_w
                v.load(w[v.op.name.split("/")[-1]], sess)
        got = sess.run(results, {x: X})
    zeros = [np.zeros((3, 2))] * 2
    _, fw, fw_states = numpy_rnn(accumulating_step(fw_w), X, zeros, MASK, False, True)
    _, bw, bw_states = numpy_rnn(accumulating_step(bw_w), X, zeros, MASK, True, True)
    bw = bw[:, ::-1]  # aligned with the inputs again
    merged = {
        "concat": [np.concatenate([fw, bw], -1)], "sum": [fw + bw], "mul": [fw * bw],
        "ave": [(fw + bw) / 2], None: [fw, bw],
    }  # fmt: skip
    for mode, outputs in zip(MERGE_MODES, got):
        expected = merged[mode] + fw_states + bw_states
        assert len(outputs) == len(expected)
        for g_, e in zip(outputs, expected):
            np.testing.assert_allclose(g_, e, atol=1e-12)
    assert [v.op.name for v in layers[0].weights][:1] == [
        f"{layers[0].name}/forward_rnn/accumulating_cell/kernel"
    ]


def test_bidirectional_with_a_backward_user_layer_and_states():
    backward = L.RNN(AccumulatingCell(3), go_backwards=True, return_state=True, name="back")
    layer = L.Bidirectional(L.LSTM(2, return_state=True), backward_layer=backward)
    assert layer.backward_layer is backward
    x = sl.Input((4, 2))
    out, fh, fc, bh, bacc = layer(
        x, initial_state=[sl.Input((2,)), sl.Input((2,)), sl.Input((3,)), sl.Input((3,))]
    )
    assert [t.shape.as_list() for t in (out, fh, fc, bh, bacc)] == [
        [None, 5],
        [None, 2],
        [None, 2],
        [None, 3],
        [None, 3],
    ]
    with pytest.raises(ValueError, match="different `go_backwards`"):
        L.Bidirectional(L.LSTM(2), backward_layer=L.RNN(AccumulatingCell(2)))
    with pytest.raises(ValueError, match='same value for attribute "return_state"'):
        L.Bidirectional(L.LSTM(2), backward_layer=backward)


def test_configs_round_trip_with_user_and_stacked_cells():
    rnn = L.RNN([L.LSTMCell(3), AccumulatingCell(2)], return_sequences=True, go_backwards=True)
    config = serialization.serialize(rnn)
    cell = config["config"]["cell"]
    assert cell["class_name"] == "StackedRNNCells"
    assert [c["class_name"] for c in cell["config"]["cells"]] == ["LSTMCell", "AccumulatingCell"]
    assert cell["config"]["cells"][1]["registered_name"] == "test_rnn>AccumulatingCell"
    copy = serialization.deserialize(config)
    assert [type(c) for c in copy.cell.cells] == [L.LSTMCell, AccumulatingCell]
    assert copy.get_config() == rnn.get_config()
    y = copy(sl.Input((5, 4)))
    assert y.shape.as_list() == [None, 5, 2]

    bi = L.Bidirectional(L.RNN(AccumulatingCell(2)), merge_mode="ave")
    bi_copy = serialization.deserialize(serialization.serialize(bi))
    assert bi_copy.get_config() == bi.get_config()
    assert bi_copy.backward_layer.go_backwards and type(bi_copy.forward_layer.cell) is (
        AccumulatingCell
    )

    # a config as Keras 3 writes it (a built-in cell by its public path)
    keras_config = {
        "module": "keras.layers", "class_name": "RNN", "registered_name": None,
        "config": {"name": "rnn", "trainable": True, "dtype": "float32",
                   "return_sequences": False, "return_state": False, "go_backwards": False,
                   "stateful": False, "unroll": False, "zero_output_for_mask": False,
                   "cell": {"module": "keras.layers", "class_name": "GRUCell",
                            "registered_name": None,
                            "config": {"name": "gru_cell", "units": 4, "reset_after": True}}},
    }  # fmt: skip
    loaded = serialization.deserialize(keras_config)
    assert isinstance(loaded.cell, L.GRUCell) and loaded.cell.units == 4

    class Unregistered(AccumulatingCell):
        pass

    unknown = serialization.serialize(L.RNN(Unregistered(2)))
    with pytest.raises(ValueError, match="Could not locate class 'Unregistered'"):
        serialization.deserialize(unknown)
    assert type(serialization.deserialize(unknown, {"Unregistered": Unregistered}).cell) is (
        Unregistered
    )


def test_bad_cells_are_refused():
    with pytest.raises(ValueError, match="should have a `call"):
        L.RNN(object())

    class NoState(L.Layer):
        def call(self, inputs, states):
            return inputs, states

    with pytest.raises(ValueError, match="should have a `state_size`"):
        L.RNN(NoState())
    with pytest.raises(ValueError, match="expects inputs \\[batch, time, features\\]"):
        L.RNN(AccumulatingCell(2))(sl.Input((3,)))

    class WrongSize(AccumulatingCell):
        def call(self, inputs, states):
            output, new_states = super().call(inputs, states)
            return output, [new_states[0], ops.concatenate([new_states[1]] * 2, axis=-1)]

    with pytest.raises(ValueError, match="new state 1 has shape .* expected \\[batch, 2\\]"):
        L.RNN(WrongSize(2))(sl.Input((3, 4)))
