"""The tiny model the training-loop tests train: linear regression by gradient descent, with a
global step, and its NumPy reference."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

import sluice as sl

X = np.array([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0], [6.0, 7.0]], np.float32)
Y = np.array([[1.0], [2.0], [3.0], [4.0]], np.float32)
LEARNING_RATE = 0.01
ENGINES = ["compiled", "interpreted"]


class Model(NamedTuple):
    graph: sl.Graph
    w: sl.Variable
    loss: sl.Tensor
    global_step: sl.Variable
    train_op: sl.Operation


def build(global_step: bool = True, summary: bool = False) -> Model:
    """A new graph: w [2, 1] from zeros, loss = mean((X w - Y)^2), one GD step per train_op."""
    g = sl.Graph()
    with g.as_default():
        w = sl.Variable(np.zeros((2, 1), np.float32), name="w")
        loss = sl.reduce_mean(sl.square(sl.matmul(sl.constant(X), w) - sl.constant(Y)))
        if summary:
            sl.summary.scalar("loss", loss)
        step = sl.train.get_or_create_global_step() if global_step else None
        train_op = sl.train.GradientDescentOptimizer(LEARNING_RATE).minimize(loss, global_step=step)
    return Model(g, w, loss, step, train_op)


def reference_w(steps: int) -> np.ndarray:
    """w after `steps` gradient-descent steps, in float64 NumPy."""
    x, y = X.astype(np.float64), Y.astype(np.float64)
    w = np.zeros((2, 1))
    for _ in range(steps):
        w -= LEARNING_RATE * 2.0 / len(x) * x.T @ (x @ w - y)
    return w


def config(engine: str) -> sl.SessionConfig:
    return sl.SessionConfig(engine=engine)
