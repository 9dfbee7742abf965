"""Every optimizer's `ApplyUpdates` op survives a meta graph: the update rule is rebuilt from its
class and constructor arguments and takes the same steps, dense and by rows (IndexedSlices)."""

import numpy as np
import pytest

import sluice as sl
from sluice import optimizers
from sluice.framework.graph_def.meta_graph import MetaGraphDef

OPTIMIZERS = {
    "GradientDescent": lambda: sl.train.GradientDescentOptimizer(0.1),
    "Momentum": lambda: sl.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True),
    "Adam": lambda: sl.train.AdamOptimizer(0.05, beta1=0.8, epsilon=1e-7),
    "RMSProp": lambda: sl.train.RMSPropOptimizer(0.01, decay=0.8, momentum=0.5, centered=True),
    "Adagrad": lambda: sl.train.AdagradOptimizer(0.1, initial_accumulator_value=0.2),
    "Adadelta": lambda: sl.train.AdadeltaOptimizer(1.0, rho=0.9),
    "Ftrl": lambda: sl.train.FtrlOptimizer(0.1, l1_regularization_strength=0.01),
    "ProximalGD": lambda: sl.train.ProximalGradientDescentOptimizer(
        0.1, l2_regularization_strength=0.1
    ),
    "ProximalAdagrad": lambda: sl.train.ProximalAdagradOptimizer(0.1),
    "keras.SGD": lambda: optimizers.SGD(0.1, momentum=0.5, nesterov=True),
    "keras.Adam": lambda: optimizers.Adam(0.01, global_clipnorm=1.0),
    "keras.AdamW": lambda: optimizers.AdamW(0.01, weight_decay=0.1),
    "keras.RMSprop": lambda: optimizers.RMSprop(0.01, rho=0.8),
    "keras.Adagrad": lambda: optimizers.Adagrad(0.1, clipvalue=0.5),
}
IDS = np.array([0, 2, 2], np.int32)
DEFAULT_RUN = {"GradientDescent", "Momentum", "Adam", "keras.SGD", "keras.Adam", "keras.AdamW"}


@pytest.mark.parametrize(
    "name",
    [
        n if n in DEFAULT_RUN else pytest.param(n, marks=pytest.mark.slow)
        for n in sorted(OPTIMIZERS)
    ],
)
def test_update_rule_round_trips(name):
    g = sl.Graph()
    with g.as_default():
        dense = sl.Variable(np.array([[1.0, -2.0], [0.5, 3.0]], np.float32), name="dense")
        table = sl.Variable(np.arange(8, dtype=np.float32).reshape(4, 2) / 8, name="table")
        rows = sl.gather(table, IDS)  # an IndexedSlices gradient: updated by rows where it can
        loss = sl.add(sl.reduce_sum(sl.square(sl.matmul(rows, dense))), 0.0, name="loss")
        train = OPTIMIZERS[name]().minimize(loss)
        sl.add_to_collection("train_op", train)
    text = sl.train.export_meta_graph(graph=g).to_json()
    g2 = sl.Graph()
    with g2.as_default():
        sl.train.import_meta_graph(MetaGraphDef.from_json(text))
    results = []
    for graph in (g, g2):
        with graph.as_default(), sl.Session(config=sl.SessionConfig(engine="interpreted")) as sess:
            sess.run(sl.global_variables_initializer())
            for _ in range(2):
                sess.run(graph.get_collection("train_op")[0])
            results.append(
                sess.run([graph.get_collection("variables")[i] for i in range(2)] + ["loss:0"])
            )
    for want, got in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    rules = [op.get_attr("rule") for op in g2.get_operations() if op.type == "ApplyUpdates"]
    originals = [op.get_attr("rule") for op in g.get_operations() if op.type == "ApplyUpdates"]
    assert [r.sparse_rows for r in rules] == [r.sparse_rows for r in originals]
    assert [r.state_treedef for r in rules] == [r.state_treedef for r in originals]
