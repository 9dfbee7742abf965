"""char-rnn's default training graph (Karpathy's char-rnn as ported to TF1), statically unrolled or
as one dynamic_rnn loop.

The model: a 65-character vocabulary embedded in 128 dimensions, a 2-layer MultiRNNCell of
BasicLSTMCell(128), a softmax over the vocabulary at every time step, the mean cross-entropy
over all 50 steps, gradients clipped by global norm 5 and Adam; batch 50.

`static=True` unrolls the recurrence in Python, calling the cell once per time step with its
weights reused, as TF1's `legacy_seq2seq.rnn_decoder` does: the graph holds 50 copies of the
cell and of its gradient. `static=False` runs the same cell in one `dynamic_rnn` loop.
"""

from __future__ import annotations

import dataclasses

import numpy as np

import sluice as sl


@dataclasses.dataclass(frozen=True)
class CharRnn:
    vocabulary: int = 65
    batch: int = 50
    time: int = 50
    units: int = 128
    layers: int = 2
    grad_clip: float = 5.0
    learning_rate: float = 2e-3

    def data(self, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng(seed)
        ids = rng.integers(0, self.vocabulary, size=[self.batch, self.time + 1]).astype(np.int32)
        return ids[:, :-1], ids[:, 1:]


@dataclasses.dataclass
class CharRnnGraph:
    graph: sl.Graph
    inputs: sl.Tensor
    targets: sl.Tensor
    initial_state: tuple  # fed every step with the previous step's final state, as char-rnn does
    final_state: tuple
    loss: sl.Tensor
    train: sl.Operation
    init: sl.Operation
    lr: sl.Variable


def build(model: CharRnn, static: bool) -> CharRnnGraph:
    """The training graph of `model`, unrolled (`static`) or as a dynamic_rnn loop."""
    g = sl.Graph()
    with g.as_default():
        sl.set_random_seed(0)
        inputs = sl.placeholder(sl.int32, [model.batch, model.time], name="input_data")
        targets = sl.placeholder(sl.int32, [model.batch, model.time], name="targets")
        cell = sl.nn.rnn_cell.MultiRNNCell(
            [sl.nn.rnn_cell.BasicLSTMCell(model.units) for _ in range(model.layers)]
        )
        initial_state = state = cell.zero_state(model.batch, sl.float32)
        with sl.variable_scope("rnnlm"):
            softmax_w = sl.get_variable("softmax_w", [model.units, model.vocabulary])
            softmax_b = sl.get_variable("softmax_b", [model.vocabulary])
            embedding = sl.get_variable("embedding", [model.vocabulary, model.units])
            embedded = sl.gather(embedding, inputs)  # [batch, time, units]
        if static:
            steps = [sl.squeeze(x, [1]) for x in sl.split(embedded, model.time, 1)]
            outputs = []
            with sl.variable_scope("rnnlm"):
                for x in steps:  # legacy_seq2seq.rnn_decoder: the same cell at every step
                    output, state = cell(x, state)
                    outputs.append(output)
            output = sl.reshape(sl.concat(outputs, 1), [-1, model.units])
        else:
            with sl.variable_scope("rnnlm"):
                outputs, state = sl.nn.dynamic_rnn(cell, embedded, initial_state=state)
            output = sl.reshape(outputs, [-1, model.units])
        logits = sl.matmul(output, softmax_w) + softmax_b
        labels = sl.reshape(targets, [-1])
        loss = sl.reduce_mean(
            sl.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        )
        lr = sl.Variable(model.learning_rate, trainable=False, name="lr")
        params = sl.trainable_variables()
        grads, _ = sl.clip_by_global_norm(sl.gradients(loss, params), model.grad_clip)
        train = sl.train.AdamOptimizer(lr).apply_gradients(list(zip(grads, params)))
        init = sl.global_variables_initializer()
    return CharRnnGraph(g, inputs, targets, initial_state, state, loss, train, init, lr)
