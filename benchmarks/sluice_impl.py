"""The workloads written with sluice as a TF1 user would: dynamic_rnn, nn ops, optimizers."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

import sluice as sl
from benchmarks.workloads import RnnWorkload, VggWorkload, glorot


@dataclasses.dataclass
class TrainGraph:
    """One workload's training graph: feed `x`, `y`, fetch `loss`, run `train`; `init`
    initializes every variable."""

    graph: Any
    x: Any
    y: Any
    loss: Any
    train: Any
    init: Any


def rnn_graph(w: RnnWorkload, batch: int | None = None, swap_memory: bool = False) -> TrainGraph:
    """W1-W3: dynamic_rnn, Dense on the last output, Adam; `batch` None: any batch size."""
    g = sl.Graph()
    with g.as_default():
        sl.set_random_seed(0)  # the cell's initializer: the same in every session
        rng = np.random.default_rng(0)
        x = sl.placeholder(sl.float32, [batch, w.time, w.inputs], name="x")
        y = sl.placeholder(sl.int32, [batch], name="y")
        if w.cell == "lstm":
            cell = sl.nn.rnn_cell.BasicLSTMCell(w.hidden)
        else:
            cell = sl.nn.rnn_cell.GRUCell(w.hidden)
        outputs, _ = sl.nn.dynamic_rnn(cell, x, dtype=sl.float32, swap_memory=swap_memory)
        last = outputs[:, -1, :]
        dense_w = sl.Variable(glorot(rng, (w.hidden, w.classes)), name="dense/kernel")
        dense_b = sl.Variable(np.zeros(w.classes, np.float32), name="dense/bias")
        logits = sl.matmul(last, dense_w) + dense_b
        loss = sl.reduce_mean(
            sl.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
        )
        train = sl.train.AdamOptimizer(1e-3).minimize(loss)
        init = sl.global_variables_initializer()
    return TrainGraph(g, x, y, loss, train, init)


def vgg_graph(w: VggWorkload, batch: int | None = None) -> TrainGraph:
    """W4: VGG-11, SGD with momentum; `batch` None: any batch size."""
    g = sl.Graph()
    with g.as_default():
        rng = np.random.default_rng(0)
        x = sl.placeholder(sl.float32, [batch, w.image, w.image, w.channels], name="x")
        y = sl.placeholder(sl.int32, [batch], name="y")
        h, c_in, k = x, w.channels, 0
        for layer in w.layers:
            if layer == "M":
                h = sl.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
                continue
            kernel = sl.Variable(glorot(rng, (3, 3, c_in, layer)), name=f"conv{k}/kernel")
            bias = sl.Variable(np.zeros(layer, np.float32), name=f"conv{k}/bias")
            h = sl.nn.relu(sl.nn.bias_add(sl.nn.conv2d(h, kernel, [1, 1, 1, 1], "SAME"), bias))
            c_in, k = layer, k + 1
        spatial = w.image // 2 ** w.layers.count("M")
        h = sl.reshape(h, [-1, spatial * spatial * c_in])
        w1 = sl.Variable(glorot(rng, (spatial * spatial * c_in, w.dense)), name="fc1/kernel")
        b1 = sl.Variable(np.zeros(w.dense, np.float32), name="fc1/bias")
        w2 = sl.Variable(glorot(rng, (w.dense, w.classes)), name="fc2/kernel")
        b2 = sl.Variable(np.zeros(w.classes, np.float32), name="fc2/bias")
        logits = sl.matmul(sl.nn.relu(sl.matmul(h, w1) + b1), w2) + b2
        loss = sl.reduce_mean(
            sl.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
        )
        train = sl.train.MomentumOptimizer(0.01, 0.9).minimize(loss)
        init = sl.global_variables_initializer()
    return TrainGraph(g, x, y, loss, train, init)


def rnn_step(
    w: RnnWorkload,
    engine: str = "auto",
    swap_memory: bool = False,
    device_memory_limit: int | None = None,
    graph_passes: tuple | None = None,
):
    """Returns run(x, y) -> loss for one Adam training step, and the session."""
    tg = rnn_graph(w, w.batch, swap_memory)
    config = sl.SessionConfig(engine=engine, device_memory_limit=device_memory_limit)
    if graph_passes is not None:
        config = dataclasses.replace(config, graph_passes=graph_passes)
    sess = sl.Session(graph=tg.graph, config=config)
    sess.run(tg.init)

    def run(xv, yv, run_metadata=None):
        return sess.run([tg.loss, tg.train], {tg.x: xv, tg.y: yv}, run_metadata=run_metadata)[0]

    return run, sess


def vgg_step(w: VggWorkload, engine: str = "auto"):
    tg = vgg_graph(w, w.batch)
    sess = sl.Session(graph=tg.graph, config=sl.SessionConfig(engine=engine))
    sess.run(tg.init)

    def run(xv, yv):
        return sess.run([tg.loss, tg.train], {tg.x: xv, tg.y: yv})[0]

    return run, sess


def while_loop_run(engine: str):
    g = sl.Graph()
    with g.as_default():
        limit = sl.placeholder(sl.int32, [], name="N")
        _, x = sl.while_loop(
            lambda i, x: i < limit,
            lambda i, x: (i + 1, x * 0.999 + 1.0),
            (sl.constant(0), sl.constant(0.0)),
        )
    sess = sl.Session(graph=g, config=sl.SessionConfig(engine=engine))
    return lambda n: sess.run(x, {limit: n}), sess
