"""Rolled repeats: the copies of one computation that a Python loop built run as one lax.scan.

Every graph here is run three ways and must agree: compiled with repeats rolled (the default),
compiled without (`roll_repeats=False`) and interpreted. Structural checks count jaxpr
equations, never seconds.
"""

import numpy as np
import pytest

import sluice as sl
from sluice.framework.compiler.step import CompiledStep
from sluice.framework.prune import prune

WAYS = {
    "rolled": sl.SessionConfig(engine="compiled"),
    "unrolled": sl.SessionConfig(engine="compiled", roll_repeats=False),
    "interpreted": sl.SessionConfig(engine="interpreted"),
}


def _static_rnn(steps: int, cell=None, layers: int = 2, units: int = 5, batch: int = 3):
    """TF1's static RNN (legacy_seq2seq.rnn_decoder): the cell called once per step, reusing
    its weights; a loss over every step's output, SGD on it. Returns (x, loss, train, state)."""
    x = sl.placeholder(sl.float32, [batch, steps, 4], name="x")
    cell = cell or sl.nn.rnn_cell.MultiRNNCell(
        [sl.nn.rnn_cell.BasicLSTMCell(units) for _ in range(layers)]
    )
    state = cell.zero_state(batch, sl.float32)
    outputs = []
    for x_t in sl.unstack(x, axis=1):
        output, state = cell(x_t, state)
        outputs.append(output)
    loss = sl.reduce_mean(sl.square(sl.concat(outputs, 1) - 0.5))
    train = sl.train.GradientDescentOptimizer(0.5).minimize(loss)
    return x, loss, train, state


def _train(way: str, build, steps: int = 3, seed: int = 0):
    """Runs `build()` -> (x, loss, train, extra fetches) for `steps` steps one way; returns the
    losses, the extra fetches of the last step, the variables and the passes that fired."""
    g = sl.Graph()
    with g.as_default():
        sl.set_random_seed(seed)
        x, loss, train, extra = build()
        init = sl.global_variables_initializer()
        variables = sl.global_variables()
    xv = np.random.default_rng(seed).normal(size=x.shape.as_list()).astype(np.float32)
    losses, meta = [], sl.RunMetadata()
    with sl.Session(graph=g, config=WAYS[way]) as sess:
        sess.run(init)
        for _ in range(steps):
            value, last, _ = sess.run([loss, extra, train], {x: xv}, run_metadata=meta)
            losses.append(value)
        return losses, last, sess.run(variables), [p for p, _ in meta.graph_passes]


def _assert_agree(build, rolls: int | None = None):
    results = {way: _train(way, build) for way in WAYS}
    reference = results["unrolled"]
    for way, (losses, last, variables, passes) in results.items():
        np.testing.assert_allclose(losses, reference[0], rtol=2e-5, err_msg=way)
        for a, b in zip(_flat(last), _flat(reference[1])):
            np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6, err_msg=way)
        for a, b in zip(variables, reference[2]):
            np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6, err_msg=way)
    rolled = results["rolled"][3].count("roll_repeats")
    assert results["unrolled"][3].count("roll_repeats") == 0
    if rolls is not None:
        assert rolled == rolls
    return rolled


def _flat(x):
    if isinstance(x, (list, tuple)):
        return [leaf for item in x for leaf in _flat(item)]
    return [x]


def test_a_static_lstm_and_its_gradient_roll_into_two_scans():
    assert _assert_agree(lambda: _static_rnn(8)) == 2  # the forward steps, the backward steps


@pytest.mark.parametrize(
    "cell", ["gru", "rnn", pytest.param("lstm_peepholes", marks=pytest.mark.slow)]
)
def test_other_cells_roll_and_agree(cell):
    make = {
        "gru": lambda: sl.nn.rnn_cell.GRUCell(6),
        "rnn": lambda: sl.nn.rnn_cell.BasicRNNCell(6),
        "lstm_peepholes": lambda: sl.nn.rnn_cell.LSTMCell(6, use_peepholes=True, cell_clip=1.0),
    }[cell]
    assert _assert_agree(lambda: _static_rnn(6, cell=make())) >= 1


def test_layers_unrolled_one_after_another_read_each_others_steps_in_place():
    """Layer 2's steps read layer 1's outputs in step order, its gradient in reverse order."""

    def build():
        x = sl.placeholder(sl.float32, [3, 6, 4], name="x")
        sequence = sl.unstack(x, axis=1)
        for layer in range(2):
            cell = sl.nn.rnn_cell.BasicRNNCell(4, name=f"layer{layer}")
            state, outputs = cell.zero_state(3, sl.float32), []
            for x_t in sequence:
                output, state = cell(x_t, state)
                outputs.append(output)
            sequence = outputs
        loss = sl.reduce_sum(sl.square(sl.stack(sequence)))
        train = sl.train.GradientDescentOptimizer(0.1).minimize(loss)
        return x, loss, train, state

    assert _assert_agree(build) >= 3


def test_an_unknown_batch_size_still_rolls():
    def build():
        x = sl.placeholder(sl.float32, [None, 6, 4], name="x")
        cell = sl.nn.rnn_cell.GRUCell(5)
        state, outputs = cell.zero_state(sl.shape(x)[0], sl.float32), []
        for x_t in sl.unstack(x, axis=1):
            output, state = cell(x_t, state)
            outputs.append(output)
        loss = sl.reduce_mean(sl.square(sl.stack(outputs)))
        train = sl.train.GradientDescentOptimizer(0.5).minimize(loss)
        return x, loss, train, state

    g = sl.Graph()
    with g.as_default():
        x, loss, train, _ = build()
        init = sl.global_variables_initializer()
    xv = np.random.default_rng(0).normal(size=[3, 6, 4]).astype(np.float32)
    losses = {}
    for way, config in WAYS.items():
        meta = sl.RunMetadata()
        with sl.Session(graph=g, config=config) as sess:
            sess.run(init)
            losses[way] = [sess.run([loss, train], {x: xv}, run_metadata=meta)[0] for _ in range(3)]
        if way == "rolled":
            assert [p for p, _ in meta.graph_passes].count("roll_repeats") == 2
    np.testing.assert_allclose(losses["rolled"], losses["unrolled"], rtol=2e-5)
    np.testing.assert_allclose(losses["interpreted"], losses["unrolled"], rtol=2e-5)


def test_the_final_state_and_a_middle_step_can_be_fetched():
    def build():
        x, loss, train, state = _static_rnn(7)
        middle = sl.get_default_graph().get_tensor_by_name(
            "multi_rnn_cell_3/cell_1/basic_lstm_cell/Mul_2:0"
        )
        return x, loss, train, [state, middle]

    _assert_agree(build)


def test_an_input_computed_from_the_previous_output_rolls_as_a_carry():
    """The loop_function of legacy_seq2seq.rnn_decoder: step t reads a projection of step t-1's
    output, built in the same loop."""

    def build():
        x = sl.placeholder(sl.float32, [3, 6, 4], name="x")
        cell = sl.nn.rnn_cell.BasicLSTMCell(5)
        w = sl.Variable(np.random.default_rng(1).normal(size=[5, 4]).astype(np.float32))
        state, prev, outputs = cell.zero_state(3, sl.float32), None, []
        for t, x_t in enumerate(sl.unstack(x, axis=1)):
            if prev is not None:
                x_t = x_t + sl.tanh(sl.matmul(prev, w))
            prev, state = cell(x_t, state)
            outputs.append(prev)
        loss = sl.reduce_sum(sl.square(sl.stack(outputs)))
        train = sl.train.GradientDescentOptimizer(0.1).minimize(loss)
        return x, loss, train, state

    assert _assert_agree(build) >= 1


def test_steps_with_random_ops_or_conds_do_not_roll_and_still_agree():
    def build():
        x = sl.placeholder(sl.float32, [3, 6, 4], name="x")
        h, w = sl.zeros([3, 4]), sl.Variable(np.eye(4, dtype=np.float32))
        for t, x_t in enumerate(sl.unstack(x, axis=1)):
            h = sl.tanh(sl.matmul(h, w) + x_t)
            h = sl.cond(sl.reduce_sum(h) > 0.0, lambda: h * 2.0, lambda: h)
        loss = sl.reduce_sum(h)
        train = sl.train.GradientDescentOptimizer(0.1).minimize(loss)
        return x, loss, train, h

    _assert_agree(build)
    with sl.Graph().as_default():  # a dropout mask per step is a random op: not rolled either
        x = sl.placeholder(sl.float32, [3, 6, 4])
        h = sl.zeros([3, 4])
        for x_t in sl.unstack(x, axis=1):
            h = sl.nn.dropout(sl.tanh(h + x_t), rate=0.5)
        meta = sl.RunMetadata()
        with sl.Session() as sess:
            sess.run(h, {x: np.ones([3, 6, 4], np.float32)}, run_metadata=meta)
        assert "roll_repeats" not in [p for p, _ in meta.graph_passes]


def test_a_variable_written_between_the_steps_stops_rolling():
    """A read in each step and an assignment the steps do not order: rolling would move reads
    across it, so the steps stay unrolled."""

    def build():
        x = sl.placeholder(sl.float32, [3, 6, 4], name="x")
        v = sl.Variable(np.ones([4, 4], np.float32), name="v")
        h, reads = sl.zeros([3, 4]), []
        for x_t in sl.unstack(x, axis=1):
            h = sl.tanh(sl.matmul(h, v.read_value()) + x_t)
            reads.append(h)
        bump = v.assign_add(np.full([4, 4], 0.1, np.float32))
        loss = sl.reduce_sum(h)
        return x, loss, sl.group(bump), sl.stack(reads)

    _assert_agree(build, rolls=0)


def test_a_fed_intermediate_is_respected():
    g = sl.Graph()
    with g.as_default():
        x, loss, _, _ = _static_rnn(8, layers=1)
        fed = g.get_tensor_by_name("multi_rnn_cell_4/cell_0/basic_lstm_cell/Mul_2:0")  # step 4
    xv = np.random.default_rng(0).normal(size=[3, 8, 4]).astype(np.float32)
    values = {}
    for way, config in WAYS.items():
        with sl.Session(graph=g, config=config) as sess:
            sess.run(sl.variables_initializer(g.get_collection("variables")))
            values[way] = sess.run(loss, {x: xv, fed: np.zeros([3, 5], np.float32)})
    np.testing.assert_allclose(values["rolled"], values["unrolled"], rtol=1e-5)
    np.testing.assert_allclose(values["interpreted"], values["unrolled"], rtol=1e-5)


def _equations(steps: int, roll: bool) -> int:
    """jaxpr equations of a static LSTM training step, at any depth."""
    g = sl.Graph()
    with g.as_default():
        x, loss, train, _ = _static_rnn(steps)
        init = sl.global_variables_initializer()
    sess = sl.Session(graph=g)
    sess.run(init)
    step = CompiledStep(
        prune([loss], [train.op if hasattr(train, "op") else train], [x]), roll_repeats=roll
    )
    variables = sess._state.variables
    written = {h: variables[h] for h in step.written}
    read = {h: variables[h] for h in step.handles - step.written}
    jaxpr = step._jitted.trace(written, read, {}, [np.zeros([3, steps, 4], np.float32)]).jaxpr
    return _count(jaxpr.jaxpr)


def _count(jaxpr) -> int:
    total = 0
    for eqn in jaxpr.eqns:
        total += 1
        for value in eqn.params.values():
            inner = getattr(value, "jaxpr", None)
            if inner is not None:
                total += _count(getattr(inner, "jaxpr", inner))
    return total


def test_rolled_steps_cost_a_few_equations_each_not_a_copy_of_the_cell():
    rolled = {steps: _equations(steps, True) for steps in (8, 24)}
    unrolled = {steps: _equations(steps, False) for steps in (8, 24)}
    per_step_rolled = (rolled[24] - rolled[8]) / 16
    per_step_unrolled = (unrolled[24] - unrolled[8]) / 16
    # unrolled, every step adds the forward and backward cell ops (~100 equations); rolled, a
    # step adds only the slices that read its rows of the scans' stacks
    assert per_step_unrolled > 80
    assert per_step_rolled < 12
