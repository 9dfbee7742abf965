"""`Trainer`: Keras's compile / fit / evaluate / predict for `Model`, over NumPy arrays.

One training step is one `session.run` of the train step (see `step_functions`), fed with one
batch. The step is `train_step(data)`, traced once into the model's graph: the built-in one
(forward pass, `compute_loss`, the optimizer, `compute_metrics`), or a subclass's own, written
as for Keras on TensorFlow (a `GradientTape`, `self.optimizer.apply_gradients`, metric
trackers, a dict of logs). `test_step` and `predict_step` are traced the same way. `fit`'s
loop, in plain Python:

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

Every metric of `model.metrics` (the loss tracker, the compiled metrics and any `Metric` held
as an attribute) is reset at the start of each epoch and of each evaluation.

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
from sluice._keras.models import (
    class_weights,
    compile_utils,
    data,
    dataset_loops,
    fit_state,
    input_rank,
)
from sluice._keras.models import step_functions as steps_lib
from sluice._keras.models.py_dataset_adapter import as_dataset as py_dataset_as_dataset
from sluice._keras.models.training_steps import TrainingSteps
from sluice._keras.optimizers import keras as optimizers_lib
from sluice._keras.utils import traceback_utils
from sluice._tf1.cells import nest
from sluice.framework.ir.graph import GraphKeys
from sluice.framework.session import RunMetadata

_ENGINES = {"auto": "auto", True: "compiled", False: "interpreted"}


class Trainer(TrainingSteps):
    """The training half of `Model` (mixed in; see the module docstring)."""

    def _init_trainer(self) -> None:
        self.optimizer: Any = None
        self.loss: Any = None
        self._compile_loss: Any = None
        self.loss_weights: Any = None
        self.compiled = False
        self._metric_identifiers: Any = []
        self._compile_metrics: compile_utils.CompileMetrics | None = None
        self._weighted_metric_identifiers: Any = None
        self._steps_per_execution = 1
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
        # kind ("train", "test", "predict") -> {signature: StepFunction}
        self._step_functions: dict[str, dict] = {"train": {}, "test": {}, "predict": {}}

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
            a function `(y_true, y_pred) -> per-sample losses`; for several outputs, one for
            all, a list of one per output or a dict by output name (see `compile_utils`).
          loss_weights: a float scaling the loss (or a list, tuple or dict of one per loss),
            as Keras 3; the logged loss is the weighted one, regularization losses are not
            scaled.
          metrics: a list of names ("accuracy", "mae", ...), Metrics or functions; for several
            outputs a list of one entry per output or a dict by output name. As in Keras 3
            they see no sample or class weights.
          weighted_metrics: metrics as `metrics`, updated with the sample (and class) weights;
            one whose log name a metric of `metrics` took logs as "weighted_<name>".
          jit_compile: "auto" (the compiled engine, falling back to the interpreter for a graph
            it cannot lower), True (compiled only) or False (the interpreter).
          steps_per_execution: accepted for Keras's signature; sluice runs one step per
            execution, so batch-level callbacks see every step (the numbers are the same).
          run_eagerly, auto_scale_loss:
            accepted for Keras signatures; only their defaults are supported.
        """
        if weighted_metrics is not None and not isinstance(weighted_metrics, (list, tuple, dict)):
            raise ValueError(
                "Expected `weighted_metrics` argument to be a list, tuple, or dict. Received "
                f"instead: weighted_metrics={weighted_metrics!r} of type {type(weighted_metrics)}"
            )
        compile_loss = compile_utils.CompileLoss(loss, loss_weights) if loss is not None else None
        if run_eagerly:
            raise NotImplementedError(
                "run_eagerly=True is not supported: sluice traces each step into a graph once "
                "(Python code in train_step runs at that trace); use jit_compile=False to run "
                "the traced step op by op."
            )
        if not isinstance(steps_per_execution, int) or steps_per_execution < 1:
            raise ValueError(
                f"steps_per_execution must be a positive int, got {steps_per_execution!r}."
            )
        if jit_compile not in _ENGINES:
            raise ValueError(f"jit_compile must be 'auto', True or False, got {jit_compile!r}.")
        self._engine = _ENGINES[jit_compile]
        self._distribution = distribution_lib.distribution()  # kept for fits outside its scope
        self.optimizer = optimizers_lib.get(optimizer)
        self.loss = loss
        self._compile_loss = compile_loss
        self.loss_weights = loss_weights
        self._metric_identifiers = list(metrics) if isinstance(metrics, (list, tuple)) else metrics
        self._weighted_metric_identifiers = weighted_metrics
        self._steps_per_execution = steps_per_execution
        self._compile_metrics = (
            compile_utils.CompileMetrics(metrics, weighted_metrics)
            if metrics or weighted_metrics
            else None
        )
        self._loss_tracker = Mean(name="loss")
        self._reset_functions()
        self.compiled = True
        if self._graph is not None:  # an engine other than the running session's: a new session
            runtime.runtime_for(self._graph).set_engine(self._engine)

    @property
    def compiled_loss(self) -> compile_utils.LegacyCompiledLoss | None:
        """tf.keras 2's name for the compiled loss, for a custom `train_step` that calls
        `self.compiled_loss(y, y_pred, sample_weight, regularization_losses=self.losses)`
        (None when `compile` was given no loss)."""
        if self._compile_loss is None:
            return None
        return compile_utils.LegacyCompiledLoss(self._compile_loss, self)

    @property
    def compiled_metrics(self) -> compile_utils.CompileMetrics:
        """tf.keras 2's name for the compiled metrics: `update_state(y, y_pred)` in a custom
        `train_step` (an empty container when `compile` was given none)."""
        return self._compile_metrics or compile_utils.CompileMetrics(None)

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

    def _overrides(self, kind: str) -> bool:
        """Whether the model's class has its own `<kind>_step` ("train", "test", "predict"):
        then the step gets the data as Keras structures it (see `_step_data`)."""
        return getattr(type(self), f"{kind}_step") is not getattr(TrainingSteps, f"{kind}_step")

    def _step_function(
        self, kind: str, arrays: list, structure: Any, initialize: bool = True
    ) -> steps_lib.StepFunction:
        """The `kind` step for data like `arrays`, traced on first use per signature; every
        variable initialised (when traced, or always with `initialize`)."""
        self._build_for(kind, arrays, structure)
        if structure is None:
            inputs = self._input_count(kind, arrays)
            signature = steps_lib.input_signature(self, arrays[:inputs])
            key = (signature, kind != "predict" and tuple(y is None for y in arrays[inputs:-1]))
        else:
            signature = key = data.structure_signature(structure)
        functions = self._step_functions[kind]
        if key not in functions:  # another signature: traced too (the optimizer keeps its state)
            functions[key] = steps_lib.build_step(self, kind, arrays, structure, signature)
            initialize = True
        if initialize:
            self._initialize()
        return functions[key]

    def _build_for(self, kind: str, arrays: list, structure: Any) -> None:
        """Builds an unbuilt model from the first data given to a step."""
        if structure is None:
            self._ensure_built(arrays[: self._input_count(kind, arrays)])
        else:
            self._build_for_data(data.unpack_x_y_sample_weight(structure)[0])

    def _input_count(self, kind: str, arrays: list) -> int:
        """How many of a built-in step's arrays are model inputs (the rest: the targets, one
        per output, and the sample weights); the model is built (`_step_data`)."""
        return len(arrays) if kind == "predict" else len(self.inputs)

    def _build_for_data(self, x: Any) -> None:
        """Builds an unbuilt model from the arrays `x` an overridden step gets, when they are
        one array per input and the model's class defines `call`; a model without `call` (a GAN
        that only defines `train_step`) gets a graph, and its layers are built by the step."""
        self._standalone_graph()
        if self._input_struct is not None or not self._defines_call():
            return
        arrays = list(x) if isinstance(x, tuple) and not hasattr(x, "_fields") else [x]
        if all(isinstance(a, np.ndarray) for a in arrays):
            self._ensure_built(arrays)

    def _defines_call(self) -> bool:
        """Whether a forward pass can build the model: functional, or a class defining `call`."""
        if getattr(self, "_functional", False):
            return True
        owner = next(k for k in type(self).__mro__ if "call" in vars(k))
        return owner.__module__ != _MODEL_MODULE

    def _prepare_training(self, arrays: list, structure: Any) -> steps_lib.StepFunction:
        """The train step for data like `arrays` (see `_step_data`), traced on first use: once
        for the built-in step, as it owns the optimizer's state; everything initialised."""
        self._build_for("train", arrays, structure)
        if self._fit_state is None:
            self._fit_state = fit_state.FitState(self.graph)
        return self._step_function("train", arrays, structure)

    def _prepare_test(self, arrays: list, structure: Any) -> steps_lib.StepFunction:
        """The test step for data like `arrays`, traced on first use per signature."""
        return self._step_function("test", arrays, structure)

    def _run_step(self, function: steps_lib.StepFunction, arrays: list) -> Any:
        feed = {}
        for placeholder, value in zip(function.feeds, arrays):
            if placeholder is None:
                continue
            if value is None:  # sample weights not given
                value = np.ones([len(arrays[0])], np.float32)
            feed[placeholder] = value
        metadata = RunMetadata()
        values = runtime.runtime_for(self.graph).run(function.fetches, feed, run_metadata=metadata)
        self.run_metadata = metadata
        return function.results(values)

    def _input_arrays(self, x: Any, what: str) -> list[np.ndarray]:
        names = self._input_names if self._input_struct is not None else None
        return input_rank.adjust_arrays(self, data.input_arrays(x, names, what))

    def _step_data(
        self,
        kind: str,
        x: Any,
        y: Any,
        sample_weight: Any,
        what: str,
        class_weight: Any = None,
    ) -> tuple[list, Any]:
        """(arrays, structure): what one `kind` step is fed for (x, y, sample_weight).

        A model that overrides the step gets Keras's structure of the data
        (`pack_x_y_sample_weight`), fed one array per leaf. The built-in steps get one array
        per model input, then the targets and the sample weights (structure None); targets may
        be missing only when the loss comes from `add_loss`. Class weights become sample
        weights (see `class_weights`).
        """
        x, y, sample_weight = data.to_arrays(x), data.to_arrays(y), data.to_arrays(sample_weight)
        if x is None:
            raise ValueError(f"{what} needs input data `x` (NumPy arrays).")
        if class_weight is not None:
            class_weights.refuse_with_sample_weight(sample_weight)
            if y is None:
                raise ValueError(f"{what}: `class_weight` needs targets `y` to weigh.")
            sample_weight = class_weights.class_weight_to_sample_weights(
                data.target_array(y), class_weight
            )
        if self._overrides(kind):
            structure = data.pack_x_y_sample_weight(
                x, *(() if kind == "predict" else (y, sample_weight))
            )
            return self._checked(nest.flatten(structure), kind, what), structure
        arrays = self._input_arrays(x, what)
        self._ensure_built(arrays)  # its outputs say how many targets there are
        if kind != "predict":
            if y is None and self._compile_loss is not None:
                raise ValueError(
                    f"{what}: targets `y` are needed, as the model was compiled with a loss: "
                    "pass `y`, or a dataset that yields (x, y) or (x, y, sample_weight) "
                    "batches. (Leave the loss out of compile() when it comes from add_loss, or "
                    "override train_step.)"
                )
            names = compile_utils.output_names(self)
            arrays += data.target_arrays(y, names, what) + [
                data.sample_weight_array(sample_weight, len(names), what)
            ]
        return self._checked(arrays, kind, what), None

    @staticmethod
    def _checked(arrays: list, kind: str, what: str) -> list:
        """`arrays`, once they hold as many samples each (and some, but for predict)."""
        n = data.num_samples(arrays)
        if kind != "predict":
            data.require_samples(n, what)
        return arrays

    def _check_batch(self, batch: list, structure: Any) -> None:
        """A built-in step's targets checked on the host before they are fed."""
        if structure is None and self._compile_loss is not None:
            self._check_labels(batch[len(self.inputs) : -1])

    def _check_labels(self, targets: list) -> None:
        """A batch's targets (one per output) checked on the host before they are fed (sparse
        class ids in range: see `losses.check_sparse_labels`)."""
        outputs = nest.flatten(self._inference_outputs)
        for entry in self._compile_loss.entries or []:
            y, output = targets[entry.index], outputs[entry.index]
            if y is not None:
                classes = output.shape[-1] if output.shape.rank else None
                losses_lib.check_sparse_labels(entry.loss, y, classes)

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
        """The optimizer's learning rate, read from its Variable (a schedule's current value)."""
        if optimizers_lib.follows_schedule(self.optimizer):
            return float(self.optimizer.learning_rate)
        return float(runtime.runtime_for(self.graph).read([self._learning_rate_variable()])[0])

    def set_learning_rate(self, value: float) -> None:
        """Writes the optimizer's learning rate into its Variable (the next step uses it).

        Raises:
          TypeError: the rate is a `LearningRateSchedule` (Keras's refusal)."""
        if optimizers_lib.follows_schedule(self.optimizer):
            self.optimizer.learning_rate = value  # raises Keras's TypeError
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
          y: the targets: an array (one output), a list of one per output or a dict by output
            name (see `compile_utils`).
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
        then `y`, `batch_size`, `sample_weight` and `validation_split` must not be given. A
        `sl.utils.PyDataset` (`Sequence`) is read as a dataset of its batches, one pass per
        epoch, in the order Keras shuffles them (`models/py_dataset_adapter.py`).

        Raises:
          ValueError: for a batch size that is not a positive integer, or empty data.
          InvalidArgumentError: for a sparse class id outside [0, classes) (checked per batch).
        """
        self._require_compiled("fit")
        epochs = config.capped_epochs(epochs)  # keras.config.set_max_epochs
        x = py_dataset_as_dataset(x, shuffle)  # a keras.utils.PyDataset: its batches
        validation_data = py_dataset_as_dataset(validation_data)
        if dataset_loops.is_dataset(x):  # batches, targets and epoch length come from it
            dataset_loops.reject_array_arguments(  # as Keras 3, a batch_size is ignored
                "fit",
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
        x, y, sample_weight = data.to_arrays((x, y, sample_weight))
        val = None
        if validation_data is not None:
            val = data.unpack_x_y_sample_weight(validation_data)
        elif validation_split:
            parts = (x, y, sample_weight)
            (x, y, sample_weight), val = data.split_structure(parts, validation_split)
        # after the split: as in Keras, validation data is not class-weighted
        arrays, structure = self._step_data("train", x, y, sample_weight, "fit", class_weight)
        n = data.num_samples(arrays)
        steps = data.num_batches(n, batch_size)
        train_function = self._prepare_training(arrays, structure)
        data.check_split_batches(n, batch_size, self._distribution_in_use(), "fit")
        test_function = val_arrays = val_structure = None
        if val is not None:
            val_arrays, val_structure = self._step_data("test", *val, "validation_data")
            test_function = self._prepare_test(val_arrays, val_structure)
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
                self._check_batch(batch, structure)
                logs = steps_lib.python_logs(self._run_step(train_function, batch))
                callbacks.on_train_batch_end(step, logs)
                if self.stop_training:
                    break
            epoch_logs = dict(logs)
            if val_arrays is not None and (epoch + 1) % validation_freq == 0:
                val_logs = self._evaluate_arrays(
                    test_function, val_arrays, val_structure, validation_batch_size, callbacks
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
        """The running loss and metrics, read from their Variables (a resumed epoch's logs;
        a metric that cannot be read on the host is left out)."""
        logs = {}
        for metric in self.metrics:
            try:
                logs[self._log_name(metric)] = metric.value()
            except NotImplementedError:
                continue
        return logs

    # -- evaluate / predict ---------------------------------------------------------------------
    def _evaluate_arrays(
        self,
        function: steps_lib.StepFunction,
        arrays: list,
        structure: Any,
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
            self._check_batch(batch, structure)
            logs = steps_lib.python_logs(self._run_step(function, batch))
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
        x = py_dataset_as_dataset(x)
        if dataset_loops.is_dataset(x):
            dataset_loops.reject_array_arguments("evaluate", y=y, sample_weight=sample_weight)
            logs = dataset_loops.evaluate(
                self, x, 1 if verbose == "auto" else int(verbose), steps, callbacks
            )
            return _as_result(logs, return_dict)
        batch_size = data.batch_size_arg(batch_size)
        arrays, structure = self._step_data("test", x, y, sample_weight, "evaluate")
        function = self._prepare_test(arrays, structure)
        data.check_split_batches(
            data.num_samples(arrays), batch_size, self._distribution_in_use(), "evaluate"
        )
        verbose = 1 if verbose == "auto" else int(verbose)
        callback_list = CallbackList(
            callbacks, add_progbar=verbose != 0, model=self, verbose=verbose, epochs=1,
            steps=data.num_batches(data.num_samples(arrays), batch_size),
        )  # fmt: skip
        logs = self._evaluate_arrays(function, arrays, structure, batch_size, callback_list)
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
        x = py_dataset_as_dataset(x)
        if dataset_loops.is_dataset(x):
            return dataset_loops.predict(
                self,
                x,
                1 if verbose == "auto" else int(verbose),
                steps,
                callbacks,
                self._predict_batch,
            )
        batch_size = data.batch_size_arg(batch_size)
        xs, structure = self._step_data("predict", x, None, None, "predict")
        function = self._step_function("predict", xs, structure)
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

    def _predict_batch(self, element: Any) -> Any:
        """The outputs for one batch (a dataset's element), its step traced on first use."""
        xs, structure = dataset_loops.batch_data(self, "predict", element, "predict")
        function = self._step_function("predict", xs, structure, initialize=False)
        distribution = self._distribution_in_use()
        shards = distribution.batch_shards if distribution is not None else 1
        return _predict_padded(self, function, xs, shards)

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
            class_weights.check_single_output(self, y)
        arrays, structure = self._step_data(
            "train", x, y, sample_weight, "train_on_batch", class_weight
        )
        function = self._prepare_training(arrays, structure)
        self._check_batch(arrays, structure)
        return _as_result(steps_lib.python_logs(self._run_step(function, arrays)), return_dict)

    def test_on_batch(
        self, x: Any, y: Any = None, sample_weight: Any = None, return_dict: bool = False
    ) -> Any:
        self._require_compiled("test_on_batch")
        arrays, structure = self._step_data("test", x, y, sample_weight, "test_on_batch")
        function = self._prepare_test(arrays, structure)
        self._check_batch(arrays, structure)
        return _as_result(steps_lib.python_logs(self._run_step(function, arrays)), return_dict)

    def predict_on_batch(self, x: Any) -> Any:
        samples = data.num_samples(nest.flatten(data.to_arrays(x)))
        return self.predict(x, batch_size=max(1, samples), verbose=0)


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


_MODEL_MODULE = "sluice._keras.models.model"  # where Model.call lives (it builds nothing)


def _as_result(logs: dict, return_dict: bool) -> Any:
    if return_dict:
        return logs
    values = list(logs.values())
    return values[0] if len(values) == 1 else values
