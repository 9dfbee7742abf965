"""`run_cell_test`: the contract every RNN cell meets, written once (the TF1 `rnn_cell` contract).

A cell is described by a `CellCase`: how to build it, the NumPy reference of one step (the same
equations, taking the weights fetched from the session), and the weights it must create
(TF1 names relative to the cell's scope, with shapes). `run_cell_test` checks, for one cell:

1. one step, called under variable scope "rnn": output and state shapes and structure, the
   zero state, the weights' names and shapes and dtype;
2. the step's values against the NumPy reference, with the session's weights (set to random
   values, so biases matter), in float32 and float64;
3. in float64, `dynamic_rnn` with the same cell (no new weights) over ragged
   `sequence_length`s against a per-sequence NumPy loop;
4. in float64, the gradients of the step (w.r.t. inputs, state and every weight) and of the
   dynamic_rnn (w.r.t. its inputs and every weight) against central differences.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

import sluice as sl
from sluice import cells
from sluice._tf1.cells import nest
from sluice.testing.gradient_checker import central_difference

BATCH, TIME = 3, 4
LENGTHS = [4, 1, 2]  # ragged: one full row, one of a single step, one in between


@dataclasses.dataclass(frozen=True)
class CellCase:
    """One row of the cell table.

    Attributes:
      name: the row's id.
      make: builds the cell.
      step: the NumPy reference: `step(weights, x, state) -> (output, new_state)`, where
        `weights` maps names relative to the cell's scope to arrays and `state` nests like
        `cell.state_size`.
      weights: the expected {relative name: shape}, in creation order.
      depth: the inputs' depth.
      output_size, state_size: the expected sizes.
      scope: the cell's expected scope under "rnn".
    """

    name: str
    make: Callable[[], Any]
    step: Callable[[dict, np.ndarray, Any], tuple[Any, Any]]
    weights: dict[str, tuple]
    depth: int
    output_size: Any
    state_size: Any
    scope: str


def _fill(sess: sl.Session, variables: list, seed: int) -> dict[str, np.ndarray]:
    """Loads random values (scale 0.5) into every variable; returns them by full name."""
    rng = np.random.default_rng(seed)
    values = {}
    for v in variables:
        value = (0.5 * rng.normal(size=v.shape.as_list())).astype(v.dtype)
        v.load(value, sess)
        values[v.op.name] = value
    return values


def _random_state(state_size: Any, rng, dtype) -> Any:
    def leaf(size):
        return (0.5 * rng.normal(size=[BATCH, size])).astype(dtype)

    return nest.map_structure(leaf, state_size)


def _check_gradients(
    sess,
    losses: list,
    feed: dict,
    fed: list,
    variables: dict,
    rtol: float,
    atol: float,
    entries: int = 4,
    delta: float = 1e-6,
) -> None:
    """Symbolic gradients of each of `losses` w.r.t. the fed placeholders `fed` and the
    `variables` (a {Variable: value loaded}) against central differences on `entries` random
    elements of each; every loss is evaluated in the same runs."""
    targets = fed + list(variables)
    grads = [sl.gradients(loss, targets) for loss in losses]
    fetch = [[g for g in per_loss if g is not None] for per_loss in grads]
    values = sess.run(fetch, feed)
    symbolic = []
    for per_loss, got in zip(grads, values):
        it = iter(got)
        symbolic.append([None if g is None else next(it) for g in per_loss])
    rng = np.random.default_rng(7)
    for n, target in enumerate(targets):
        connected = [i for i in range(len(losses)) if symbolic[i][n] is not None]
        assert connected, f"no gradient for {target.name}"
        base = feed[target] if n < len(fed) else variables[target]

        def losses_at(shifted, n=n, target=target, base=base):
            if n < len(fed):
                return sess.run(losses, {**feed, target: shifted.reshape(base.shape)})
            target.load(shifted.reshape(base.shape), sess)
            return sess.run(losses, feed)

        flat = base.reshape(-1)
        for k in rng.choice(flat.size, size=min(entries, flat.size), replace=False):
            slopes = central_difference(losses_at, flat, k, delta)
            if n >= len(fed):
                target.load(base, sess)
            for i in connected:
                np.testing.assert_allclose(
                    symbolic[i][n].reshape(-1)[k],
                    slopes[i],
                    rtol=rtol,
                    atol=atol,
                    err_msg=f"d loss{i} / d {target.name}[{k}]",
                )


def _weighted_sum(tensors: list, rng) -> Any:
    weights = [rng.normal(size=t.shape.as_list()).astype(t.dtype) for t in tensors]
    return sl.add_n([sl.reduce_sum(t * w) for t, w in zip(tensors, weights)])


def numpy_dynamic_rnn(case: CellCase, weights: dict, x: np.ndarray, lengths: list) -> tuple:
    """The NumPy reference of `dynamic_rnn`: a per-sequence loop of `case.step`. Row b runs
    lengths[b] steps from the zero state; outputs past its end are zeros; its final state is the
    state after its last step.

    >>> running_sum = CellCase(
    ...     name="running_sum",
    ...     make=lambda: None,
    ...     step=lambda w, x, h: (h + x, h + x),
    ...     weights={},
    ...     depth=1,
    ...     output_size=1,
    ...     state_size=1,
    ...     scope="",
    ... )
    >>> outputs, final = numpy_dynamic_rnn(running_sum, {}, np.ones([2, 3, 1]), [3, 1])
    >>> outputs[:, :, 0]
    array([[1., 2., 3.],
           [1., 0., 0.]])
    >>> final[:, 0]
    array([3., 1.])
    """
    batch, time = x.shape[:2]
    outputs = np.zeros([batch, time, case.output_size], x.dtype)
    finals = []
    for b in range(batch):
        state = nest.map_structure(lambda s: np.zeros([1, s], x.dtype), case.state_size)
        for t in range(lengths[b]):
            out, state = case.step(weights, x[b : b + 1, t], state)
            outputs[b, t] = out[0]
        finals.append(state)
    final = nest.map_structure(lambda *rows: np.concatenate(rows, 0), *finals)
    return outputs, final


def _assert_all_close(got: Any, expected: Any, dtype) -> None:
    tol = {"rtol": 1e-5, "atol": 1e-6} if dtype == np.float32 else {"rtol": 1e-10, "atol": 1e-12}
    for g, e in zip(nest.flatten(got), nest.flatten(expected), strict=True):
        np.testing.assert_allclose(g, e, **tol)


def _check(case: CellCase, dtype, with_rnn: bool, gradients: bool) -> None:
    rng = np.random.default_rng(0)
    cell = case.make()
    assert cell.output_size == case.output_size
    assert cell.state_size == case.state_size

    # one step: structure, shapes, weights
    x = sl.placeholder(dtype, [BATCH, case.depth], name="x")
    zero = cell.zero_state(BATCH, dtype)
    nest.assert_same_structure(case.state_size, zero)
    state = nest.map_structure(
        lambda z: sl.placeholder(dtype, z.shape.as_list(), name="state"), zero
    )
    with cells.variable_scope("rnn"):
        output, new_state = cell(x, state)
    assert output.shape.as_list() == [BATCH, case.output_size]
    assert output.dtype == dtype
    nest.assert_same_structure(case.state_size, new_state)
    for size, z, s in zip(*map(nest.flatten, (case.state_size, zero, new_state))):
        assert z.shape.as_list() == s.shape.as_list() == [BATCH, size]
        assert z.dtype == s.dtype == dtype
    scope = f"rnn/{case.scope}"
    expected = {f"{scope}/{n}": list(s) for n, s in case.weights.items()}
    assert [(v.op.name, v.shape.as_list()) for v in cell.variables] == list(expected.items())
    assert all(v.dtype == dtype for v in cell.variables)
    x_value = rng.normal(size=[BATCH, case.depth]).astype(dtype)
    state_value = _random_state(case.state_size, rng, dtype)
    feed = {x: x_value, **dict(zip(nest.flatten(state), nest.flatten(state_value)))}
    fetches = {"zero": zero, "step": (output, new_state)}
    losses = [_weighted_sum([output] + nest.flatten(new_state), rng)]
    fed = [x] + nest.flatten(state)

    # the same cell over time: dynamic_rnn reuses its weights
    if with_rnn:
        x_seq = sl.placeholder(dtype, [BATCH, TIME, case.depth], name="x_seq")
        outputs, final = cells.dynamic_rnn(cell, x_seq, sequence_length=LENGTHS, dtype=dtype)
        assert outputs.shape.as_list() == [BATCH, TIME, case.output_size]
        nest.assert_same_structure(case.state_size, final)
        assert len(sl.global_variables()) == len(expected)  # no new weights
        x_seq_value = rng.normal(size=[BATCH, TIME, case.depth]).astype(dtype)
        feed[x_seq] = x_seq_value
        fetches["rnn"] = (outputs, final)
        losses.append(_weighted_sum([outputs] + nest.flatten(final), rng))
        fed.append(x_seq)

    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        loaded = _fill(sess, cell.variables, seed=1)
        weights = {name[len(scope) + 1 :]: value for name, value in loaded.items()}
        got = sess.run(fetches, feed)
        for z in nest.flatten(got["zero"]):
            np.testing.assert_array_equal(z, 0)
        _assert_all_close(got["step"], case.step(weights, x_value, state_value), dtype)
        if with_rnn:
            expected_rnn = numpy_dynamic_rnn(case, weights, x_seq_value, LENGTHS)
            _assert_all_close(got["rnn"], expected_rnn, dtype)
        if gradients:
            variables = {v: loaded[v.op.name] for v in cell.variables}
            _check_gradients(sess, losses, feed, fed, variables, rtol=1e-6, atol=1e-8)


def run_cell_test(case: CellCase, gradients: bool = True) -> None:
    """Checks one cell against the cell contract (see the module docstring): float32 values of
    one step, then in float64 one step and dynamic_rnn, values and gradients; each in a fresh
    graph.

    Args:
      case: the cell, its NumPy reference and the weights and sizes it must have.
      gradients: whether to check the float64 gradients against central differences.

    Raises:
      AssertionError: the cell breaks the contract or differs from its reference.

    >>> def basic_rnn_step(w, x, h):
    ...     out = np.tanh(np.concatenate([x, h], 1) @ w["kernel"] + w["bias"])
    ...     return out, out
    >>> run_cell_test(
    ...     CellCase(
    ...         name="basic_rnn",
    ...         make=lambda: sl.cells.BasicRNNCell(4),
    ...         step=basic_rnn_step,
    ...         weights={"kernel": (3 + 4, 4), "bias": (4,)},
    ...         depth=3,
    ...         output_size=4,
    ...         state_size=4,
    ...         scope="basic_rnn_cell",
    ...     )
    ... )
    """
    with sl.Graph().as_default():
        _check(case, np.float32, with_rnn=False, gradients=False)
    with sl.Graph().as_default():
        _check(case, np.float64, with_rnn=True, gradients=gradients)
