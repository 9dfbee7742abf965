"""Where `fit` stands, kept in graph Variables so that a checkpoint of the graph carries it, and
the learning rate in a Variable, so that callbacks can change it between steps (they read and
change both through the model: see `Trainer`).

`FitState` holds `fit_state/epoch`, `fit_state/batch` (batches done in that epoch),
`fit_state/iterations` (training steps over all fits) and `fit_state/shuffle_seed` (the base
of every epoch's permutation). The train step increments `batch` and `iterations` in-graph;
fit writes `epoch` and `batch` at epoch boundaries. Reading and writing go through the graph's
runtime (`sluice._keras.layers.runtime`), which adds no op, so compiled steps stay valid.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from sluice._keras.optimizers import keras as optimizers_lib
from sluice._keras.utils import rng_utils
from sluice.framework import state_cells
from sluice.framework.ir.graph import Graph
from sluice.framework.variables import Variable


class FitState:
    """Where `fit` stands, kept in Variables so that checkpoints carry it: the epoch, the
    batches done in it, the training steps done in all, and the seed of the shuffling."""

    def __init__(self, graph: Graph):
        seed = rng_utils.get_random_seed()
        if seed is None:
            seed = graph.seed if graph.seed is not None else random.SystemRandom().randrange(2**31)
        with graph.as_default(), graph.name_scope(None):
            self.epoch = _counter("epoch", 0)
            self.batch = _counter("batch", 0)
            self.iterations = _counter("iterations", 0)
            self.shuffle_seed = _counter("shuffle_seed", seed)

    @property
    def variables(self) -> list[Variable]:
        return [self.epoch, self.batch, self.iterations, self.shuffle_seed]


def _counter(name: str, value: int) -> Variable:
    return Variable(np.int64(value), trainable=False, name=f"fit_state/{name}")


def graph_optimizer(optimizer: Any, graph: Graph, dtype: Any) -> Any:
    """The optimizer to build into the graph: a Keras-spelled optimizer with a numeric learning
    rate is rebuilt with the rate in a Variable (`optimizer/learning_rate`), so callbacks can
    change it between steps without changing the graph."""
    if not optimizers_lib.is_keras_optimizer(optimizer) or optimizers_lib.follows_schedule(
        optimizer
    ):
        return optimizer
    rate = optimizer.learning_rate
    if not isinstance(rate, (int, float, np.number)):
        return optimizer
    with graph.as_default(), graph.name_scope(None):
        variable = Variable(
            np.asarray(rate, dtype=dtype), trainable=False, name="optimizer/learning_rate"
        )
    # a state cell, as Keras's rate is a Variable: `float(optimizer.learning_rate)` reads it and
    # `optimizer.learning_rate = x` writes it outside graphs
    initial = np.asarray(rate, dtype=np.dtype(variable.dtype))
    cell = state_cells.StateCell(
        variable.op.get_attr("shared_name"), variable.dtype, variable.shape, lambda: initial, False
    )
    state_cells.attach(variable, cell)
    return type(optimizer).from_config({**optimizer.get_config(), "learning_rate": variable})


def optimizer_rate_variable(optimizer: Any) -> Variable | None:
    rate = getattr(optimizer, "learning_rate", None)
    return rate if isinstance(rate, Variable) else None
