"""SimpleRNN, LSTM, GRU and Bidirectional against NumPy loops of Keras's equations: masks from
Embedding(mask_zero=True), go_backwards, return_sequences, return_state, and one while loop."""

import numpy as np
import pytest

import sluice as sl
from sluice import layers as L
from sluice._keras.layers.tracking import get_mask


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def lstm_step(w, x, state):
    h, c = state
    z = x @ w["kernel"] + h @ w["recurrent_kernel"] + w["bias"]
    i, f, g, o = np.split(z, 4, axis=-1)
    c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
    h = _sigmoid(o) * np.tanh(c)
    return h, (h, c)


def gru_step(w, x, state, reset_after=True):
    (h,) = state
    u = h.shape[-1]
    k, rk, b = w["kernel"], w["recurrent_kernel"], w["bias"]
    if reset_after:
        xz, xr, xh = np.split(x @ k + b[0], 3, axis=-1)
        rz, rr, rh = np.split(h @ rk + b[1], 3, axis=-1)
        z, r = _sigmoid(xz + rz), _sigmoid(xr + rr)
        hh = np.tanh(xh + r * rh)
    else:
        xz, xr, xh = np.split(x @ k + b, 3, axis=-1)
        z = _sigmoid(xz + h @ rk[:, :u])
        r = _sigmoid(xr + h @ rk[:, u : 2 * u])
        hh = np.tanh(xh + (r * h) @ rk[:, 2 * u :])
    h = z * h + (1 - z) * hh
    return h, (h,)


def simple_rnn_step(w, x, state):
    h = np.tanh(x @ w["kernel"] + w["bias"] + state[0] @ w["recurrent_kernel"])
    return h, (h,)


def keras_rnn(step, w, x, mask, n_states, units, go_backwards=False, zero_output_for_mask=False):
    """Keras 3's backend.rnn: go_backwards reverses whole rows (padding included); a masked
    step keeps the states and repeats the previous output (or outputs zeros)."""
    batch, time = x.shape[:2]
    mask = np.ones((batch, time), bool) if mask is None else mask
    if go_backwards:
        x, mask = x[:, ::-1], mask[:, ::-1]
    state = tuple(np.zeros((batch, units)) for _ in range(n_states))
    previous, outputs = np.zeros((batch, units)), np.zeros((batch, time, units))
    for t in range(time):
        out, new = step(w, x[:, t], state)
        keep = mask[:, t : t + 1]
        previous = np.where(keep, out, previous)
        state = tuple(np.where(keep, n, s) for n, s in zip(new, state))
        outputs[:, t] = np.where(keep, previous, 0.0) if zero_output_for_mask else previous
    return outputs, outputs[:, -1], state


CASES = [
    ("lstm", lambda **kw: L.LSTM(3, **kw), "lstm_cell", lstm_step, 2),
    ("gru", lambda **kw: L.GRU(3, **kw), "gru_cell", gru_step, 1),
    ("gru_reset_before", lambda **kw: L.GRU(3, reset_after=False, **kw), "gru_cell",
     lambda w, x, s: gru_step(w, x, s, reset_after=False), 1),
    ("simple_rnn", lambda **kw: L.SimpleRNN(3, **kw), "simple_rnn_cell", simple_rnn_step, 1),
]  # fmt: skip

TOKENS = np.array([[3, 1, 4, 1, 5], [2, 6, 0, 0, 0], [5, 0, 0, 0, 0], [1, 2, 3, 4, 0]])


def _load_random(sess, variables, rng):
    values = {}
    for v in variables:
        value = (0.5 * rng.normal(size=v.shape.as_list())).astype(v.dtype)
        v.load(value, sess)
        values[v] = value
    return values


@pytest.mark.parametrize("go_backwards", [False, True])
@pytest.mark.parametrize("name, make, cell, step, n_states", CASES, ids=[c[0] for c in CASES])
def test_masked_rnn_matches_keras_equations(name, make, cell, step, n_states, go_backwards):
    rng = np.random.default_rng(1)
    tokens = sl.placeholder(sl.int32, [None, None])
    embedding = L.Embedding(7, 2, mask_zero=True, dtype="float64")
    rnn = make(return_sequences=True, return_state=True, go_backwards=go_backwards, dtype="float64")
    embedded = embedding(tokens)
    outputs, *states = rnn(embedded)
    last = make(go_backwards=go_backwards, dtype="float64", name="last")
    last_output = last(embedded)
    assert get_mask(outputs) is get_mask(embedded)  # return_sequences keeps it
    assert get_mask(last_output) is None
    whiles = [op for op in sl.get_default_graph().get_operations() if op.type == "LoopCond"]
    assert len(whiles) == 2  # one while loop per layer call
    with sl.Session() as sess:
        w_emb = _load_random(sess, embedding.weights, rng)[embedding.embeddings]
        w = {
            v.op.name.split("/")[-1]: val for v, val in _load_random(sess, rnn.weights, rng).items()
        }
        for v, src in zip(last.weights, rnn.weights):
            v.load(w[src.op.name.split("/")[-1]], sess)
        got_out, got_states, got_last = sess.run([outputs, states, last_output], {tokens: TOKENS})
    x = w_emb[TOKENS]
    expected_out, expected_last, expected_final = keras_rnn(
        step, w, x, TOKENS != 0, n_states, 3, go_backwards
    )
    np.testing.assert_allclose(got_out, expected_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got_last, expected_last, rtol=1e-10, atol=1e-12)
    for got, expected in zip(got_states, expected_final):
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    assert [v.op.name for v in rnn.weights] == [
        f"{rnn.name}/{cell}/kernel",
        f"{rnn.name}/{cell}/recurrent_kernel",
        f"{rnn.name}/{cell}/bias",
    ]


def test_bidirectional_aligns_backward_outputs_and_zeroes_padding():
    rng = np.random.default_rng(2)
    tokens = sl.placeholder(sl.int32, [None, 5])
    embedding = L.Embedding(7, 2, mask_zero=True, dtype="float64")
    bi = L.Bidirectional(L.LSTM(3, return_sequences=True), merge_mode=None, dtype="float64")
    fw, bw = bi(embedding(tokens))
    with sl.Session() as sess:
        w_emb = _load_random(sess, embedding.weights, rng)[embedding.embeddings]
        values = _load_random(sess, bi.weights, rng)
        got_fw, got_bw = sess.run([fw, bw], {tokens: TOKENS})

    def names(layer):
        return {v.op.name.split("/")[-1]: values[v] for v in layer.weights}

    x, mask = w_emb[TOKENS], TOKENS != 0
    exp_fw, _, _ = keras_rnn(
        lstm_step, names(bi.forward_layer), x, mask, 2, 3, zero_output_for_mask=True
    )
    exp_bw, _, _ = keras_rnn(lstm_step, names(bi.backward_layer), x, mask, 2, 3, True, True)
    exp_bw = exp_bw[:, ::-1]  # the backward outputs, realigned with the inputs
    np.testing.assert_allclose(got_fw, exp_fw, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got_bw, exp_bw, rtol=1e-10, atol=1e-12)
    assert [v.op.name for v in bi.weights][:3] == [
        "bidirectional/forward_lstm/lstm_cell/kernel",
        "bidirectional/forward_lstm/lstm_cell/recurrent_kernel",
        "bidirectional/forward_lstm/lstm_cell/bias",
    ]


def test_lstm_initial_weights_follow_keras():
    """unit_forget_bias: the forget gate's bias starts at 1; the recurrent kernel is orthogonal."""
    sl.set_random_seed(3)
    x = sl.placeholder(sl.float32, [None, 4, 2])
    lstm = L.LSTM(3)
    lstm(x)
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        bias, recurrent = sess.run([lstm.weights[2], lstm.weights[1]])
    np.testing.assert_array_equal(bias, [0] * 3 + [1] * 3 + [0] * 6)
    np.testing.assert_allclose(recurrent @ recurrent.T, np.eye(3), atol=1e-5)


def test_rnn_dropout_draws_one_mask_per_sequence():
    """Keras's recurrent dropout: the same input mask at every step of a sequence, a new one on
    every run; none in inference."""
    x = sl.placeholder(sl.float32, [2, 3, 4])
    rnn = L.SimpleRNN(
        4, dropout=0.5, return_sequences=True, seed=1, activation=None, use_bias=False
    )
    y_train = rnn(x, training=True)
    y_infer = rnn(x)
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        rk = sess.run(rnn.weights[1])
        rnn.weights[1].load(np.zeros_like(rk), sess)  # no recurrence: y_t = dropout(x_t) @ k
        rnn.weights[0].load(np.eye(4, dtype=np.float32), sess)
        ones = np.ones([2, 3, 4], np.float32)
        first, second = sess.run(y_train, {x: ones}), sess.run(y_train, {x: ones})
        np.testing.assert_array_equal(sess.run(y_infer, {x: ones}), ones)
    for out in (first, second):
        assert set(np.unique(out)) <= {0.0, 2.0}
        np.testing.assert_array_equal(out[:, 0], out[:, 1])  # one mask for all steps
    assert not np.array_equal(first, second)
