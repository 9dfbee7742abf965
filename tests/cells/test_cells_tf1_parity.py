"""TF1 cells as TF 1.15's rnn_cell_test.py and rnn_test.py check them: LSTMCell's
`num_unit_shards` and `num_proj_shards` (the kernels as partitioned variables, the values of the
unsharded cell), the cells' `_checkpoint_dependencies`, the wrappers' functions in their
configs, raw_rnn's emit of partly unknown shape, Keras cells in TF1's dynamic_rnn and
static_rnn, and safe_embedding_lookup_sparse's dtype check; values in both engines."""

import numpy as np
import pytest

import sluice as sl
from sluice import cells

# the interpreted engine's runs take seconds on these graphs: in the slow set
ENGINES = [pytest.param("interpreted", marks=pytest.mark.slow), "compiled"]
B, D, U, P, T = 2, 5, 3, 4, 3


def _session(engine):
    return sl.Session(config=sl.SessionConfig(engine=engine))


def _lstm(**kwargs):
    init = sl.random_uniform_initializer(-0.5, 0.5, seed=7)
    return cells.LSTMCell(
        U, num_proj=P, use_peepholes=True, initializer=init, state_is_tuple=False, **kwargs
    )


def test_sharded_lstm_kernels_are_partitioned_variables_named_as_tf1():
    cell = _lstm(num_unit_shards=2, num_proj_shards=3)
    x = sl.zeros([B, D])
    cell(x, cell.zero_state(B, sl.float32))
    got = [(v.op.name, v.shape.as_list()) for v in cell.variables]
    assert got == [
        ("lstm_cell/kernel/part_0", [5, 4 * U]),  # D + P = 9 rows: 5 and 4
        ("lstm_cell/kernel/part_1", [4, 4 * U]),
        ("lstm_cell/bias", [4 * U]),
        ("lstm_cell/w_f_diag", [U]),
        ("lstm_cell/w_i_diag", [U]),
        ("lstm_cell/w_o_diag", [U]),
        ("lstm_cell/projection/kernel/part_0", [1, P]),
        ("lstm_cell/projection/kernel/part_1", [1, P]),
        ("lstm_cell/projection/kernel/part_2", [1, P]),
    ]
    assert [v.name for v in sl.trainable_variables()] == [v.name for v in cell.variables]
    assert isinstance(cell._kernel, sl.PartitionedVariable)
    assert cell._kernel.get_shape().as_list() == [D + P, 4 * U]


def test_one_shard_is_one_part_as_in_tf1():
    cell = cells.LSTMCell(U, num_unit_shards=1)
    cell(sl.zeros([B, D]), cell.zero_state(B, sl.float32))
    assert [v.op.name for v in cell.variables] == ["lstm_cell/kernel/part_0", "lstm_cell/bias"]


@pytest.mark.parametrize("engine", ENGINES)
def test_sharded_lstm_computes_the_unsharded_cells_values_and_gradients(engine):
    inputs = [sl.placeholder(sl.float32, [None, D]) for _ in range(T)]
    sharded, whole = _lstm(num_unit_shards=2, num_proj_shards=3), _lstm()
    with sl.variable_scope("shard"):
        out_s, state_s = sl.nn.static_rnn(sharded, inputs, dtype=sl.float32)
    with sl.variable_scope("whole"):
        out_w, state_w = sl.nn.static_rnn(whole, inputs, dtype=sl.float32)
    loss_s = sl.reduce_sum(sl.square(out_s[-1])) + sl.reduce_sum(state_s)
    loss_w = sl.reduce_sum(sl.square(out_w[-1])) + sl.reduce_sum(state_w)
    grads_s = sl.gradients(loss_s, sharded.variables)
    grads_w = sl.gradients(loss_w, whole.variables)
    rng = np.random.default_rng(0)
    feed = {x: rng.normal(size=[B, D]).astype(np.float32) for x in inputs}
    with _session(engine) as sess:
        sess.run(sl.global_variables_initializer())
        parts = sess.run(sharded.variables)
        # the unsharded cell takes the sharded one's weights: the parts, concatenated
        k0, k1, bias, wf, wi, wo, p0, p1, p2 = parts
        for var, value in zip(
            whole.variables,
            [np.concatenate([k0, k1]), bias, wf, wi, wo, np.concatenate([p0, p1, p2])],
        ):
            var.load(value, sess)
        got, want = sess.run([out_s + [state_s], out_w + [state_w]], feed)
        g_s, g_w = sess.run([grads_s, grads_w], feed)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    assert np.abs(want[-1]).max() > 1e-2  # not a trivial comparison
    # each part's gradient is its rows of the whole kernel's gradient
    gk0, gk1, gb, gwf, gwi, gwo, gp0, gp1, gp2 = g_s
    gk, gb_w, gwf_w, gwi_w, gwo_w, gp = g_w
    np.testing.assert_allclose(np.concatenate([gk0, gk1]), gk, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.concatenate([gp0, gp1, gp2]), gp, rtol=1e-6, atol=1e-6)
    for a, b in [(gb, gb_w), (gwf, gwf_w), (gwi, gwi_w), (gwo, gwo_w)]:
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_more_shards_than_rows_give_one_row_each_as_in_tf1():
    # TF1's fixed_size_partitioner caps the shards at the axis' size
    cell = cells.LSTMCell(U, num_proj=2, num_proj_shards=4)
    cell(sl.zeros([B, D]), cell.zero_state(B, sl.float32))
    parts = [v for v in cell.variables if "projection" in v.op.name]
    assert [v.shape.as_list() for v in parts] == [[1, 2]] * 3


# -- _checkpoint_dependencies ---------------------------------------------------------------------
def test_checkpoint_dependencies_of_cells_and_wrappers():
    inner = cells.BasicRNNCell(U)
    for wrapper in (
        cells.DropoutWrapper(inner, input_keep_prob=0.5),
        cells.ResidualWrapper(inner),
        cells.DeviceWrapper(inner, "/cpu:0"),
    ):
        ((name, dep),) = wrapper._checkpoint_dependencies
        assert name == "cell" and dep is inner
    stack = cells.MultiRNNCell([cells.BasicRNNCell(U), cells.BasicRNNCell(U)])
    assert [d.name for d in stack._checkpoint_dependencies] == ["cell-0", "cell-1"]
    assert [d.ref for d in stack._checkpoint_dependencies] == stack._cells
    assert inner._checkpoint_dependencies == []
    inner(sl.zeros([B, U]), inner.zero_state(B, sl.float32))
    assert [(d.name, d.ref) for d in inner._checkpoint_dependencies] == [
        ("kernel", inner.variables[0]),
        ("bias", inner.variables[1]),
    ]


# -- wrappers' functions in their configs (TF1's format) -------------------------------------------
def _rebuilt(wrapper_cls, wrapper):
    config = wrapper.get_config()
    copy = dict(config)
    copy["cell"] = cells.LSTMCell.from_config(copy["cell"]["config"])
    return config, wrapper_cls.from_config(copy)


def test_residual_wrapper_config_round_trips_its_function():
    cell = cells.LSTMCell(4)
    config, rebuilt = _rebuilt(cells.ResidualWrapper, cells.ResidualWrapper(cell))
    assert rebuilt.get_config() == config and "residual_fn" not in config
    config, rebuilt = _rebuilt(
        cells.ResidualWrapper, cells.ResidualWrapper(cell, residual_fn=lambda i, o: i + i + o)
    )
    assert config["residual_fn_type"] == "lambda"
    assert config["residule_fn_module"] == __name__  # TF1's spelling of the key
    assert rebuilt._residual_fn(1, 2) == 4
    scale = 3

    def residual_fn(inputs, outputs):
        return inputs * scale + outputs  # a closure: its value travels in the config

    _, rebuilt = _rebuilt(cells.ResidualWrapper, cells.ResidualWrapper(cell, residual_fn))
    assert rebuilt._residual_fn(1, 2) == 5


def test_dropout_wrapper_config_round_trips_its_state_filter():
    cell = cells.LSTMCell(4)
    config, rebuilt = _rebuilt(cells.DropoutWrapper, cells.DropoutWrapper(cell))
    assert rebuilt.get_config() == config and "dropout_fn" not in config
    wrapper = cells.DropoutWrapper(cell, dropout_state_filter_visitor=lambda s: False)
    config, rebuilt = _rebuilt(cells.DropoutWrapper, wrapper)
    assert config["dropout_fn_type"] == "lambda"
    assert rebuilt._dropout_state_filter(None) is False
    with pytest.raises(TypeError, match="dropout_state_filter_visitor must be callable"):
        cells.DropoutWrapper(cell, dropout_state_filter_visitor=3)


def test_a_wrapper_function_is_refused_in_safe_mode():
    wrapper = cells.ResidualWrapper(cells.LSTMCell(4), residual_fn=lambda i, o: i - o)
    config = dict(wrapper.get_config())
    config["cell"] = cells.LSTMCell(4)
    with sl.saving.custom_object_scope({}), _safe_mode():
        with pytest.raises(ValueError, match="bytecode.*safe mode"):
            cells.ResidualWrapper.from_config(config)


def _safe_mode():
    from sluice._keras.saving import serialization

    return serialization.safe_mode_scope(True)


# -- raw_rnn: an emit of partly unknown shape ------------------------------------------------------
def test_raw_rnn_emits_structures_of_partly_unknown_shape():
    steps, batch = 3, 2
    unknown = sl.placeholder(sl.int32, [])
    data = np.random.default_rng(1).normal(size=[steps, batch, D]).astype(np.float32)
    inputs_ta = sl.TensorArray(sl.float32, size=steps).unstack(data)
    cell = cells.BasicRNNCell(U)

    def loop_fn(time, cell_output, cell_state, _):
        if cell_output is None:
            emit = (sl.zeros([2], sl.int32), sl.zeros([unknown], sl.int64))
            state = cell.zero_state(batch, sl.float32)
        else:
            emit = (
                sl.ones([batch, 2], sl.int32),
                sl.fill([batch, unknown], sl.constant(7, sl.int64)),
            )
            state = cell_state
        finished = sl.tile([time >= steps], [batch])
        next_input = sl.cond(
            sl.reduce_all(finished),
            lambda: sl.zeros([batch, D]),
            lambda: inputs_ta.read(sl.minimum(time, steps - 1)),
        )
        return finished, next_input, state, emit, None

    emit_ta, _, _ = sl.nn.raw_rnn(cell, loop_fn)
    assert [ta.dtype for ta in emit_ta] == [sl.int32, sl.int64]
    ints, longs = [ta.stack() for ta in emit_ta]
    assert longs.shape.as_list()[1:] == [batch, None]
    with sl.Session() as sess:  # a fed size: the run-time shape of the zeros (interpreted)
        sess.run(sl.global_variables_initializer())
        got_ints, got_longs = sess.run([ints, longs], {unknown: 2})
    np.testing.assert_array_equal(got_ints, np.ones([steps, batch, 2], np.int32))
    np.testing.assert_array_equal(got_longs, np.full([steps, batch, 2], 7, np.int64))


# -- Keras cells in TF1's RNN functions ------------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_keras_simple_rnn_cell_in_dynamic_rnn_equals_basic_rnn_cell(engine):
    x = sl.placeholder(sl.float32, [None, T, D])
    keras_cell = sl.layers.SimpleRNNCell(U)
    with sl.variable_scope("keras"):
        k_out, k_state = sl.nn.dynamic_rnn(keras_cell, x, dtype=sl.float32)
    assert k_out.shape.as_list() == [None, T, U] and k_state.shape.as_list() == [None, U]
    tf1_cell = cells.BasicRNNCell(U)
    with sl.variable_scope("tf1"):
        t_out, t_state = sl.nn.dynamic_rnn(tf1_cell, x, dtype=sl.float32)
    value = np.random.default_rng(2).normal(size=[B, T, D]).astype(np.float32)
    with _session(engine) as sess:
        sess.run(sl.global_variables_initializer())
        kernel, recurrent, bias = sess.run(keras_cell.weights)
        tf1_cell.variables[0].load(np.concatenate([kernel, recurrent]), sess)
        tf1_cell.variables[1].load(bias + 0.25, sess)
        keras_cell.weights[2].load(bias + 0.25, sess)
        got, want = sess.run([(k_out, k_state), (t_out, t_state)], {x: value})
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    assert np.abs(got[0]).min() > 0


@pytest.mark.parametrize("engine", ENGINES)
def test_keras_lstm_cell_in_static_rnn_has_its_list_state_and_gradients(engine):
    xs = [sl.placeholder(sl.float32, [None, D]) for _ in range(T)]
    cell = sl.layers.LSTMCell(U)
    outputs, state = sl.nn.static_rnn(cell, xs, dtype=sl.float32)
    assert len(outputs) == T and len(state) == 2
    assert [s.shape.as_list() for s in state] == [[None, U], [None, U]]
    loss = sl.reduce_sum(outputs[-1])
    grads = sl.gradients(loss, cell.weights)
    assert all(g is not None for g in grads)
    feed = {x: np.full([B, D], 0.5, np.float32) for x in xs}
    with _session(engine) as sess:
        sess.run(sl.global_variables_initializer())
        h, (h_state, _), g = sess.run([outputs[-1], state, grads], feed)
    np.testing.assert_allclose(h, h_state, rtol=1e-6)
    assert all(np.abs(v).max() > 0 for v in g)


# -- safe_embedding_lookup_sparse ------------------------------------------------------------------
def test_safe_embedding_lookup_sparse_refuses_tables_of_another_dtype_than_the_weights():
    ids = sl.SparseTensor([[0, 0], [1, 0]], sl.constant([0, 1], sl.int64), [2, 2])
    weights = sl.SparseTensor([[0, 0], [1, 0]], sl.constant([1.0, 2.0]), [2, 2])
    tables = [sl.constant(np.ones([2, 3]), dtype=sl.float64) for _ in range(2)]
    with pytest.raises(ValueError, match=r"embedding_weights\[0\].*float64.*float32"):
        sl.nn.safe_embedding_lookup_sparse(tables, ids, weights)
    with pytest.raises(ValueError, match=r"embedding_weights\[1\]"):
        sl.nn.safe_embedding_lookup_sparse([sl.zeros([2, 3]), tables[1]], ids, weights)


# -- weights set in the TF1 session (TF1 Keras's session is the default one) -----------------------
def _numpy_simple_rnn(x, kernel, recurrent, bias):
    h = np.zeros([x.shape[0], kernel.shape[1]], np.float32)
    for t in range(x.shape[1]):
        h = np.tanh(x[:, t] @ kernel + h @ recurrent + bias)
    return h


def test_tf1_cell_weights_are_read_and_written_in_the_default_session():
    x = sl.placeholder(sl.float32, [None, T, D])
    cell = cells.BasicRNNCell(U)
    _, state = sl.nn.dynamic_rnn(cell, x, dtype=sl.float32)
    rng = np.random.default_rng(3)
    kernel = rng.normal(size=[D + U, U]).astype(np.float32) * 0.5
    bias = rng.normal(size=[U]).astype(np.float32)
    value = rng.normal(size=[B, T, D]).astype(np.float32)
    with pytest.raises(ValueError, match="BasicRNNCell.set_weights.*default session"):
        cell.set_weights([kernel, bias])
    with sl.Session() as sess:  # no initializer run: set_weights gives the values
        cell.set_weights([kernel, bias])
        got_kernel, got_bias = cell.get_weights()
        got = sess.run(state, {x: value})
        with pytest.raises(ValueError, match="has 2 weights, given 1"):
            cell.set_weights([kernel])
        with pytest.raises(ValueError, match=r"kernel has shape \(8, 3\).*\(3, 3\)"):
            cell.set_weights([kernel[:U], bias])
    np.testing.assert_array_equal(got_kernel, kernel)
    np.testing.assert_array_equal(got_bias, bias)
    want = _numpy_simple_rnn(value, kernel[:D], kernel[D:], bias)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_keras_cell_set_weights_reaches_the_tf1_session_it_runs_in():
    x = sl.placeholder(sl.float32, [None, T, D])
    cell = sl.layers.SimpleRNNCell(U)
    _, state = sl.nn.dynamic_rnn(cell, x, dtype=sl.float32)
    rng = np.random.default_rng(4)
    weights = [
        rng.normal(size=[D, U]).astype(np.float32) * 0.5,
        rng.normal(size=[U, U]).astype(np.float32) * 0.5,
        rng.normal(size=[U]).astype(np.float32),
    ]
    value = rng.normal(size=[B, T, D]).astype(np.float32)
    with sl.Session() as sess:
        cell.set_weights(weights)
        got = sess.run(state, {x: value})
    np.testing.assert_allclose(got, _numpy_simple_rnn(value, *weights), rtol=1e-5, atol=1e-6)
