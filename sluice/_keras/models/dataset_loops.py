"""`fit`, `evaluate` and `predict` over a `sl.data.Dataset`, as tf.keras reads one.

The dataset yields batches: `x`, `(x,)`, `(x, y)` or `(x, y, sample_weight)` (Keras's
`unpack_x_y_sample_weight`); a model that overrides `train_step` (`test_step`,
`predict_step`) gets each element as the dataset yields it. Its elements are made on a
background thread one batch ahead (`iterators.host_elements`) and fed to the same compiled
steps as NumPy batches. One
epoch is one pass over the dataset, unless `steps_per_epoch` is given: then one pass continues
across epochs. As in tf.keras 1.15, an infinite dataset needs `steps_per_epoch` (`steps`), and
a dataset of known length must hold `steps_per_epoch * epochs` batches; one of unknown length
(a `filter`, a generator) that runs out first ends training with a warning. A fit resumed by
BackupAndRestore skips the batches done before the interruption, so it ends with the weights
of an uninterrupted fit. The progress bar shows an unknown step count until the first pass has
been counted.
"""

from __future__ import annotations

import itertools
import logging
from typing import Any

import numpy as np

from sluice._keras import config
from sluice._keras.callbacks.callback_list import CallbackList
from sluice._keras.models import class_weights, data
from sluice._keras.models import step_functions as steps_lib
from sluice._tf1.cells import nest
from sluice._tf1.data.dataset import INFINITE, Dataset
from sluice._tf1.data.iterators import host_elements

_logger = logging.getLogger("sluice")


def is_dataset(x: Any) -> bool:
    return isinstance(x, Dataset)


def reject_array_arguments(what: str, **arguments: Any) -> None:
    """Keras's errors for arguments that only arrays take."""
    for name, value in arguments.items():
        if value is None or value is False or isinstance(value, float) and value == 0.0:
            continue
        raise ValueError(
            f"{what}: the `{name}` argument is not supported when using a "
            f"sl.data.Dataset as input (got {name}={value!r}): the dataset gives "
            "the batches and their targets."
        )


def unpack(element: Any) -> tuple[Any, Any, Any]:
    """(x, y, sample_weight) of one batch, as Keras unpacks it (a namedtuple is one `x`)."""
    if isinstance(element, tuple) and not hasattr(element, "_fields") and len(element) <= 3:
        return data.unpack_x_y_sample_weight(element)
    return element, None, None


def batch_data(
    model: Any, kind: str, element: Any, what: str, class_weight: Any = None
) -> tuple[list, Any]:
    """(arrays, structure) of one element for a `kind` step (see `Trainer._step_data`): the
    element itself for a step the model overrides (with class weights, repacked as
    (x, y, sample_weight)), else the built-in layout. Keras 3 weighs each batch of a dataset
    by its targets."""
    if class_weight is not None:
        class_weights.check_single_output(model, unpack(element)[1])
    if model._overrides(kind) and class_weight is None:
        structure = data.to_arrays(element)
        return model._checked(nest.flatten(structure), kind, what), structure
    x, y, sample_weight = unpack(element)
    if kind == "predict":
        y = sample_weight = None
    return model._step_data(kind, x, y, sample_weight, what, class_weight)


def check_steps(dataset: Dataset, steps: int | None, epochs: int, steps_name: str) -> None:
    """tf.keras 1.15's checks of a step count against the dataset's cardinality.

    Raises:
      ValueError: an infinite dataset without a step count (it would never end), or a finite
        dataset of known length with fewer batches than `steps * epochs`.
    """
    size = dataset.static_cardinality()
    if size == INFINITE and steps is None:
        raise ValueError(
            "When passing an infinitely repeating dataset, you must specify the "
            f"`{steps_name}` argument."
        )
    if size >= 0 and steps is not None and steps * epochs > size:
        if epochs > 1:
            raise ValueError(
                f"The dataset you passed contains {size} batches, but you passed "
                f"`epochs={epochs}` and `{steps_name}={steps}`, which is a total of "
                f"{steps * epochs} steps. We cannot draw that many steps from this "
                f"dataset. We suggest to set `{steps_name}={size // epochs}`."
            )
        raise ValueError(
            f"The dataset you passed contains {size} batches, but you passed "
            f"`{steps_name}={steps}`. We cannot draw that many steps from this "
            f"dataset. We suggest to set `{steps_name}={size}`."
        )


def fit(
    model: Any,
    dataset: Dataset,
    epochs: int,
    verbose: int,
    callbacks: list | None,
    validation_data: Any,
    initial_epoch: int,
    steps_per_epoch: int | None,
    validation_steps: int | None,
    validation_freq: int,
    class_weight: Any = None,
) -> Any:
    """`model.fit(dataset, ...)`; returns the History. `class_weight` weighs the training
    batches (see `class_weights`)."""
    if steps_per_epoch is not None:
        steps_per_epoch = data.batch_size_arg(steps_per_epoch, "steps_per_epoch")
    check_steps(dataset, steps_per_epoch, epochs, "steps_per_epoch")
    steps_per_epoch = config.capped_steps(steps_per_epoch)  # keras.config.set_max_steps_per_epoch
    if is_dataset(validation_data):
        check_steps(validation_data, validation_steps, 1, "validation_steps")
    source = host_elements(dataset)
    first = next(source, None)
    if first is None:
        raise ValueError("fit: the dataset is empty: it yields no batch.")
    arrays, structure = batch_data(model, "train", first, "fit", class_weight)
    train_function = model._prepare_training(arrays, structure)
    source = itertools.chain([first], source)  # the batch read to build the model comes first
    callback_list = CallbackList(
        callbacks,
        add_history=True,
        add_progbar=verbose != 0,
        model=model,
        verbose=verbose,
        epochs=epochs,
        steps=steps_per_epoch,
    )
    rt = model._runtime()
    state = model._fit_state
    model.history = callback_list.history
    model.stop_training = False
    model._initial_epoch, model._initial_step = None, 0
    callback_list.on_train_begin()
    start_epoch = initial_epoch if model._initial_epoch is None else model._initial_epoch
    logs: dict = {}
    for epoch in range(start_epoch, epochs):
        resumed = epoch == start_epoch and model._initial_epoch is not None
        step = model._initial_step if resumed else 0
        rt.write([state.epoch, state.batch], [epoch, step])
        if step == 0:
            model.reset_metrics()
        callback_list.on_epoch_begin(epoch)
        if steps_per_epoch is None and epoch > start_epoch:
            source = host_elements(dataset)  # a new pass
        logs = model._current_logs() if step else {}
        if resumed:  # BackupAndRestore: the batches done before the interruption are not redone
            done = step + (epoch * steps_per_epoch if steps_per_epoch is not None else 0)
            source = itertools.islice(source, done, None)
        while steps_per_epoch is None or step < steps_per_epoch:
            element = next(source, None)
            if element is None:
                if steps_per_epoch is not None:
                    _logger.warning(
                        "sluice: your input ran out of data; interrupting training. Make sure "
                        "the dataset can generate at least steps_per_epoch * epochs batches "
                        "(%d here); use repeat() when building it.",
                        steps_per_epoch * epochs,
                    )
                    model.stop_training = True
                break
            callback_list.on_train_batch_begin(step)
            batch, _ = batch_data(model, "train", element, "fit", class_weight)
            model._check_batch(batch, structure)
            logs = steps_lib.python_logs(model._run_step(train_function, batch))
            callback_list.on_train_batch_end(step, logs)
            step += 1
            if model.stop_training:
                break
        if callback_list.params.get("steps") is None:
            callback_list.params["steps"] = step  # the pass has been counted: later bars know it
        epoch_logs = dict(logs)
        if validation_data is not None and (epoch + 1) % validation_freq == 0:
            val_logs = _evaluate(model, validation_data, validation_steps, callback_list)
            epoch_logs.update({f"val_{k}": v for k, v in val_logs.items()})
        rt.write([state.epoch, state.batch], [epoch + 1, 0])
        callback_list.on_epoch_end(epoch, epoch_logs)
        logs = epoch_logs
        if model.stop_training:
            break
    callback_list.on_train_end(logs)
    return callback_list.history


def _evaluate(model: Any, dataset: Any, steps: int | None, callback_list: CallbackList) -> dict:
    if not is_dataset(dataset):
        vx, vy, vsw = data.unpack_x_y_sample_weight(dataset)
        arrays, structure = model._step_data("test", vx, vy, vsw, "validation_data")
        function = model._prepare_test(arrays, structure)
        return model._evaluate_arrays(function, arrays, structure, 32, callback_list)
    model.reset_metrics()
    callback_list.on_test_begin()
    logs: dict = {}
    functions: dict = {}
    for step, element in enumerate(host_elements(dataset)):
        if steps is not None and step >= steps:
            break
        callback_list.on_test_batch_begin(step)
        batch, structure = batch_data(model, "test", element, "evaluate")
        signature = (
            tuple(None if a is None else a.shape[1:] for a in batch)
            if structure is None
            else data.structure_signature(structure)
        )
        if signature not in functions:
            functions[signature] = model._prepare_test(batch, structure)
        model._check_batch(batch, structure)
        logs = steps_lib.python_logs(model._run_step(functions[signature], batch))
        callback_list.on_test_batch_end(step, logs)
    callback_list.on_test_end(logs)
    return logs


def evaluate(
    model: Any, dataset: Dataset, verbose: int, steps: int | None, callbacks: list | None
) -> dict:
    """`model.evaluate(dataset)`: the logs of one pass (or `steps` batches)."""
    check_steps(dataset, steps, 1, "steps")
    steps = config.capped_steps(steps)  # keras.config.set_max_steps_per_epoch
    callback_list = CallbackList(
        callbacks, add_progbar=verbose != 0, model=model, verbose=verbose, epochs=1, steps=steps
    )
    return _evaluate(model, dataset, steps, callback_list)


def predict(
    model: Any,
    dataset: Dataset,
    verbose: int,
    steps: int | None,
    callbacks: list | None,
    run_batch: Any,
) -> Any:
    """`model.predict(dataset)`: the outputs of every batch (its `x`), concatenated.
    `run_batch(xs)` computes one batch's outputs."""
    check_steps(dataset, steps, 1, "steps")
    steps = config.capped_steps(steps)  # keras.config.set_max_steps_per_epoch
    callback_list = CallbackList(
        callbacks, add_progbar=verbose != 0, model=model, verbose=verbose, epochs=1, steps=steps
    )
    callback_list.on_predict_begin()
    pieces = []
    for step, element in enumerate(host_elements(dataset)):
        if steps is not None and step >= steps:
            break
        callback_list.on_predict_batch_begin(step)
        pieces.append(run_batch(element))
        callback_list.on_predict_batch_end(step, {"outputs": pieces[-1]})
    callback_list.on_predict_end()
    if not pieces:
        raise ValueError("predict: the dataset is empty: it yields no batch.")
    columns = list(zip(*[nest.flatten(p) for p in pieces]))
    flat = [np.concatenate(c, axis=0) for c in columns]
    return nest.pack_sequence_as(pieces[0], flat)
