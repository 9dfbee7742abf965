"""The static-RNN API and cell extras of TF1 (issue 16 item 3): `static_state_saving_rnn`,
`raw_rnn`, `DeviceWrapper`, cells' `get_config`/`from_config`, and the
`tf.nn.rnn_cell` / `tf.contrib.rnn` names."""

import numpy as np
import pytest

import sluice as sl
from sluice import cells

ENGINES = ["interpreted", "compiled"]
# A graph placed on two devices runs partitioned: the interpreted engine, or "auto" (which
# picks it); the compiled engine lowers a step onto one device.
MULTI_DEVICE_ENGINES = ["interpreted", "auto"]
B, T, D, U = 2, 3, 2, 3


def _session(engine):
    return sl.Session(config=sl.SessionConfig(engine=engine))


def _steps(seed, steps=T, dtype=np.float64):
    data = np.random.default_rng(seed).normal(size=[steps, B, D]).astype(dtype)
    return [sl.constant(x) for x in data]


# -- static_state_saving_rnn --------------------------------------------------------------------
class VariableStateSaver:
    """Keeps each named part of the state in a Variable between session runs, as a TF1 input
    pipeline's state saver does for one batch of long sequences cut into segments."""

    def __init__(self, sizes, dtype=sl.float64):
        self.variables = {
            name: sl.Variable(sl.zeros([B, size], dtype=dtype), name=f"saved_{name}")
            for name, size in sizes.items()
        }
        self.saved = {}

    def state(self, name):
        return self.variables[name].read_value()

    def save_state(self, name, value):
        self.saved[name] = self.variables[name].assign(value)
        return self.saved[name]


@pytest.mark.parametrize("engine", ENGINES)
def test_state_saving_rnn_carries_the_state_from_one_segment_to_the_next(engine):
    first, second = _steps(0), _steps(1)
    saver = VariableStateSaver({"c": U, "h": U})
    cell = cells.BasicLSTMCell(U)
    outputs, state = sl.nn.static_state_saving_rnn(cell, first, saver, ("c", "h"), scope="seg")
    assert isinstance(outputs, list) and len(outputs) == T
    assert isinstance(state, cells.LSTMStateTuple) and state.h.shape.as_list() == [B, U]
    assert sorted(saver.saved) == ["c", "h"]
    # The same weights over both segments at once, for reference.
    with sl.variable_scope(sl.get_variable_scope(), reuse=True):
        whole, whole_state = sl.nn.static_rnn(
            cells.BasicLSTMCell(U, reuse=True), first + second, dtype=sl.float64, scope="seg"
        )
    # The second segment: the same graph again, fed by what the first one saved.
    outputs2, state2 = sl.nn.static_state_saving_rnn(cell, second, saver, ("c", "h"), scope="seg")
    with _session(engine) as sess:
        sess.run(sl.global_variables_initializer())
        got1 = sess.run(outputs[-1])  # fetching the last output saves the state
        got2, got_state2 = sess.run((outputs2, state2))
        want, want_state = sess.run((whole, whole_state))
    np.testing.assert_allclose(got1, want[T - 1], rtol=1e-6)
    for t in range(T):
        np.testing.assert_allclose(got2[t], want[T + t], rtol=1e-6)
    np.testing.assert_allclose(got_state2.c, want_state.c, rtol=1e-6)
    np.testing.assert_allclose(got_state2.h, want_state.h, rtol=1e-6)


@pytest.mark.parametrize("engine", ENGINES)
def test_state_saving_rnn_with_one_state_and_sequence_lengths(engine):
    xs = _steps(2)
    saver = VariableStateSaver({"h": U})
    lengths = sl.constant([T, 1], sl.int32)
    outputs, state = sl.nn.static_state_saving_rnn(
        cells.GRUCell(U), xs, saver, "h", sequence_length=lengths
    )
    with sl.variable_scope(sl.get_variable_scope(), reuse=True):
        ref_outputs, ref_state = sl.nn.static_rnn(
            cells.GRUCell(U, reuse=True),
            xs,
            initial_state=sl.zeros([B, U], sl.float64),
            sequence_length=lengths,
        )
    with _session(engine) as sess:
        sess.run(sl.global_variables_initializer())
        got, got_state = sess.run((outputs, state))
        want, want_state = sess.run((ref_outputs, ref_state))
        saved = sess.run(saver.variables["h"])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    np.testing.assert_allclose(got_state, want_state, rtol=1e-6)
    np.testing.assert_allclose(saved, want_state, rtol=1e-6)  # what was saved is the state
    assert np.all(got[2][1] == 0)  # row 1 stopped after one step


def test_state_saving_rnn_orders_the_saves_before_the_results():
    saver = VariableStateSaver({"c": U, "h": U})
    outputs, state = sl.nn.static_state_saving_rnn(
        cells.BasicLSTMCell(U), _steps(3), saver, ("c", "h")
    )
    saves = {saver.saved[n].op for n in ("c", "h")}
    for t in [outputs[-1], state.c, state.h]:
        assert t.op.type == "Identity" and saves <= set(t.op.control_inputs)
    assert not set(outputs[0].op.control_inputs) & saves


@pytest.mark.parametrize(
    "state_name, phrase",
    [
        ("c", "state_name should be the same type as cell.state_size"),
        (("c", "h", "x"), r"#elems\(state_name\) != #elems\(state_size\): 3 vs. 2"),
    ],
)
def test_state_saving_rnn_state_name_errors(state_name, phrase):
    saver = VariableStateSaver({"c": U, "h": U, "x": U})
    with pytest.raises(ValueError, match=phrase):
        sl.nn.static_state_saving_rnn(cells.BasicLSTMCell(U), _steps(0), saver, state_name)
    with pytest.raises(ValueError, match="same type"):
        sl.nn.static_state_saving_rnn(cells.GRUCell(U), _steps(0), saver, ("c",))


# -- DeviceWrapper ---------------------------------------------------------------------------------
def _ops_between(outputs, stop_types=("Placeholder", "Const")):
    seen, todo = set(), [t.op for t in outputs]
    while todo:
        op = todo.pop()
        if op in seen or op.type in stop_types:
            continue
        seen.add(op)
        todo.extend(i.op for i in op.inputs)
    return seen


@pytest.mark.parametrize("engine", MULTI_DEVICE_ENGINES)
def test_device_wrapper_places_the_cell_and_its_weights(engine):
    x = sl.placeholder(sl.float32, [B, D])
    plain = cells.BasicRNNCell(U, name="plain")
    wrapped = cells.DeviceWrapper(cells.BasicRNNCell(U, name="placed"), "/cpu:1")
    h0 = wrapped.zero_state(B, sl.float32)
    out, state = wrapped(x, h0)
    ref, _ = plain(x, plain.zero_state(B, sl.float32))
    assert h0.op.device == "/device:CPU:1"
    assert all(v.device == "/device:CPU:1" for v in wrapped.variables)
    cell_ops = [op for op in _ops_between([out]) if op.type != "Placeholder"]
    assert cell_ops and all(op.device == "/device:CPU:1" for op in cell_ops)
    assert ref.op.device == "" and out is state
    assert wrapped.state_size == U and wrapped.output_size == U
    with _session(engine) as sess:
        sess.run(sl.global_variables_initializer())
        for v, w in zip(plain.variables, wrapped.variables):
            sess.run(v.assign(w))  # the same weights, to compare values
        feed = {x: np.random.default_rng(4).normal(size=[B, D]).astype(np.float32)}
        got, want = sess.run((out, ref), feed)
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("engine", MULTI_DEVICE_ENGINES)
def test_device_wrapped_layers_of_a_dynamic_rnn(engine):
    x = sl.constant(np.random.default_rng(5).normal(size=[B, 2, D]))
    stack = cells.MultiRNNCell(
        [
            cells.DeviceWrapper(cells.GRUCell(U), "/cpu:0"),
            cells.DeviceWrapper(cells.GRUCell(U), "/cpu:1"),
        ]
    )
    outputs, _ = sl.nn.dynamic_rnn(stack, x, dtype=sl.float64)
    devices = [v.device for v in stack.variables]
    assert devices == ["/device:CPU:0"] * 2 * 2 + ["/device:CPU:1"] * 2 * 2
    with sl.variable_scope(sl.get_variable_scope(), reuse=True):
        same = cells.MultiRNNCell([cells.GRUCell(U, reuse=True), cells.GRUCell(U, reuse=True)])
        ref, _ = sl.nn.dynamic_rnn(same, x, dtype=sl.float64)
    assert same.variables == stack.variables
    with _session(engine) as sess:
        sess.run(sl.global_variables_initializer())
        got, want = sess.run((outputs, ref))
    np.testing.assert_allclose(got, want, rtol=1e-6)


# -- get_config / from_config --------------------------------------------------------------------
def test_cell_configs_have_tf1s_keys_and_values():
    assert cells.BasicRNNCell(4, activation=sl.nn.relu, name="r").get_config() == {
        "name": "r",
        "trainable": True,
        "dtype": None,
        "num_units": 4,
        "activation": "relu",
        "reuse": None,
    }
    assert cells.BasicLSTMCell(5, forget_bias=0.5, dtype=sl.float64).get_config() == {
        "name": "basic_lstm_cell",
        "trainable": True,
        "dtype": "float64",
        "num_units": 5,
        "forget_bias": 0.5,
        "state_is_tuple": True,
        "activation": "tanh",
        "reuse": None,
    }
    lstm = cells.LSTMCell(
        6,
        use_peepholes=True,
        cell_clip=3.0,
        num_proj=2,
        proj_clip=1.0,
        initializer=sl.random_uniform_initializer(-0.1, 0.1, seed=3),
        state_is_tuple=False,
        reuse=sl.AUTO_REUSE,
        name="lstm",
    )
    config = lstm.get_config()
    assert {
        k: config[k]
        for k in (
            "num_units",
            "use_peepholes",
            "cell_clip",
            "num_proj",
            "proj_clip",
            "num_unit_shards",
            "num_proj_shards",
            "forget_bias",
            "state_is_tuple",
            "activation",
            "reuse",
        )
    } == {
        "num_units": 6,
        "use_peepholes": True,
        "cell_clip": 3.0,
        "num_proj": 2,
        "proj_clip": 1.0,
        "num_unit_shards": None,
        "num_proj_shards": None,
        "forget_bias": 1.0,
        "state_is_tuple": False,
        "activation": "tanh",
        "reuse": sl.AUTO_REUSE,
    }
    assert config["initializer"] == {
        "class_name": "random_uniform_initializer",
        "config": {"minval": -0.1, "maxval": 0.1, "seed": 3, "dtype": "float32"},
    }
    gru = cells.GRUCell(3, kernel_initializer=sl.constant_initializer(0.5)).get_config()
    assert gru["kernel_initializer"]["class_name"] == "constant_initializer"
    assert gru["bias_initializer"] is None and gru["activation"] == "tanh"


@pytest.mark.parametrize(
    "make",
    [
        lambda: cells.BasicRNNCell(4, activation="sigmoid"),
        lambda: cells.BasicLSTMCell(5, forget_bias=0.0, state_is_tuple=False),
        lambda: cells.LSTMCell(
            6,
            use_peepholes=True,
            num_proj=3,
            initializer=sl.truncated_normal_initializer(stddev=0.2),
        ),
        lambda: cells.GRUCell(3, activation=sl.nn.relu, bias_initializer=sl.ones_initializer()),
        lambda: cells.MultiRNNCell([cells.GRUCell(2), cells.BasicLSTMCell(3)]),
        lambda: cells.DropoutWrapper(cells.GRUCell(2), input_keep_prob=0.5, seed=7),
        lambda: cells.DropoutWrapper(
            cells.GRUCell(2), state_keep_prob=0.9, variational_recurrent=True, dtype=sl.float32
        ),
        lambda: cells.ResidualWrapper(cells.BasicRNNCell(2)),
        lambda: cells.DeviceWrapper(cells.LSTMCell(2), "/cpu:0"),
    ],
    ids=[
        "basic_rnn",
        "basic_lstm",
        "lstm",
        "gru",
        "multi",
        "dropout",
        "variational",
        "residual",
        "device",
    ],
)
def test_from_config_rebuilds_an_equal_cell(make):
    cell = make()
    config = cell.get_config()
    again = type(cell).from_config(config)
    assert type(again) is type(cell) and again.get_config() == config
    assert again.state_size == cell.state_size and again.output_size == cell.output_size


def test_wrappers_and_stacks_nest_their_cells_configs():
    stack = cells.MultiRNNCell(
        [
            cells.DropoutWrapper(cells.GRUCell(2), output_keep_prob=0.5),
            cells.BasicLSTMCell(3, name="top"),
        ]
    )
    config = stack.get_config()
    assert config["state_is_tuple"] is True
    bottom, top = config["cells"]
    assert bottom["class_name"] == "DropoutWrapper"
    assert bottom["config"]["output_keep_prob"] == 0.5
    assert bottom["config"]["cell"] == {
        "class_name": "GRUCell",
        "config": cells.GRUCell(2, name="gru_cell").get_config(),
    }
    assert top == {
        "class_name": "BasicLSTMCell",
        "config": cells.BasicLSTMCell(3, name="top").get_config(),
    }
    device = cells.DeviceWrapper(cells.GRUCell(2), "/gpu:1").get_config()
    assert device["device"] == "/gpu:1" and device["cell"]["class_name"] == "GRUCell"
    residual = cells.ResidualWrapper(cells.GRUCell(2), residual_fn=lambda i, o: o).get_config()
    assert residual["residual_fn_type"] == "lambda"  # the function's code, as TF1 writes it
    with pytest.raises(ValueError, match="Unknown cell class 'NoSuchCell'"):
        cells.MultiRNNCell.from_config({"cells": [{"class_name": "NoSuchCell", "config": {}}]})
    with pytest.raises(ValueError, match="Unknown activation function: 'swishy'"):
        cells.GRUCell(2, activation="swishy")


@pytest.mark.parametrize("engine", ENGINES)
def test_a_cell_from_config_with_reuse_computes_the_same_values(engine):
    x = sl.constant(np.random.default_rng(6).normal(size=[B, D]).astype(np.float32))
    cell = cells.LSTMCell(U, use_peepholes=True, num_proj=2, name="lstm")
    state = cell.zero_state(B, sl.float32)
    outputs, _ = cell(x, state)
    clone = cells.LSTMCell.from_config({**cell.get_config(), "reuse": True})
    again, _ = clone(x, state)
    assert clone.variables == cell.variables and len(cell.variables) == 6
    with _session(engine) as sess:
        sess.run(sl.global_variables_initializer())
        got, want = sess.run((again, outputs))
    np.testing.assert_allclose(got, want, rtol=1e-6)


# -- shards and names ------------------------------------------------------------------------------
TF1_RNN_CELL_NAMES = [
    "BasicLSTMCell",
    "BasicRNNCell",
    "DeviceWrapper",
    "DropoutWrapper",
    "GRUCell",
    "LSTMCell",
    "LSTMStateTuple",
    "MultiRNNCell",
    "RNNCell",
    "ResidualWrapper",
]


@pytest.mark.parametrize("name", TF1_RNN_CELL_NAMES)
def test_tf1_rnn_cell_names_exist_in_nn_and_contrib(name):
    assert getattr(sl.nn.rnn_cell, name) is getattr(sl.contrib.rnn, name)
    assert getattr(sl.nn.rnn_cell, name) is getattr(cells, name)


def test_rnn_functions_in_nn_and_contrib():
    for name in [
        "static_rnn",
        "static_bidirectional_rnn",
        "static_state_saving_rnn",
        "dynamic_rnn",
        "bidirectional_dynamic_rnn",
    ]:
        assert getattr(sl.nn, name) is getattr(sl.contrib.rnn, name)


def test_static_bidirectional_rnn_returns_tf1s_structure():
    xs = _steps(8)
    outputs, state_fw, state_bw = sl.nn.static_bidirectional_rnn(
        cells.BasicLSTMCell(U), cells.GRUCell(2), xs, dtype=sl.float64
    )
    assert isinstance(outputs, list) and len(outputs) == T
    assert all(o.shape.as_list() == [B, U + 2] for o in outputs)
    assert isinstance(state_fw, cells.LSTMStateTuple) and state_bw.shape.as_list() == [B, 2]
    assert sorted(v.op.name for v in sl.trainable_variables()) == [
        "bidirectional_rnn/bw/gru_cell/candidate/bias",
        "bidirectional_rnn/bw/gru_cell/candidate/kernel",
        "bidirectional_rnn/bw/gru_cell/gates/bias",
        "bidirectional_rnn/bw/gru_cell/gates/kernel",
        "bidirectional_rnn/fw/basic_lstm_cell/bias",
        "bidirectional_rnn/fw/basic_lstm_cell/kernel",
    ]


# -- raw_rnn -------------------------------------------------------------------------------------
def _raw_rnn_against_dynamic_rnn(lengths=(3, 1)):
    """TF1's raw_rnn test: a loop_fn that reads a TensorArray of inputs reproduces
    dynamic_rnn on the same cell and variables."""
    inputs = sl.placeholder(sl.float32, (T, B, D))
    seq = sl.placeholder(sl.int32, (B,))
    inputs_ta = sl.TensorArray(sl.float32, size=sl.shape(inputs)[0]).unstack(inputs)
    cell = cells.LSTMCell(U)

    def loop_fn(time, cell_output, cell_state, loop_state):
        next_state = cell.zero_state(B, sl.float32) if cell_output is None else cell_state
        elements_finished = time >= seq
        finished = sl.reduce_all(elements_finished)
        next_input = sl.cond(finished, lambda: sl.zeros([B, D]), lambda: inputs_ta.read(time))
        return elements_finished, next_input, next_state, cell_output, None

    scope = sl.get_variable_scope()
    outputs_ta, final_state, final_loop_state = sl.nn.raw_rnn(cell, loop_fn, scope=scope)
    scope.reuse_variables()
    dyn_outputs, dyn_state = sl.nn.dynamic_rnn(
        cell, inputs, time_major=True, dtype=sl.float32, sequence_length=seq, scope=scope
    )
    feed = {
        inputs: np.random.default_rng(9).normal(size=[T, B, D]).astype(np.float32),
        seq: list(lengths),
    }
    return outputs_ta, final_state, final_loop_state, dyn_outputs, dyn_state, inputs, feed


def test_raw_rnn_equals_dynamic_rnn():
    outputs_ta, state, loop_state, dyn_outputs, dyn_state, _, feed = _raw_rnn_against_dynamic_rnn()
    assert isinstance(outputs_ta, sl.TensorArray) and loop_state is None
    assert isinstance(state, cells.LSTMStateTuple)
    assert [v.op.name for v in sl.trainable_variables()] == ["lstm_cell/kernel", "lstm_cell/bias"]
    outputs = outputs_ta.stack()
    # The compiled engine cannot write a dynamic_size TensorArray at a traced index: the
    # interpreted engine runs raw_rnn ("auto" falls back to it).
    with _session("interpreted") as sess:
        sess.run(sl.global_variables_initializer())
        got, got_state = sess.run((outputs, state), feed)
        want, want_state = sess.run((dyn_outputs, dyn_state), feed)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got_state.c, want_state.c, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got_state.h, want_state.h, rtol=1e-6, atol=1e-7)
    assert np.all(got[1:, 1] == 0)  # row 1 finished after one step: zeros emitted


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["interpreted", "auto"])
def test_raw_rnn_gradients_equal_dynamic_rnns(engine):
    outputs_ta, state, _, dyn_outputs, dyn_state, inputs, feed = _raw_rnn_against_dynamic_rnn()
    wrt = [inputs] + sl.trainable_variables()
    grads = sl.gradients([outputs_ta.stack(), state.c, state.h], wrt)
    dyn_grads = sl.gradients([dyn_outputs, dyn_state.c, dyn_state.h], wrt)
    with _session(engine) as sess:
        sess.run(sl.global_variables_initializer())
        got, want = sess.run(grads, feed), sess.run(dyn_grads, feed)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_raw_rnn_loop_state_emit_structure_and_errors():
    cell = cells.GRUCell(U)
    x = sl.zeros([B, D])

    def loop_fn(time, cell_output, cell_state, loop_state):
        if cell_output is None:  # time 0: the state, and the per-row shapes of what is emitted
            emit = (sl.zeros([U]), sl.zeros([2, 2], sl.float64))
            return sl.fill([B], False), x, cell.zero_state(B, sl.float32), emit, sl.constant(0)
        emit = (cell_output, sl.zeros([B, 2, 2], sl.float64))
        return sl.fill([B], time >= 2), x, cell_state, emit, loop_state + 1

    emit_ta, state, loop_state = sl.nn.raw_rnn(cell, loop_fn)
    assert isinstance(emit_ta, tuple) and len(emit_ta) == 2
    assert emit_ta[0].element_shape.as_list() == [B, U]
    assert emit_ta[1].element_shape.as_list() == [B, 2, 2] and emit_ta[1].dtype == sl.float64
    assert state.shape.as_list() == [B, U] and loop_state.dtype == sl.int32
    with pytest.raises(TypeError, match="loop_fn must be a callable"):
        sl.nn.raw_rnn(cell, "loop")
    with pytest.raises(TypeError, match="cell"):
        sl.nn.raw_rnn(lambda x, s: (x, s), loop_fn)

    def bad_state(time, cell_output, cell_state, loop_state):
        return sl.fill([B], True), x, (cell.zero_state(B, sl.float32),) * 2, None, None

    with pytest.raises(ValueError, match="structure of cell.state_size"):
        sl.nn.raw_rnn(cells.GRUCell(U), bad_state)


# -- a TensorArray in a dynamic_rnn cell's state ----------------------------------------------
class TensorArrayStateRNNCell(cells.RNNCell):
    """TF1.15 rnn_test's cell whose state is (a step count, a TensorArray of the inputs)."""

    def __init__(self, size=0, dynamic_size=True):
        super().__init__()
        self._size, self._dynamic_size = size, dynamic_size

    @property
    def output_size(self):
        return 1

    @property
    def state_size(self):
        return (sl.TensorShape([]), ())

    def zero_state(self, batch_size, dtype):
        array = sl.TensorArray(dtype=dtype, size=self._size, dynamic_size=self._dynamic_size)
        return (sl.zeros([], dtype=sl.int32), array)

    def call(self, input_, state, scope=None):
        new_array = state[1].write(state[0], input_)
        return (input_, (state[0] + 1, new_array))


@pytest.mark.parametrize(
    "engine, size, dynamic_size",
    [
        ("interpreted", 0, True),
        # a write that grows an array needs its index on the host: "auto" runs such a loop
        # interpreted (tests/framework/test_tensor_array.py), so the compiled engine gets an array
        # of fixed size
        ("auto", 0, True),
        ("compiled", 4, False),
    ],
)
def test_tensor_array_state_is_accepted(engine, size, dynamic_size):
    # TF1.15 rnn_test testTensorArrayStateIsAccepted.
    cell = TensorArrayStateRNNCell(size, dynamic_size)
    inputs = sl.placeholder(sl.float32, shape=(1, 4, 1))
    outputs, state = sl.nn.dynamic_rnn(cell, inputs, dtype=sl.float32, sequence_length=[4])
    assert isinstance(state[1], sl.TensorArray)
    state = (state[0], state[1].stack())
    with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
        outputs, state = sess.run([outputs, state], feed_dict={inputs: [[[1], [2], [3], [4]]]})
    np.testing.assert_array_equal([[[1], [2], [3], [4]]], outputs)
    np.testing.assert_array_equal(4, state[0])
    np.testing.assert_array_equal([[[1]], [[2]], [[3]], [[4]]], state[1])
