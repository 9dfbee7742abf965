"""A graph saved as a meta graph and rebuilt in a fresh Graph computes what the original does, in
both engines: the same values, the same training steps, the same engine (no silent fallback to
the interpreter), for every kind of op state and control flow a training script builds."""

import numpy as np
import pytest

import sluice as sl
from sluice.framework.graph_def import graph_def_of
from sluice.framework.graph_def.meta_graph import MetaGraphDef

ENGINES = ["compiled", "interpreted"]
RNG = np.random.RandomState(0)
X3 = RNG.randn(4, 3).astype(np.float32)
SEQ = RNG.randn(2, 2, 3).astype(np.float32)


def rebuilt(g):
    """`g` through JSON text into a new Graph, as a new process would see it."""
    text = sl.train.export_meta_graph(graph=g).to_json()
    g2 = sl.Graph()
    with g2.as_default():
        sl.train.import_meta_graph(MetaGraphDef.from_json(text))
    return g2


def _while_and_cond():
    x = sl.placeholder(sl.float32, [None, 3], name="x")
    w = sl.Variable(RNG.randn(3, 2).astype(np.float32), name="w")
    h = sl.matmul(x, w)
    _, acc = sl.while_loop(
        lambda i, a: i < 3, lambda i, a: (i + 1, sl.tanh(a) * 1.5), [sl.constant(0), h]
    )
    out = sl.cond(sl.reduce_sum(x) > 0, lambda: acc * 2.0, lambda: acc - 1.0)
    loss = sl.reduce_mean(sl.square(out), name="loss")
    grads = sl.gradients(loss, [x, w])
    train = sl.train.GradientDescentOptimizer(0.1).minimize(loss, name="train")
    return {"x:0": X3}, ["loss:0", grads[0].name, grads[1].name], train


def _adam_and_global_step():
    x = sl.placeholder(sl.float32, [None, 3], name="x")
    w = sl.Variable(RNG.randn(3, 1).astype(np.float32), name="w")
    loss = sl.reduce_mean(sl.square(sl.matmul(x, w) - 1.0), name="loss")
    step = sl.train.get_or_create_global_step()
    train = sl.train.AdamOptimizer(0.05).minimize(loss, global_step=step, name="train")
    reads = [v._as_graph_element().name for v in (step, w)]
    return {"x:0": X3}, ["loss:0", *reads], train


def _momentum_placeholder_rate():
    x = sl.placeholder(sl.float32, [None, 3], name="x")
    lr = sl.placeholder_with_default(sl.constant(0.1), [], name="lr")
    w = sl.Variable(RNG.randn(3, 1).astype(np.float32), name="w")
    loss = sl.reduce_mean(sl.square(sl.matmul(x, w)), name="loss")
    train = sl.train.MomentumOptimizer(lr, 0.9, use_nesterov=True).minimize(loss, name="train")
    return {"x:0": X3}, ["loss:0", "lr:0"], train


def _lstm():
    seq = sl.placeholder(sl.float32, [2, 2, 3], name="seq")
    out, _ = sl.nn.dynamic_rnn(sl.nn.rnn_cell.LSTMCell(3), seq, dtype=sl.float32)
    loss = sl.reduce_mean(sl.square(out), name="loss")
    train = sl.train.AdamOptimizer(0.01).minimize(loss, name="train")
    return {"seq:0": SEQ}, ["loss:0"], train


def _multi_gru():
    seq = sl.placeholder(sl.float32, [2, 2, 3], name="seq")
    cell = sl.nn.rnn_cell.MultiRNNCell([sl.nn.rnn_cell.GRUCell(3), sl.nn.rnn_cell.GRUCell(2)])
    out, _ = sl.nn.dynamic_rnn(cell, seq, dtype=sl.float32)
    loss = sl.reduce_mean(sl.square(out), name="loss")
    train = sl.train.MomentumOptimizer(0.1, 0.9).minimize(loss, name="train")
    return {"seq:0": SEQ}, ["loss:0"], train


def _tensor_array_map_fn_random_ema():
    x = sl.placeholder(sl.float32, [3], name="x")
    w = sl.Variable(np.ones(3, np.float32), name="w")
    doubled = sl.identity(sl.map_fn(lambda e: e * 2.0, x * w), name="doubled")
    ta = sl.TensorArray(sl.float32, size=3).write(0, x[0]).write(1, x[1]).write(2, x[2])
    sl.identity(ta.stack(), name="stacked")
    sl.random_normal([2], seed=3, name="noise")
    ema = sl.train.ExponentialMovingAverage(0.9)
    loss = sl.reduce_sum(sl.square(doubled), name="loss")
    with sl.control_dependencies([sl.train.GradientDescentOptimizer(0.01).minimize(loss)]):
        train = ema.apply([w])
    sl.identity(ema.average(w), name="average")
    return {"x:0": X3[0]}, ["doubled:0", "stacked:0", "noise:0", "average:0", "loss:0"], train


CASES = {
    "while_cond_gradients": _while_and_cond,
    "adam_global_step": _adam_and_global_step,
    "momentum_fed_rate": _momentum_placeholder_rate,
    "lstm": _lstm,
    "tensor_array_map_fn_random_ema": _tensor_array_map_fn_random_ema,
}


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request):
    g = sl.Graph()
    with g.as_default():
        feed, fetches, train = CASES[request.param]()
        sl.add_to_collection("train_op", train)
    # what was exported, before the tests add initializers (and the import a Saver)
    saved = (g.get_operations(), g.as_graph_def())
    return g, feed, fetches, rebuilt(g), saved


def _steps(g, feed, fetches, engine, steps=1):
    """Values of `fetches` before and after each of `steps` training steps; the engine used."""
    with g.as_default(), sl.Session(graph=g, config=sl.SessionConfig(engine=engine)) as sess:
        sess.run(sl.global_variables_initializer())
        train = g.get_collection("train_op")[0]
        meta = sl.RunMetadata()
        values = []
        for _ in range(steps):
            values.append(sess.run(fetches, feed, run_metadata=meta))
            sess.run(train, feed)
        values.append(sess.run(fetches, feed))
        return values, meta.engine


@pytest.mark.parametrize("engine", ENGINES)
def test_imported_graph_trains_as_the_original(case, engine, request):
    if engine == "interpreted" and request.node.callspec.params["case"] == "lstm":
        pytest.skip("slow interpreted: test_rnn_round_trips covers it")
    g, feed, fetches, g2, _ = case
    want, want_engine = _steps(g, feed, fetches, engine)
    got, got_engine = _steps(g2, feed, fetches, engine)
    assert got_engine == want_engine == engine
    for step_want, step_got in zip(want, got):
        for a, b in zip(step_want, step_got):
            np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-6)


def test_imported_graph_keeps_contexts_ops_and_shapes(case):
    _, _, _, g2, (ops, graph_def) = case
    ops2 = g2.get_operations()[: len(ops)]
    assert [(op.name, op.type) for op in ops] == [(op.name, op.type) for op in ops2]
    for a, b in zip(ops, ops2):
        assert [
            (t.dtype, t.shape.as_list() if t.shape.rank is not None else None) for t in a.outputs
        ] == [(t.dtype, t.shape.as_list() if t.shape.rank is not None else None) for t in b.outputs]
        assert [t.name for t in a.inputs] == [t.name for t in b.inputs]
        assert sorted(c.name for c in a.control_inputs) == sorted(c.name for c in b.control_inputs)
        ctx_a, ctx_b = a.control_flow_context, b.control_flow_context
        assert type(ctx_a) is type(ctx_b)
        if ctx_a is not None:
            assert ctx_a.name == ctx_b.name
    assert graph_def_of(g2, ops2) == graph_def  # a second trip changes nothing


def test_gradients_built_on_an_imported_loop_and_cond():
    g = sl.Graph()
    with g.as_default():
        x = sl.placeholder(sl.float32, [3], name="x")
        w = sl.Variable(np.array([1.0, 2.0, 3.0], np.float32), name="w")
        _, acc = sl.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * w), [sl.constant(0), x])
        total = sl.reduce_sum(acc)
        sl.cond(total > 0, lambda: total * 2.0, lambda: total, name="y")
    g2 = rebuilt(g)
    with g2.as_default():
        y = g2.get_tensor_by_name("y/Merge:0")
        dx, dw = sl.gradients(y, [g2.get_tensor_by_name("x:0"), sl.global_variables()[0]])
        for engine in ENGINES:
            with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
                sess.run(sl.global_variables_initializer())
                gx, gw = sess.run([dx, dw], {"x:0": [1.0, 1.0, 2.0]})
            np.testing.assert_allclose(gx, [2.0, 16.0, 54.0], rtol=1e-6)  # 2 w**3
            np.testing.assert_allclose(gw, [6.0, 24.0, 108.0], rtol=1e-6)  # 2 * 3 w**2 x


@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("build", [_lstm, _multi_gru], ids=["lstm", "multi_gru"])
def test_rnn_round_trips(build, engine):
    g = sl.Graph()
    with g.as_default():
        feed, fetches, train = build()
        sl.add_to_collection("train_op", train)
    g2 = rebuilt(g)
    want, _ = _steps(g, feed, fetches, engine, steps=2)
    got, got_engine = _steps(g2, feed, fetches, engine, steps=2)
    assert got_engine == engine
    for a, b in zip(want, got):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-6)
