"""The graph functions of a compiled model, each traced once into the model's graph and run
once per batch (`step_trace` says how a step is traced):

    train step:   `model.train_step(data)`, then the fit position (`fit_state/batch`,
                  `fit_state/iterations`) -> logs; one session.run runs the forward pass, the
                  loss, the optimizer update, the layers' updates, the metric updates
    test step:    `model.test_step(data)` -> logs
    predict step: `model.predict_step(data)` -> outputs

The built-in steps (the `Trainer` methods) are fed one placeholder per model input (the model's
own when its inputs have static shapes), the targets and the sample weights (ones when none are
given), so one step serves weighted and unweighted data. A model that overrides a step is fed
Keras's structure of the data (`data.pack_x_y_sample_weight`), one placeholder per array.

The logs are read after every update. With the compiled engine, each step is one jitted
function: batches of the same shape reuse it, and a last, smaller batch compiles it once more
for that shape.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from sluice._keras.models import data as data_lib
from sluice._keras.models import step_trace
from sluice._tf1.cells import nest
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.core import core_ops


@dataclasses.dataclass
class StepFunction:
    """Placeholders to feed, one per data array in order (None: an array the step does not
    read), what to fetch, and the signature it was traced for (the built-in steps: None when
    they use the model's own input placeholders). A train or test step also keeps the logs that
    are Python values and the names of all its logs in the order the step returned them."""

    feeds: list[Tensor | None]
    fetches: Any
    signature: Any = None
    values: dict | None = None
    order: list[str] | None = None

    def results(self, fetched: Any) -> Any:
        """The step's logs (or predict's outputs) from what the session fetched."""
        if self.order is None:
            return fetched
        if not isinstance(self.fetches, dict):  # only Python values: the fetch was the updates
            fetched = {}
        return {name: fetched.get(name, self.values.get(name)) for name in self.order}


def python_logs(values: dict) -> dict:
    """Logs as Python floats where they are one number (else as fetched), as Keras's
    `pythonify_logs`."""
    return {name: _python_value(value) for name, value in values.items()}


def _python_value(value: Any) -> Any:
    if isinstance(value, (np.ndarray, np.generic, int, float)) and np.size(value) == 1:
        return float(np.reshape(value, ()))
    return value


def input_signature(model: Any, xs: list[np.ndarray]) -> tuple | None:
    """None when the model's inputs have static shapes (but the batch); else the data's
    per-example shapes, for which the steps are specialised.

    A step over inputs with an unknown dimension besides the batch (e.g. the time axis of
    `Input((None,))`) would hold while loops of unknown length, which the compiled engine
    cannot differentiate; specialised placeholders with the data's shapes make them static.
    """
    flat = nest.flatten(model._input_struct)
    if all(t.shape.rank is not None and t.shape[1:].is_fully_defined() for t in flat):
        return None
    return tuple(tuple(a.shape[1:]) for a in xs)


def _step_inputs(model: Any, signature: tuple | None) -> Any:
    """The placeholders a step feeds: the model's own, or new ones of the signature's shapes."""
    if signature is None:
        return model._input_struct
    flat = nest.flatten(model._input_struct)
    with model.graph.name_scope("inputs"):
        new = [
            core_ops.placeholder(t.dtype, [None] + list(shape), name=f"input_{i}")
            for i, (t, shape) in enumerate(zip(flat, signature))
        ]
    return nest.pack_sequence_as(model._input_struct, new)


def _target_placeholder(y: np.ndarray, name: str) -> Tensor:
    dtype = (
        dtypes.int32 if np.issubdtype(y.dtype, np.integer) or y.dtype == bool else dtypes.float32
    )
    return core_ops.placeholder(dtype, [None] + list(y.shape[1:]), name=name)


def _builtin_data(model: Any, kind: str, arrays: list, signature: tuple | None) -> tuple:
    """(feeds, data) of a built-in step: `(inputs,)` for predict, else `(inputs, y_true,
    sample_weight)`. The arrays after the inputs are the targets, one per output (None for an
    output without), then the sample weights; y_true is one placeholder for one output, a list
    of one per output (None where no target is given) for several, and None when the data has
    no targets at all (a loss from `add_loss`)."""
    inputs = _step_inputs(model, signature)
    feeds = nest.flatten(inputs)
    if kind == "predict":
        return feeds, (inputs,)
    targets = arrays[len(feeds) : -1]
    if len(targets) == 1:
        y_true = None if targets[0] is None else _target_placeholder(targets[0], "y_true")
        placeholders = [y_true]
    else:
        placeholders = [
            None if y is None else _target_placeholder(y, f"y_true_{i}")
            for i, y in enumerate(targets)
        ]
        y_true = None if all(p is None for p in placeholders) else placeholders
    sample_weight = core_ops.placeholder(dtypes.float32, [None], name="sample_weight")
    return feeds + placeholders + [sample_weight], (inputs, y_true, sample_weight)


def _structured_data(model: Any, structure: Any, what: str) -> tuple:
    """(feeds, data) of an overridden step: one placeholder per array of `structure`, with the
    array's per-example shape, packed as `structure` is."""
    feeds = []
    with model.graph.name_scope("data"):
        for i, array in enumerate(nest.flatten(structure)):
            if array.ndim == 0:
                raise ValueError(
                    f"{what}: every array of the data needs a batch dimension; array {i} of "
                    f"{str(nest.map_structure(lambda _: '.', structure))} is a scalar."
                )
            dtype = data_lib.leaf_dtype(array, what)
            shape = [None] + list(array.shape[1:])
            feeds.append(core_ops.placeholder(dtype, shape, name=f"data_{i}"))
    return feeds, nest.pack_sequence_as(structure, feeds)


def build_step(model: Any, kind: str, arrays: list, structure: Any, signature: Any) -> StepFunction:
    """Traces `model.<kind>_step` ("train", "test" or "predict") for data like `arrays` (see the
    module docstring); `structure` None: a built-in step's layout, with `signature` from
    `input_signature`."""
    g = model.graph
    step = f"{type(model).__name__}.{kind}_step"
    with g.as_default(), g.name_scope(f"{kind}_step"):
        if structure is None:
            feeds, data = _builtin_data(model, kind, arrays, signature)
        else:
            feeds, data = _structured_data(model, structure, step)
            if kind == "train":  # the learning rate in a Variable, before the step uses it
                model._use_graph_optimizer()
            if kind != "predict":
                model._build_compiled_metrics(data)
        with step_trace.tracing(g) as trace:
            result = getattr(model, f"{kind}_step")(data)
            if kind == "train":
                one = np.int64(1)
                model._fit_state.batch.assign_add(one, read_value=False)
                model._fit_state.iterations.assign_add(one, read_value=False)
        if kind == "predict":
            outputs = step_trace.outputs_after(g, result, trace.updates)
            return StepFunction(feeds, outputs, signature)
        tensors, values, order = step_trace.log_fetches(g, result, trace.updates, step)
        if not tensors:  # the step still runs its updates
            tensors = core_ops.group(*trace.updates)
    return StepFunction(feeds, tensors, signature, values, order)
