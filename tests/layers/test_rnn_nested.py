"""RNN cells with nested inputs, outputs and states: the Keras RNN guide's `NestedCell`
("RNNs with list/dict inputs, or nested inputs": a tuple of sequences, state_size and
output_size lists of TensorShapes) against a NumPy loop, with masks, initial states,
return_state, go_backwards, unroll, stateful calls, training and saving; and a cell whose
state_size is a list of ints with its own get_initial_state, as Keras 3 runs it."""

import numpy as np
import pytest

import sluice as sl
import sluice as tf  # the guide's spelling: tf.TensorShape, tf.matmul, tf.einsum
from sluice import layers as L

RNG = np.random.default_rng(5)
U1, U2, U3 = 3, 2, 4  # the units of the two states: [batch, U1] and [batch, U2, U3]
I1, I2, I3 = 5, 3, 2  # the two inputs: [batch, time, I1] and [batch, time, I2, I3]


@sl.saving.register_keras_serializable(package="test_rnn_nested")
class NestedCell(L.Layer):
    """The guide's cell: s1 += x1 @ kernel_1; s23 += einsum("bij,ijkl->bkl", x2, kernel_2_3);
    the outputs are the two increments."""

    def __init__(self, unit_1, unit_2, unit_3, **kwargs):
        self.unit_1, self.unit_2, self.unit_3 = unit_1, unit_2, unit_3
        self.state_size = [tf.TensorShape([unit_1]), tf.TensorShape([unit_2, unit_3])]
        self.output_size = [tf.TensorShape([unit_1]), tf.TensorShape([unit_2, unit_3])]
        super().__init__(**kwargs)

    def build(self, input_shapes):
        # [(batch, i1), (batch, i2, i3)]: one step of each input
        i1, (i2, i3) = input_shapes[0][1], input_shapes[1][1:]
        self.kernel_1 = self.add_weight(
            shape=(i1, self.unit_1), initializer="uniform", name="kernel_1"
        )
        self.kernel_2_3 = self.add_weight(
            shape=(i2, i3, self.unit_2, self.unit_3), initializer="uniform", name="kernel_2_3"
        )

    def call(self, inputs, states):
        input_1, input_2 = inputs
        s1, s2 = states
        output_1 = tf.matmul(input_1, self.kernel_1)
        output_2_3 = tf.einsum("bij,ijkl->bkl", input_2, self.kernel_2_3)
        return (output_1, output_2_3), (s1 + output_1, s2 + output_2_3)

    def get_config(self):
        return {**super().get_config(), "unit_1": self.unit_1, "unit_2": self.unit_2,
                "unit_3": self.unit_3}  # fmt: skip


def numpy_nested(k1, k23, x1, x2, states=None, mask=None, go_backwards=False):
    """The guide's cell in Keras's loop: (outputs per step, final states); a masked step
    repeats the previous outputs and keeps the states."""
    batch, time = x1.shape[:2]
    s1, s23 = states if states is not None else (np.zeros((batch, U1)), np.zeros((batch, U2, U3)))
    mask = np.ones((batch, time), bool) if mask is None else mask
    order = range(time)[::-1] if go_backwards else range(time)
    previous = (np.zeros((batch, U1)), np.zeros((batch, U2, U3)))
    outputs = []
    for t in order:
        o1, o23 = x1[:, t] @ k1, np.einsum("bij,ijkl->bkl", x2[:, t], k23)
        keep = mask[:, t]
        s1 = np.where(keep[:, None], s1 + o1, s1)
        s23 = np.where(keep[:, None, None], s23 + o23, s23)
        previous = (np.where(keep[:, None], o1, previous[0]),
                    np.where(keep[:, None, None], o23, previous[1]))  # fmt: skip
        outputs.append(previous)
    return [np.stack(o, 1) for o in zip(*outputs)], [s1, s23]


def run_nested(rnn_kwargs, batch=2, time=3, call=None):
    """RNN(NestedCell) in float64 on random inputs, random weights; (results, x1, x2, k1, k23).
    `call(rnn, inputs) -> (results, more feeds)` calls the layer (default: on the inputs)."""
    x1 = RNG.normal(size=(batch, time, I1))
    x2 = RNG.normal(size=(batch, time, I2, I3))
    with sl.Graph().as_default():
        t1 = sl.placeholder(sl.float64, [None, time, I1])
        t2 = sl.placeholder(sl.float64, [None, time, I2, I3])
        rnn = L.RNN(NestedCell(U1, U2, U3, dtype="float64"), dtype="float64", **rnn_kwargs)
        result, feeds = call(rnn, (t1, t2)) if call else (rnn((t1, t2)), {})
        k1, k23 = RNG.normal(size=(I1, U1)), RNG.normal(size=(I2, I3, U2, U3))
        with sl.Session() as sess:
            sess.run(sl.global_variables_initializer())
            for v, value in zip(rnn.weights, (k1, k23)):
                v.load(value, sess)
            got = sess.run(result, {t1: x1, t2: x2, **feeds})
    return got, x1, x2, k1, k23


def close(a, b):
    np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("go_backwards, unroll", [(False, False), (True, False), (False, True)])
def test_nested_cell_matches_numpy(go_backwards, unroll):
    kwargs = dict(return_sequences=True, return_state=True, go_backwards=go_backwards,
                  unroll=unroll)  # fmt: skip
    (outputs, s1, s23), x1, x2, k1, k23 = run_nested(kwargs)
    assert isinstance(outputs, tuple)  # the structure the cell returned
    expected_outputs, (e1, e23) = numpy_nested(k1, k23, x1, x2, go_backwards=go_backwards)
    close(outputs[0], expected_outputs[0])
    close(outputs[1], expected_outputs[1])
    close(s1, e1)
    close(s23, e23)


def test_one_step_and_last_output():
    (o1, o23), x1, x2, k1, k23 = run_nested({}, time=1)
    close(o1, x1[:, 0] @ k1)
    close(o23, np.einsum("bij,ijkl->bkl", x2[:, 0], k23))


def test_static_shapes_and_compute_output_shape():
    with sl.Graph().as_default():
        inputs = (L.Input((None, I1)), L.Input((None, I2, I3)))
        rnn = L.RNN(NestedCell(U1, U2, U3), return_sequences=True, return_state=True)
        outputs, s1, s23 = rnn(inputs)
        got = [tuple(t.shape.as_list()) for t in (*outputs, s1, s23)]
        assert got == [(None, None, U1), (None, None, U2, U3), (None, U1), (None, U2, U3)]
        shapes = rnn.compute_output_shape(((None, 7, I1), (None, 7, I2, I3)))
        assert shapes == [[(None, 7, U1), (None, 7, U2, U3)], (None, U1), (None, U2, U3)]
        assert rnn.state_size == [tf.TensorShape([U1]), tf.TensorShape([U2, U3])]
        initial = rnn.get_initial_state(4)
        assert [tuple(s.shape.as_list()) for s in initial] == [(4, U1), (4, U2, U3)]


def test_initial_state_given_as_a_list():
    init = [RNG.normal(size=(2, U1)), RNG.normal(size=(2, U2, U3))]

    def call(rnn, inputs):
        given = [sl.placeholder(sl.float64, [None, U1]), sl.placeholder(sl.float64, [None, U2, U3])]
        return rnn(inputs, initial_state=given), dict(zip(given, init))

    (outputs, s1, s23), x1, x2, k1, k23 = run_nested(
        dict(return_sequences=True, return_state=True), call=call
    )
    expected_outputs, (e1, e23) = numpy_nested(k1, k23, x1, x2, states=init)
    close(outputs[1], expected_outputs[1])
    close(s1, e1)
    close(s23, e23)


def test_a_mask_keeps_nested_states_and_repeats_outputs():
    mask = np.array([[True, False, True, True], [False, True, True, False]])

    def call(rnn, inputs):
        given = sl.placeholder(sl.bool, [None, 4])
        return rnn(inputs, mask=given), {given: mask}

    (outputs, s1, s23), x1, x2, k1, k23 = run_nested(
        dict(return_sequences=True, return_state=True), time=4, call=call
    )
    expected_outputs, (e1, e23) = numpy_nested(k1, k23, x1, x2, mask=mask)
    close(outputs[0], expected_outputs[0])
    close(outputs[1], expected_outputs[1])
    close(s1, e1)
    close(s23, e23)


def test_wrong_state_shapes_are_refused_naming_the_layer():
    with sl.Graph().as_default():
        x1, x2 = sl.placeholder(sl.float32, [2, 3, I1]), sl.placeholder(sl.float32, [2, 3, I2, I3])
        inputs = (x1, x2)
        rnn = L.RNN(NestedCell(U1, U2, U3), name="nested")
        with pytest.raises(ValueError, match=r"'nested'.*shape \(2, 2, 5\).*\[batch, 2, 4\]"):
            rnn(inputs, initial_state=[sl.zeros([2, U1]), sl.zeros([2, 2, 5])])
        with pytest.raises(ValueError, match="has 2 states.*initial_state has 1"):
            rnn(inputs, initial_state=[sl.zeros([2, U1])])
    with pytest.raises(ValueError, match="ints or fully known TensorShapes"):
        L.RNN(type("Bad", (L.Layer,), {"state_size": [tf.TensorShape([None, 2])],
                                        "call": lambda self, x, s: (x, s)})())  # fmt: skip


def nested_model(stateful=False):
    batch = 4 if stateful else None
    x1 = L.Input((3, I1), batch_size=batch)
    x2 = L.Input((3, I2, I3), batch_size=batch)
    o1, o23 = L.RNN(NestedCell(U1, U2, U3), stateful=stateful, name="rnn")((x1, x2))
    return sl.Model([x1, x2], L.Concatenate()([o1, L.Flatten()(o23)]))


def guide_data(n=8):
    return [RNG.random((n, 3, I1)), RNG.random((n, 3, I2, I3))], RNG.random((n, U1 + U2 * U3))


@pytest.mark.slow
def test_nested_cell_trains_in_a_model():
    model = nested_model()
    model.compile(optimizer=sl.optimizers.Adam(0.05), loss="mse")
    x, y = guide_data()
    losses = model.fit(x, y, batch_size=4, epochs=3, verbose=0).history["loss"]
    assert losses[-1] < losses[0]


def test_nested_cell_model_saves_and_loads(tmp_path):
    model = nested_model()
    x, _ = guide_data()
    path = str(tmp_path / "nested.keras")
    model.save(path)
    loaded = sl.models.load_model(path)
    (rnn,) = [layer for layer in loaded.layers if isinstance(layer, L.RNN)]
    assert rnn.cell.state_size == [tf.TensorShape([U1]), tf.TensorShape([U2, U3])]
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0), 1e-6)


def test_stateful_nested_states_carry_over_and_reset():
    model = nested_model(stateful=True)
    rnn = model.get_layer("rnn")
    assert [tuple(v.shape.as_list()) for v in rnn.states] == [(4, U1), (4, U2, U3)]
    (x1, x2), _ = guide_data(4)
    k1, k23 = rnn.get_weights()
    states = None
    for _ in range(2):  # each call goes on from the states the last one left
        model.predict([x1, x2], batch_size=4, verbose=0)
        _, states = numpy_nested(k1, k23, x1, x2, states=states)
        for got, expected in zip(rnn.states, states):
            np.testing.assert_allclose(sl.ops.convert_to_numpy(got), expected, 1e-5, 1e-6)
    rnn.reset_states()
    assert not any(np.any(sl.ops.convert_to_numpy(v)) for v in rnn.states)


class TwoStateCell(L.Layer):
    """state_size a list of ints, output_size an int, and a get_initial_state of ones:
    h = tanh(x @ kernel + h); c = c + h; output = h + c."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units, self.state_size, self.output_size = units, [units, 2 * units], units

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], self.units), name="kernel")

    def get_initial_state(self, batch_size=None):
        return [sl.ones([batch_size, self.units], self.dtype),
                sl.zeros([batch_size, 2 * self.units], self.dtype)]  # fmt: skip

    def call(self, inputs, states):
        h, c = states
        h = sl.tanh(sl.matmul(inputs, self.kernel) + h)
        c = c + sl.concat([h, h], 1)
        return h + c[:, : self.units], [h, c]


def test_a_cell_with_a_list_of_int_state_sizes_and_its_own_initial_state():
    x = RNG.normal(size=(2, 4, 3))
    with sl.Graph().as_default():
        t = sl.placeholder(sl.float64, [None, 4, 3])
        rnn = L.RNN(TwoStateCell(2, dtype="float64"), return_state=True, dtype="float64")
        result = rnn(t)
        assert [tuple(r.shape.as_list()) for r in result] == [(None, 2), (None, 2), (None, 4)]
        assert rnn.compute_output_shape((None, 4, 3)) == [(None, 2), (None, 2), (None, 4)]
        kernel = RNG.normal(size=(3, 2))
        with sl.Session() as sess:
            rnn.weights[0].load(kernel, sess)
            output, h, c = sess.run(result, {t: x})
    eh, ec = np.ones((2, 2)), np.zeros((2, 4))  # the cell's initial state, not zeros
    for step in range(4):
        eh = np.tanh(x[:, step] @ kernel + eh)
        ec = ec + np.concatenate([eh, eh], 1)
    close(output, eh + ec[:, :2])
    close(h, eh)
    close(c, ec)


class PenCell(L.Layer):
    """The guide's handwriting inputs as a dict: {"location": [x, y], "pressure": [force]};
    h = tanh(location @ kernel + pressure * h)."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units, self.state_size = units, units

    def build(self, input_shape):
        assert input_shape == {"location": (None, 2), "pressure": (None, 1)}
        self.kernel = self.add_weight(shape=(2, self.units), name="kernel")

    def call(self, inputs, states):
        h = sl.tanh(sl.matmul(inputs["location"], self.kernel) + inputs["pressure"] * states[0])
        return h, [h]


def test_dict_inputs():
    location, pressure = RNG.normal(size=(2, 3, 2)), RNG.normal(size=(2, 3, 1))
    with sl.Graph().as_default():
        inputs = {"location": sl.placeholder(sl.float64, [None, 3, 2]),
                  "pressure": sl.placeholder(sl.float64, [None, 3, 1])}  # fmt: skip
        rnn = L.RNN(PenCell(4, dtype="float64"), return_sequences=True, dtype="float64")
        y = rnn(inputs)
        kernel = RNG.normal(size=(2, 4))
        with sl.Session() as sess:
            rnn.weights[0].load(kernel, sess)
            got = sess.run(y, {inputs["location"]: location, inputs["pressure"]: pressure})
    h = np.zeros((2, 4))
    for t in range(3):
        h = np.tanh(location[:, t] @ kernel + pressure[:, t] * h)
        close(got[:, t], h)
