"""Public test helpers for sluice and for code built on it, as Keras and JAX ship theirs.

One generic contract test per kind of extension, which a user's own layer, cell or optimizer
can be checked with, plain functions that raise AssertionError (no test framework needed):

- `check_gradients`: an op's or a graph's gradients against central differences;
- `run_layer_test`: a Layer's config, shapes, weights and gradients;
- `run_cell_test` (with `CellCase`): an RNN cell's step and `dynamic_rnn` against a NumPy
  reference, values and gradients;
- `run_optimizer_test`: an Optimizer's updates against an optax (or NumPy) reference;
- `differential_sessions`: every `Session.run` in both engines, which must agree.
"""

from sluice.testing.cell_contract import CellCase, numpy_dynamic_rnn, run_cell_test
from sluice.testing.differential import DifferentialLog, differential_sessions
from sluice.testing.gradient_checker import central_difference, check_gradients
from sluice.testing.layer_contract import run_layer_test
from sluice.testing.optimizer_contract import run_optimizer_test

__all__ = [
    "CellCase",
    "DifferentialLog",
    "central_difference",
    "check_gradients",
    "differential_sessions",
    "numpy_dynamic_rnn",
    "run_cell_test",
    "run_layer_test",
    "run_optimizer_test",
]
