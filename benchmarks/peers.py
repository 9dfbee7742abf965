"""Optional peers for `python -m benchmarks --peers`: PyTorch and TensorFlow 1.x graph mode.

Each peer is the workload as a user of that framework writes it, and receives the same NumPy
(x, y) every step as sluice and the JAX baseline do. A peer that is not installed is skipped with
a printed note and gives no row; nothing in the package or the tests needs torch or tensorflow.
PyTorch is the optional `bench` extra, a CPU build for the CPU tables:
`pip install -e '.[bench]' --extra-index-url https://download.pytorch.org/whl/cpu`.

- PyTorch: `nn.LSTM`/`nn.GRU` (batch_first) + `nn.Linear`, `CrossEntropyLoss`, `Adam(1e-3)`;
  VGG-11 from `nn.Conv2d`/`nn.MaxPool2d`/`nn.Linear` on NCHW input, `SGD(0.01, momentum=0.9)`.
  On a machine with CUDA, the model and each step's batch go to the GPU.
  Its cells differ slightly from TF1's (no forget bias of 1; the GRU applies the reset gate
  after the recurrent matmul), which does not change the work done. Threads: torch's default
  (the physical cores), or `--torch-threads`: on a machine loaded by other processes, its
  OpenMP threads wait for each other at every parallel region and a step can take 10-100x
  longer with 2 threads than with 1.
- TF 1.x: graph mode with v1 control flow, `dynamic_rnn` over `BasicLSTMCell`/`GRUCell`,
  `AdamOptimizer`; VGG with `tf.nn.conv2d`/`max_pool2d` and `MomentumOptimizer`; one `sess.run`
  per step with a feed_dict. TF >= 2.16 needs the `tf_keras` package for `rnn_cell`.
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Callable

from benchmarks.workloads import RnnWorkload, VggWorkload


def set_torch_threads(threads: int) -> None:
    """torch.set_num_threads, when PyTorch is installed (`--torch-threads`)."""
    torch = _torch()
    if torch is not None:
        torch.set_num_threads(threads)


def set_torch_flush_denormal() -> None:
    """torch.set_flush_denormal(True), when PyTorch is installed (`--torch-flush-denormal`).

    XLA:CPU flushes denormal floats to zero by default; PyTorch computes with them, which on
    Intel CPUs costs a micro-code assist per operation. W2's LSTM gradients drift into that
    range after a few steps: on the 2-core Intel Xeon its PyTorch step took 1.3-2.2 s by median
    (min 0.13-1.3 s) as PyTorch ships, and 0.14 s with denormals flushed (issue 28's note)."""
    torch = _torch()
    if torch is not None:
        torch.set_flush_denormal(True)


def rnn_runs(w: RnnWorkload) -> dict:
    """run(x, y) -> loss for W1-W3, one per installed peer (a missing one prints a line)."""
    return _build({"pytorch": _torch_rnn, "tf1 graph": _tf1_rnn}, w)


def vgg_runs(w: VggWorkload) -> dict:
    """run(x, y) -> loss for W4, one per installed peer (a missing one prints a line)."""
    return _build({"pytorch": _torch_vgg, "tf1 graph": _tf1_vgg}, w)


def _build(builders: dict, w) -> dict:
    runs = {name: build(w) for name, build in builders.items()}
    return {name: run for name, run in runs.items() if run is not None}


@functools.cache
def _torch():
    try:
        import torch
    except ImportError:
        print(
            "  (PyTorch is not installed: no pytorch rows; `pip install -e '.[bench]'"
            " --extra-index-url https://download.pytorch.org/whl/cpu` adds it)"
        )
        return None
    return torch


@functools.cache
def _tf():
    # TF >= 2.16 ships Keras 3, which drops tf.compat.v1.nn.rnn_cell; tf_keras brings it back.
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        import tensorflow as tf
    except ImportError:
        print("  (TensorFlow is not installed: no tf1 graph rows)")
        return None
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)
    warnings.filterwarnings("ignore", category=UserWarning, module=__name__)  # rnn_cell deprecation
    tf.compat.v1.disable_eager_execution()
    tf.compat.v1.disable_control_flow_v2()
    return tf.compat.v1


# --- PyTorch ---------------------------------------------------------------------------------


def _torch_rnn(w: RnnWorkload):
    torch = _torch()
    if torch is None:
        return None
    nn = torch.nn
    torch.manual_seed(0)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            rnn_class = nn.LSTM if w.cell == "lstm" else nn.GRU
            self.rnn = rnn_class(w.inputs, w.hidden, batch_first=True)
            self.dense = nn.Linear(w.hidden, w.classes)

        def forward(self, x):
            outputs, _ = self.rnn(x)
            return self.dense(outputs[:, -1, :])

    return _torch_train_step(torch, Model(), lambda p: torch.optim.Adam(p, lr=1e-3), lambda x: x)


def _torch_vgg(w: VggWorkload):
    torch = _torch()
    if torch is None:
        return None
    nn = torch.nn
    torch.manual_seed(0)
    layers, c_in = [], w.channels
    for layer in w.layers:
        if layer == "M":
            layers.append(nn.MaxPool2d(2))
        else:
            layers += [nn.Conv2d(c_in, layer, 3, padding=1), nn.ReLU()]
            c_in = layer
    spatial = w.image // 2 ** w.layers.count("M")
    model = nn.Sequential(
        *layers,
        nn.Flatten(),
        nn.Linear(spatial * spatial * c_in, w.dense),
        nn.ReLU(),
        nn.Linear(w.dense, w.classes),
    )
    return _torch_train_step(
        torch,
        model,
        lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9),
        lambda x: x.permute(0, 3, 1, 2),
    )  # NHWC -> NCHW


def _torch_train_step(torch, model, make_optimizer: Callable, prepare: Callable):
    # on a GPU machine torch runs there too (cuDNN's LSTM/GRU), as a PyTorch user would
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = model.to(device)
    optimizer = make_optimizer(model.parameters())
    loss_fn = torch.nn.CrossEntropyLoss()

    def run(x, y):
        inputs = prepare(torch.from_numpy(x).to(device))
        labels = torch.from_numpy(y).long().to(device)
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), labels)
        loss.backward()
        optimizer.step()
        return loss.item()  # the loss on the host, as in every row

    return run


# --- TensorFlow 1.x graph mode ---------------------------------------------------------------


def _tf1_rnn(w: RnnWorkload):
    tf = _tf()
    if tf is None:
        return None
    if not hasattr(tf.nn.rnn_cell, "BasicLSTMCell"):  # Keras 3 without tf_keras
        print("  (tf.compat.v1.nn.rnn_cell needs the tf_keras package: no tf1 graph row)")
        return None
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(0)
        x = tf.placeholder(tf.float32, [w.batch, w.time, w.inputs], name="x")
        y = tf.placeholder(tf.int32, [w.batch], name="y")
        if w.cell == "lstm":
            cell = tf.nn.rnn_cell.BasicLSTMCell(w.hidden)
        else:
            cell = tf.nn.rnn_cell.GRUCell(w.hidden)
        outputs, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
        dense_w = tf.get_variable("dense/kernel", [w.hidden, w.classes])
        dense_b = tf.get_variable("dense/bias", [w.classes], initializer=tf.zeros_initializer())
        logits = tf.matmul(outputs[:, -1, :], dense_w) + dense_b
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
        )
        train = tf.train.AdamOptimizer(1e-3).minimize(loss)
        init = tf.global_variables_initializer()
    return _tf1_session_step(tf, g, init, x, y, loss, train)


def _tf1_vgg(w: VggWorkload):
    tf = _tf()
    if tf is None:
        return None
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(0)
        x = tf.placeholder(tf.float32, [w.batch, w.image, w.image, w.channels], name="x")
        y = tf.placeholder(tf.int32, [w.batch], name="y")
        h, c_in, k = x, w.channels, 0
        for layer in w.layers:
            if layer == "M":
                h = tf.nn.max_pool2d(h, 2, 2, "VALID")
                continue
            kernel = tf.get_variable(f"conv{k}/kernel", [3, 3, c_in, layer])
            bias = tf.get_variable(f"conv{k}/bias", [layer], initializer=tf.zeros_initializer())
            h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(h, kernel, [1, 1, 1, 1], "SAME"), bias))
            c_in, k = layer, k + 1
        spatial = w.image // 2 ** w.layers.count("M")
        h = tf.reshape(h, [w.batch, spatial * spatial * c_in])
        w1 = tf.get_variable("fc1/kernel", [spatial * spatial * c_in, w.dense])
        b1 = tf.get_variable("fc1/bias", [w.dense], initializer=tf.zeros_initializer())
        w2 = tf.get_variable("fc2/kernel", [w.dense, w.classes])
        b2 = tf.get_variable("fc2/bias", [w.classes], initializer=tf.zeros_initializer())
        logits = tf.matmul(tf.nn.relu(tf.matmul(h, w1) + b1), w2) + b2
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
        )
        train = tf.train.MomentumOptimizer(0.01, 0.9).minimize(loss)
        init = tf.global_variables_initializer()
    return _tf1_session_step(tf, g, init, x, y, loss, train)


def _tf1_session_step(tf, graph, init, x, y, loss, train):
    sess = tf.Session(graph=graph)
    sess.run(init)

    def run(xv, yv):
        return sess.run([loss, train], {x: xv, y: yv})[0]

    return run
