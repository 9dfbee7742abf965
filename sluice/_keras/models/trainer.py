"""`Trainer`: Keras's compile / fit / evaluate / predict for `Model`, over NumPy arrays.

One training step is one `session.run` of the train step (see `step_functions`), fed with one
batch. `fit`'s loop, in plain Python:

    callbacks.on_train_begin()        # BackupAndRestore may restore a checkpoint here and
                                      # move the start to (epoch, step) of that checkpoint
    for epoch in range(start_epoch, epochs):
        order = permutation seeded by (fit_state/shuffle_seed, epoch)     # if shuffle
        for step in range(start_step or 0, steps):
            logs = run(train_step, batch order[step * batch_size : (step + 1) * batch_size])
            callbacks.on_train_batch_end(step, logs)
        logs |= {"val_" + k: v for k, v in evaluate(validation data).items()}
        callbacks.on_epoch_end(epoch, logs)
    callbacks.on_train_end()
    return history

The state of a run lives in the graph's Variables (weights, optimizer state, metric totals,
`fit_state/{epoch,batch,iterations,shuffle_seed}`), so a checkpoint of the graph's variables
and the session's random-number counters resumes a run exactly.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._keras import config
from sluice._keras.callbacks.callback_list import CallbackList
from sluice._keras.distribution import distributions as distribution_lib
from sluice._keras.layers import runtime
from sluice._keras.losses import losses as losses_lib
from sluice._keras.metrics.metric import Mean
from sluice._keras.models import class_weights, data, dataset_loops, fit_state, input_rank
from sluice._keras.models import step_functions as steps_lib
from sluice._keras.optimizers import keras as optimizers_lib
from sluice._keras.utils import traceback_utils
from sluice._tf1.cells import nest
from sluice.framework.ir.graph import GraphKeys
from sluice.framework.session import RunMetadata

_ENGINES = {"auto": "auto", True: "compiled", False: "interpreted"}


class Trainer:
    """The training half of `Model` (mixed in; see the module docstring)."""

    def _init_trainer(self) -> None:
        self.optimizer: Any = None
        self.loss: Any = None
        self.compiled_loss: Any = None
        self.loss_weights: Any = None
        self._loss_weight: float | None = None
        self.compiled = False
        self._metric_identifiers: list = []
        self._metric_objects: dict = {}
        self._loss_tracker: Mean | None = None
        self._engine = "auto"
        self._distribution: Any = None
        self._reset_functions()
        self._fit_state: fit_state.FitState | None = None
        self.stop_training = False
        self.history: Any = None
        self.run_metadata: RunMetadata | None = None  # what the last step's session.run did
        self._initial_epoch: int | None = None
        self._initial_step = 0

    def _reset_functions(self) -> None:
        self._train_function: steps_lib.StepFunction | None = None
        self._test_functions: dict = {}  # input signature -> StepFunction
        self._predict_functions: dict = {}

    def compile(
        self,
        optimizer: Any = "rmsprop",
        loss: Any = None,
        loss_weights: Any = None,
        metrics: Any = None,
        weighted_metrics: Any = None,
        run_eagerly: bool = False,
        steps_per_execution: int = 1,
        jit_compile: Any = "auto",
        auto_scale_loss: bool = True,
    ) -> None:
        """Sets the optimizer, loss and metrics for fit and evaluate.

        Args:
          optimizer: a name ("adam", "sgd", "rmsprop", ...) or an `sl.optimizers` object.
          loss: a name ("mse", "sparse_categorical_crossentropy", ...), a `sl.losses.Loss`, or
            a function `(y_true, y_pred) -> per-sample losses`.
          loss_weights: a float scaling the loss (or a list, tuple or dict of one), as Keras 3;
            the logged loss is the weighted one, regularization losses are not scaled.
          metrics: a list of names ("accuracy", "mae", ...), Metrics or functions; as in
            Keras 3 they see no sample or class weights.
          jit_compile: "auto" (the compiled engine, falling back to the interpreter for a graph
            it cannot lower), True (compiled only) or False (the interpreter).
          weighted_metrics, run_eagerly, steps_per_execution, auto_scale_loss:
            accepted for Keras signatures; only their defaults are supported.
        """
        if weighted_metrics is not None:
            raise NotImplementedError("weighted_metrics are not supported.")
        loss_weight = steps_lib.loss_weight(loss_weights)
        if run_eagerly or steps_per_execution != 1:
            raise NotImplementedError(
                "run_eagerly=True and steps_per_execution > 1 are not supported."
            )
        if jit_compile not in _ENGINES:
            raise ValueError(f"jit_compile must be 'auto', True or False, got {jit_compile!r}.")
        if isinstance(metrics, dict) or any(isinstance(m, (list, tuple)) for m in metrics or []):
            raise NotImplementedError(
                "Per-output metrics (a dict or nested list) are not supported."
            )
        self._engine = _ENGINES[jit_compile]
        self._distribution = distribution_lib.distribution()  # kept for fits outside its scope
        self.optimizer = optimizers_lib.get(optimizer)
        self.loss = loss
        self.compiled_loss = steps_lib.compiled_loss(loss) if loss is not None else None
        self.loss_weights, self._loss_weight = loss_weights, loss_weight
        self._metric_identifiers = list(metrics or [])
        self._metric_objects = {}
        self._loss_tracker = Mean(name="loss")
        self._reset_functions()
        self.compiled = True
        if self._graph is not None:  # an engine other than the running session's: a new session
            runtime.runtime_for(self._graph).set_engine(self._engine)

    @property
    def metrics(self) -> list:
        """The loss tracker and the compiled metrics (once built by fit or evaluate)."""
        found = [self._loss_tracker] if self._loss_tracker is not None else []
        return found + list(self._metric_objects.values())

    @property
    def metrics_names(self) -> list[str]:
        return [m.name for m in self.metrics]

    def reset_metrics(self) -> None:
        for metric in self.metrics:
            metric.reset_state()

    # -- preparing ------------------------------------------------------------------------------
    def _require_compiled(self, what: str) -> None:
        if not self.compiled:
            raise RuntimeError(f"You must call `compile()` before calling `{what}()`.")

    def _runtime(self) -> runtime.GraphRuntime:
        rt = runtime.runtime_for(self.graph)
        rt.prefer_engine(self._engine)
        distribution = distribution_lib.distribution() or self._distribution
        if distribution is not None:
            rt.set_distribution(distribution)
        return rt

    def _distribution_in_use(self) -> Any:
        return runtime.runtime_for(self.graph).distribution

    def _initialize(self) -> None:
        self._runtime().initialize(self.graph.get_collection(GraphKeys.GLOBAL_VARIABLES))

    def _prepare_training(self, xs: list, y: np.ndarray) -> steps_lib.StepFunction:
        """The train step for data like (xs, y), built on first use (once: it owns the
        optimizer's state); everything initialised."""
        self._ensure_built(xs)
        signature = steps_lib.input_signature(self, xs)
        if self._fit_state is None:
            self._fit_state = fit_state.FitState(self.graph)
        if self._train_function is None:
            self._train_function = steps_lib.build_train_function(self, y, signature)
        elif self._train_function.signature != signature:
            raise ValueError(
                f"The training step of {self.name!r} was built for inputs shaped "
                f"{self._train_function.signature} per example; got {signature}. (Inputs with "
                "unknown dimensions are specialised to the first data given to fit.)"
            )
        self._initialize()
        return self._train_function

    def _prepare_test(self, xs: list, y: np.ndarray) -> steps_lib.StepFunction:
        """The test step for data like (xs, y), built on first use per input signature."""
        self._ensure_built(xs)
        signature = steps_lib.input_signature(self, xs)
        if signature not in self._test_functions:
            self._test_functions[signature] = steps_lib.build_test_function(self, y, signature)
        self._initialize()
        return self._test_functions[signature]

    def _run_step(self, function: steps_lib.StepFunction, arrays: list) -> Any:
        feed = {}
        for placeholder, value in zip(function.feeds, arrays):
            if value is None:  # sample weights not given
                value = np.ones([len(arrays[0])], np.float32)
            feed[placeholder] = value
        metadata = RunMetadata()
        values = runtime.runtime_for(self.graph).run(function.fetches, feed, run_metadata=metadata)
        self.run_metadata = metadata
        if isinstance(function.fetches, dict):  # the session returns dicts with sorted keys
            return {name: values[name] for name in function.fetches}
        return values

    def _input_arrays(self, x: Any, what: str) -> list[np.ndarray]:
        names = self._input_names if self._input_struct is not None else None
        return input_rank.adjust_arrays(self, data.input_arrays(x, names, what))

    def _data(self, x: Any, y: Any, sample_weight: Any, what: str) -> list:
        xs = self._input_arrays(x, what)
        if y is None:
            raise ValueError(
                f"{what}: targets `y` are needed (datasets and generators are not supported)."
            )
        sw = None if sample_weight is None else np.asarray(sample_weight, np.float32)
        arrays = xs + [data.target_array(y), sw]
        data.require_samples(data.num_samples(arrays), what)
        return arrays

    def _check_labels(self, y: np.ndarray) -> None:
        """A batch's targets checked on the host before they are fed (sparse class ids in range:
        see `losses.check_sparse_labels`)."""
        outputs = nest.flatten(self._inference_outputs)
        classes = outputs[0].shape[-1] if outputs and outputs[0].shape.rank else None
        losses_lib.check_sparse_labels(self.compiled_loss, y, classes)

    # -- what callbacks read and change (BackupAndRestore, LearningRateScheduler) -------------
    def state_variables(self) -> list:
        """Every Variable of the graph: weights, optimizer state, metric totals, fit state."""
        return list(self.graph.get_collection(GraphKeys.GLOBAL_VARIABLES))

    def fit_position(self) -> tuple[int, int]:
        """(epoch, batches done in it) as recorded in the `fit_state` Variables."""
        state = self._fit_state
        epoch, batch = runtime.runtime_for(self.graph).read([state.epoch, state.batch])
        return int(epoch), int(batch)

    def resume_fit_at(self, epoch: int, step: int) -> None:
        """Makes the running `fit` start at `step` of `epoch` (called from on_train_begin)."""
        self._initial_epoch, self._initial_step = int(epoch), int(step)

    def steps_trained(self) -> int:
        """The number of training steps the model has run (over all fits)."""
        return int(runtime.runtime_for(self.graph).read([self._fit_state.iterations])[0])

    def _learning_rate_variable(self) -> Any:
        variable = fit_state.optimizer_rate_variable(self.optimizer)
        if variable is None:
            raise ValueError(
                "The optimizer's learning rate cannot be changed during fit: it is not a number "
                f"held in a Variable ({self.optimizer!r}). Use an sl.optimizers optimizer with a "
                "float learning_rate."
            )
        return variable

    def get_learning_rate(self) -> float:
        """The optimizer's learning rate, read from its Variable."""
        return float(runtime.runtime_for(self.graph).read([self._learning_rate_variable()])[0])

    def set_learning_rate(self, value: float) -> None:
        """Writes the optimizer's learning rate into its Variable (the next step uses it)."""
        runtime.runtime_for(self.graph).write([self._learning_rate_variable()], [value])

    # -- fit ------------------------------------------------------------------------------------
    @traceback_utils.filter_traceback
    def fit(
        self,
        x: Any = None,
        y: Any = None,
        batch_size: int | None = None,
        epochs: int = 1,
        verbose: Any = "auto",
        callbacks: list | None = None,
        validation_split: float = 0.0,
        validation_data: Any = None,
        shuffle: bool = True,
        class_weight: Any = None,
        sample_weight: Any = None,
        initial_epoch: int = 0,
        steps_per_epoch: int | None = None,
        validation_steps: int | None = None,
        validation_batch_size: int | None = None,
        validation_freq: int = 1,
    ) -> Any:
        """Trains for `epochs` epochs over NumPy arrays; returns the `History`.

        Args:
          x: an array, a list of arrays (one per input) or a dict by input name.
          y: the targets (one array).
          batch_size: samples per step, a positive integer (default 32).
          epochs: the index of the last epoch to run (with `initial_epoch`, the first); with
            nothing to run, fit returns an empty History.
          verbose: "auto" or 1 (a progress bar; one line per epoch when the output is not a
            terminal), 2 (one line per epoch), 0 (silent).
          callbacks: `sl.callbacks` objects.
          validation_split: the fraction of the data (taken from the end) to validate on.
          validation_data: (x, y) or (x, y, sample_weight) to validate on after each epoch.
          shuffle: reorder the samples each epoch (a permutation fixed by the seed and epoch).
          sample_weight: per-sample loss weights.
          initial_epoch: the epoch to start from.
          validation_batch_size, validation_freq: as in Keras.
          class_weight: {class index: weight}, Keras 3's: each training sample's loss (and
            metrics) weighs the weight of its class (1 for a class not in the dict), read from
            its target: a class id, a 0/1 label or a one-hot row (see `class_weights`); not
            with `sample_weight`, nor for a model with several outputs. Validation data is not
            weighted.
          steps_per_epoch, validation_steps: with a `sl.data.Dataset` `x` only (see
            `dataset_loops`): batches per epoch (default: one pass) and per validation.

        `x` may be a `sl.data.Dataset` of (x, y) or (x, y, sample_weight) batches, as in Keras;
        then `y`, `batch_size`, `sample_weight` and `validation_split` must not be given.

        Raises:
          ValueError: for a batch size that is not a positive integer, or empty data.
          InvalidArgumentError: for a sparse class id outside [0, classes) (checked per batch).
        """
        self._require_compiled("fit")
        epochs = config.capped_epochs(epochs)  # keras.config.set_max_epochs
        if dataset_loops.is_dataset(x):  # batches, targets and epoch length come from it
            dataset_loops.reject_array_arguments(
                "fit",
                batch_size=batch_size,
                y=y,
                sample_weight=sample_weight,
                validation_split=validation_split,
            )
            if class_weight is not None:  # checked now; weighs each batch as it comes
                class_weights.standardize(class_weight)
                class_weights.check_single_output(self, None)
            return dataset_loops.fit(
                self,
                x,
                epochs,
                1 if verbose == "auto" else int(verbose),
                callbacks,
                validation_data,
                initial_epoch,
                steps_per_epoch,
                validation_steps,
                validation_freq,
                class_weight,
            )
        batch_size = data.batch_size_arg(batch_size)
        validation_batch_size = data.batch_size_arg(
            validation_batch_size, "validation_batch_size", default=batch_size
        )
        if steps_per_epoch is not None or validation_steps is not None:
            raise NotImplementedError(
                "steps_per_epoch and validation_steps only with a sl.data.Dataset."
            )
        if class_weight is not None:
            class_weights.refuse_with_sample_weight(sample_weight)
            class_weights.check_single_output(self, y)
        arrays = self._data(x, y, sample_weight, "fit")
        val_arrays = None
        if validation_data is not None:
            vx, vy, *vsw = validation_data
            val_arrays = self._data(vx, vy, vsw[0] if vsw else None, "validation_data")
        elif validation_split:
            arrays, val_arrays = data.split_validation(arrays, validation_split)
        if class_weight is not None:  # after the split: as in Keras, validation is unweighted
            arrays[-1] = class_weights.class_weight_to_sample_weights(arrays[-2], class_weight)
        n = data.num_samples(arrays)
        steps = data.num_batches(n, batch_size)
        inputs = len(arrays) - 2
        train_function = self._prepare_training(arrays[:inputs], arrays[inputs])
        data.check_split_batches(n, batch_size, self._distribution_in_use(), "fit")
        test_function = None
        if val_arrays is not None:
            test_function = self._prepare_test(val_arrays[:inputs], val_arrays[inputs])
            data.check_split_batches(
                data.num_samples(val_arrays),
                validation_batch_size,
                self._distribution_in_use(),
                "fit's validation data",
            )
        verbose = 1 if verbose == "auto" else int(verbose)
        callbacks = CallbackList(
            callbacks, add_history=True, add_progbar=verbose != 0, model=self,
            verbose=verbose, epochs=epochs, steps=steps,
        )  # fmt: skip
        rt = self._runtime()
        state = self._fit_state
        self.history = callbacks.history  # this fit's, even when no epoch runs
        self.stop_training = False
        self._initial_epoch, self._initial_step = None, 0
        callbacks.on_train_begin()
        start_epoch = initial_epoch if self._initial_epoch is None else self._initial_epoch
        seed = int(rt.read([state.shuffle_seed])[0])
        logs: dict = {}
        for epoch in range(start_epoch, epochs):
            resumed = epoch == start_epoch and self._initial_epoch is not None
            first = self._initial_step if resumed else 0
            rt.write([state.epoch, state.batch], [epoch, first])
            if first == 0:
                self.reset_metrics()
            callbacks.on_epoch_begin(epoch)
            order = data.epoch_order(n, seed, epoch, shuffle)
            logs = self._current_logs() if first else {}
            for step in range(first, steps):
                callbacks.on_train_batch_begin(step)
                batch = data.take(arrays, data.batch_indices(order, batch_size, step))
                self._check_labels(batch[inputs])
                logs = _floats(self._run_step(train_function, batch))
                callbacks.on_train_batch_end(step, logs)
                if self.stop_training:
                    break
            epoch_logs = dict(logs)
            if val_arrays is not None and (epoch + 1) % validation_freq == 0:
                val_logs = self._evaluate_arrays(
                    test_function, val_arrays, validation_batch_size, callbacks
                )
                epoch_logs.update({f"val_{k}": v for k, v in val_logs.items()})
            rt.write([state.epoch, state.batch], [epoch + 1, 0])
            callbacks.on_epoch_end(epoch, epoch_logs)
            logs = epoch_logs
            if self.stop_training:
                break
        callbacks.on_train_end(logs)
        return callbacks.history

    def _current_logs(self) -> dict:
        """The running loss and metrics, read from their Variables (a resumed epoch's logs)."""
        return {metric.name: metric.value() for metric in self.metrics}

    # -- evaluate / predict ---------------------------------------------------------------------
    def _evaluate_arrays(
        self,
        function: steps_lib.StepFunction,
        arrays: list,
        batch_size: int,
        callbacks: CallbackList,
    ) -> dict:
        n = data.num_samples(arrays)
        self.reset_metrics()
        callbacks.on_test_begin()
        logs: dict = {}
        order = np.arange(n)
        for step in range(data.num_batches(n, batch_size)):
            callbacks.on_test_batch_begin(step)
            batch = data.take(arrays, data.batch_indices(order, batch_size, step))
            self._check_labels(batch[-2])
            logs = _floats(self._run_step(function, batch))
            callbacks.on_test_batch_end(step, logs)
        callbacks.on_test_end(logs)
        return logs

    @traceback_utils.filter_traceback
    def evaluate(
        self,
        x: Any = None,
        y: Any = None,
        batch_size: int | None = None,
        verbose: Any = "auto",
        sample_weight: Any = None,
        steps: int | None = None,
        callbacks: list | None = None,
        return_dict: bool = False,
    ) -> Any:
        """The loss and metrics over (x, y) in inference mode: a scalar (loss only), a list
        [loss, metric, ...], or a dict with `return_dict=True`.

        Raises:
          ValueError: for a batch size that is not a positive integer, or empty data.
        """
        self._require_compiled("evaluate")
        if dataset_loops.is_dataset(x):
            dataset_loops.reject_array_arguments(
                "evaluate", batch_size=batch_size, y=y, sample_weight=sample_weight
            )
            logs = dataset_loops.evaluate(
                self, x, 1 if verbose == "auto" else int(verbose), steps, callbacks
            )
            return _as_result(logs, return_dict)
        batch_size = data.batch_size_arg(batch_size)
        arrays = self._data(x, y, sample_weight, "evaluate")
        inputs = len(arrays) - 2
        function = self._prepare_test(arrays[:inputs], arrays[inputs])
        data.check_split_batches(
            data.num_samples(arrays), batch_size, self._distribution_in_use(), "evaluate"
        )
        verbose = 1 if verbose == "auto" else int(verbose)
        callback_list = CallbackList(
            callbacks, add_progbar=verbose != 0, model=self, verbose=verbose, epochs=1,
            steps=data.num_batches(data.num_samples(arrays), batch_size),
        )  # fmt: skip
        logs = self._evaluate_arrays(function, arrays, batch_size, callback_list)
        return _as_result(logs, return_dict)

    @traceback_utils.filter_traceback
    def predict(
        self,
        x: Any,
        batch_size: int | None = None,
        verbose: Any = "auto",
        steps: int | None = None,
        callbacks: list | None = None,
    ) -> Any:
        """The model's outputs (inference mode) for `x`, computed batch by batch: an array, or a
        list of arrays for a model with several outputs. Zero samples give arrays of shape
        (0, ...).

        Raises:
          ValueError: for a batch size that is not a positive integer.
        """
        if dataset_loops.is_dataset(x):
            dataset_loops.reject_array_arguments("predict", batch_size=batch_size)
            return dataset_loops.predict(
                self,
                x,
                1 if verbose == "auto" else int(verbose),
                steps,
                callbacks,
                self._predict_batch,
            )
        batch_size = data.batch_size_arg(batch_size)
        xs = self._input_arrays(x, "predict")
        self._ensure_built(xs)
        signature = steps_lib.input_signature(self, xs)
        if signature not in self._predict_functions:
            self._predict_functions[signature] = steps_lib.build_predict_function(self, signature)
        function = self._predict_functions[signature]
        self._initialize()
        n = data.num_samples(xs)
        total = data.num_batches(n, batch_size)
        verbose = 1 if verbose == "auto" else int(verbose)
        callback_list = CallbackList(
            callbacks, add_progbar=verbose != 0, model=self, verbose=verbose, epochs=1, steps=total
        )
        callback_list.on_predict_begin()
        distribution = self._distribution_in_use()
        shards = distribution.batch_shards if distribution is not None else 1
        pieces = []
        for step in range(total):
            callback_list.on_predict_batch_begin(step)
            batch = [a[step * batch_size : (step + 1) * batch_size] for a in xs]
            pieces.append(_predict_padded(self, function, batch, shards))
            callback_list.on_predict_batch_end(step, {"outputs": pieces[-1]})
        callback_list.on_predict_end()
        structure = function.fetches
        if not pieces:
            return self._empty_outputs(function, xs)
        columns = list(zip(*[nest.flatten(p) for p in pieces]))
        flat = [np.concatenate(c, axis=0) for c in columns]
        return nest.pack_sequence_as(structure, flat)

    def _predict_batch(self, xs: list) -> Any:
        """The outputs for one batch of inputs (a dataset's), its step built on first use."""
        self._ensure_built(xs)
        signature = steps_lib.input_signature(self, xs)
        if signature not in self._predict_functions:
            self._predict_functions[signature] = steps_lib.build_predict_function(self, signature)
            self._initialize()
        distribution = self._distribution_in_use()
        shards = distribution.batch_shards if distribution is not None else 1
        return _predict_padded(self, self._predict_functions[signature], xs, shards)

    def _empty_outputs(self, function: steps_lib.StepFunction, xs: list) -> Any:
        """predict's outputs for zero samples: arrays of shape (0, ...), from the outputs' static
        shapes, or by running the step on the empty batch when a dimension is not static."""
        outputs = nest.flatten(function.fetches)
        if all(t.shape.rank is not None and t.shape[1:].is_fully_defined() for t in outputs):
            flat = [np.zeros((0, *t.shape.as_list()[1:]), t.dtype) for t in outputs]
            return nest.pack_sequence_as(function.fetches, flat)
        return self._run_step(function, xs)

    # -- single batches ---------------------------------------------------------------------------
    def train_on_batch(
        self,
        x: Any,
        y: Any = None,
        sample_weight: Any = None,
        class_weight: Any = None,
        return_dict: bool = False,
    ) -> Any:
        """One training step on one batch; returns the running loss (and metrics).
        `class_weight` as in `fit`."""
        self._require_compiled("train_on_batch")
        if class_weight is not None:
            class_weights.refuse_with_sample_weight(sample_weight)
            class_weights.check_single_output(self, y)
        arrays = self._data(x, y, sample_weight, "train_on_batch")
        if class_weight is not None:
            arrays[-1] = class_weights.class_weight_to_sample_weights(arrays[-2], class_weight)
        inputs = len(arrays) - 2
        function = self._prepare_training(arrays[:inputs], arrays[inputs])
        self._check_labels(arrays[inputs])
        return _as_result(_floats(self._run_step(function, arrays)), return_dict)

    def test_on_batch(
        self, x: Any, y: Any = None, sample_weight: Any = None, return_dict: bool = False
    ) -> Any:
        self._require_compiled("test_on_batch")
        arrays = self._data(x, y, sample_weight, "test_on_batch")
        inputs = len(arrays) - 2
        function = self._prepare_test(arrays[:inputs], arrays[inputs])
        self._check_labels(arrays[inputs])
        return _as_result(_floats(self._run_step(function, arrays)), return_dict)

    def predict_on_batch(self, x: Any) -> Any:
        return self.predict(
            x,
            batch_size=max(1, data.num_samples(self._input_arrays(x, "predict_on_batch"))),
            verbose=0,
        )


def _predict_padded(
    model: Trainer, function: steps_lib.StepFunction, batch: list, shards: int
) -> Any:
    """The outputs for `batch`; under a distribution a batch that does not split evenly over
    the devices is padded with copies of its last sample, whose outputs are dropped."""
    size = len(batch[0])
    pad = -size % shards
    if not pad:
        return model._run_step(function, batch)
    padded = [np.concatenate([a, np.repeat(a[-1:], pad, axis=0)]) for a in batch]
    outputs = model._run_step(function, padded)
    return nest.map_structure(lambda out: out[:size], outputs)


def _floats(values: dict) -> dict:
    return {name: float(value) for name, value in values.items()}


def _as_result(logs: dict, return_dict: bool) -> Any:
    if return_dict:
        return logs
    values = list(logs.values())
    return values[0] if len(values) == 1 else values
