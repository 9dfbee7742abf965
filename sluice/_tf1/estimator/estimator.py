"""`Estimator` (TF1 `tf.estimator.Estimator`): train, evaluate and predict with a model_fn,
each call in a fresh graph, the model's state carried from call to call by the checkpoints in
`model_dir`.

    train(input_fn, steps)      graph: global step, input_fn(), model_fn(TRAIN); a
                                MonitoredTrainingSession restores the latest checkpoint of
                                model_dir (or initializes), runs [train_op, loss] until the
                                steps are done or the input ends, saves a checkpoint.
    evaluate(input_fn, steps)   graph: global step, input_fn(), model_fn(EVAL); restores the
                                latest checkpoint, runs the metrics' update ops over `steps`
                                batches (or the whole input), returns the metric values with
                                'loss' (the mean loss over the batches) and 'global_step'.
    predict(input_fn)           graph: input_fn(), model_fn(PREDICT); restores and yields the
                                predictions one example at a time until the input ends.

Everything the sessions need is sluice's TF1 machinery: `MonitoredTrainingSession` and
`MonitoredSession`, the hooks of `sl.train`, `Saver` (whose restore validates the checkpoint
files), `sl.metrics.mean`, `sl.data` iterators.
"""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import logging
import os
import tempfile
from typing import Any, Callable, Iterator

import numpy as np

from sluice._export import export
from sluice._keras.optimizers.training_util import create_global_step, get_global_step
from sluice._tf1.checkpoints import reader
from sluice._tf1.checkpoints.checkpoint_state import latest_checkpoint
from sluice._tf1.checkpoints.saver import Saver
from sluice._tf1.data.dataset import Dataset
from sluice._tf1.estimator import evaluation
from sluice._tf1.estimator.mode_keys import ModeKeys
from sluice._tf1.estimator.model_fn import (
    LOSS_METRIC_KEY,
    EstimatorSpec,
    fn_args,
    verify_model_fn_args,
)
from sluice._tf1.estimator.run_config import RunConfig, default_session_config
from sluice._tf1.estimator.warm_starting import WarmStartSettings, warm_start_settings
from sluice._tf1.metrics.tf1_metrics import mean as metric_mean
from sluice._tf1.summary import ops as summary_ops
from sluice._tf1.training import summary_writers
from sluice._tf1.training.basic_hooks import LoggingTensorHook, NanTensorHook, StopAtStepHook
from sluice._tf1.training.checkpoint_hooks import CheckpointSaverHook, CheckpointSaverListener
from sluice._tf1.training.global_step_read import get_or_create_global_step_read
from sluice._tf1.training.monitored_session import MonitoredSession, MonitoredTrainingSession
from sluice._tf1.training.scaffold import Scaffold
from sluice._tf1.training.session_creators import ChiefSessionCreator
from sluice._tf1.training.session_run_hook import SessionRunHook
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Graph, GraphKeys
from sluice.framework.ops.core import core_ops
from sluice.framework.variables import global_variables

_logger = logging.getLogger("sluice")


@export("estimator.Estimator")
class Estimator:
    """Trains, evaluates and predicts with `model_fn`, keeping the model in `model_dir`.

    Args:
      model_fn: `model_fn(features, labels, mode, params, config) -> EstimatorSpec`; it may
        declare any subset of these arguments but `features`, and is called with those it
        declares, by name.
      model_dir: where checkpoints and summaries go; a new temporary directory when neither
        it nor `config.model_dir` is given. A model_dir holding checkpoints is resumed from.
      config: a `RunConfig` (default: `RunConfig()`).
      params: a dict of hyperparameters passed to model_fn (deep-copied).
      warm_start_from: a checkpoint file or directory, or a `WarmStartSettings`: the
        variables it names start from that checkpoint when model_dir has none.

    Raises:
      ValueError: model_fn is None or its arguments do not fit (see `verify_model_fn_args`),
        config is not a RunConfig, or model_dir and config.model_dir differ.

    >>> def model_fn(features, labels, mode):
    ...     w = sl.get_variable("w", [], initializer=sl.zeros_initializer())
    ...     predictions = w * features["x"]
    ...     if mode == sl.estimator.ModeKeys.PREDICT:
    ...         return sl.estimator.EstimatorSpec(mode, predictions=predictions)
    ...     loss = sl.reduce_mean(sl.square(predictions - labels))
    ...     train_op = sl.train.GradientDescentOptimizer(0.1).minimize(
    ...         loss, global_step=sl.train.get_global_step())
    ...     return sl.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)
    >>> x = np.ones(8, np.float32)
    >>> input_fn = sl.estimator.inputs.numpy_input_fn(
    ...     {"x": x}, 3 * x, batch_size=4, num_epochs=None, shuffle=True)
    >>> est = sl.estimator.Estimator(model_fn, model_dir="model")
    >>> est = est.train(input_fn, steps=40)
    >>> int(est.get_variable_value("global_step")), round(float(est.get_variable_value("w")), 3)
    (40, 3.0)
    >>> print(round(float(est.evaluate(input_fn, steps=2)["loss"]), 6))
    0.0
    """

    def __init__(
        self,
        model_fn: Callable[..., EstimatorSpec],
        model_dir: str | None = None,
        config: RunConfig | None = None,
        params: dict | None = None,
        warm_start_from: str | WarmStartSettings | None = None,
    ):
        self._config = _config_with_model_dir(config, model_dir)
        self._model_dir = self._config.model_dir
        self._session_config = self._config.session_config
        self._device_fn = self._config.device_fn
        _logger.info("Using config: %s", self._config)
        if model_fn is None:
            raise ValueError("model_fn must be provided to Estimator.")
        verify_model_fn_args(model_fn, params)
        self._model_fn = model_fn
        self._params = copy.deepcopy(params or {})
        self._warm_start_settings = warm_start_settings(warm_start_from)

    # -- properties --------------------------------------------------------------------------
    @property
    def model_dir(self) -> str:
        return self._model_dir

    @property
    def config(self) -> RunConfig:
        return copy.deepcopy(self._config)

    @property
    def params(self) -> dict:
        return copy.deepcopy(self._params)

    @property
    def model_fn(self) -> Callable[..., EstimatorSpec]:
        """model_fn bound to this Estimator's params: `(features, labels, mode, config)`."""

        def public_model_fn(features: Any, labels: Any, mode: str, config: RunConfig) -> Any:
            return self._call_model_fn(features, labels, mode, config)

        return public_model_fn

    # -- the checkpoints of model_dir --------------------------------------------------------
    def get_variable_value(self, name: str) -> np.ndarray:
        """The value of variable `name` in the latest checkpoint.

        Raises:
          ValueError: model_dir has no checkpoint yet.
        """
        _check_checkpoint_available(self._model_dir)
        return reader.load_variable(self._model_dir, name)

    def get_variable_names(self) -> list[str]:
        """The names of the variables in the latest checkpoint.

        Raises:
          ValueError: model_dir has no checkpoint yet.
        """
        _check_checkpoint_available(self._model_dir)
        return [name for name, _ in reader.list_variables(self._model_dir)]

    def latest_checkpoint(self) -> str | None:
        """The path of the latest checkpoint in model_dir, or None."""
        return latest_checkpoint(self._model_dir)

    def eval_dir(self, name: str | None = None) -> str:
        """Where `evaluate(name=...)` writes its summaries: model_dir/eval[_name]."""
        return os.path.join(self._model_dir, "eval" if not name else "eval_" + name)

    # -- train -------------------------------------------------------------------------------
    def train(
        self,
        input_fn: Callable,
        hooks: list | None = None,
        steps: int | None = None,
        max_steps: int | None = None,
        saving_listeners: list | None = None,
    ) -> "Estimator":
        """Trains on `input_fn`'s batches for `steps` more steps, up to global step
        `max_steps`, or until the input ends (neither given).

        Args:
          input_fn: returns `(features, labels)` or an `sl.data.Dataset` of them; it may take
            `mode`, `params`, `config` by name.
          hooks: `sl.train.SessionRunHook`s for the training session.
          steps: how many steps this call trains (two calls of 10 train 20).
          max_steps: the global step to stop at (a second call with the same value trains
            none).
          saving_listeners: `sl.train.CheckpointSaverListener`s around each checkpoint.

        Returns:
          self.

        Raises:
          ValueError: both steps and max_steps, either <= 0, or saving_listeners without a
            checkpoint schedule.
          TypeError: a hook or listener of the wrong type.
        """
        if steps is not None and max_steps is not None:
            raise ValueError("Can not provide both steps and max_steps.")
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        if max_steps is not None and max_steps <= 0:
            raise ValueError(f"Must specify max_steps > 0, given: {max_steps}")
        if max_steps is not None:
            start_step = _global_step_in_checkpoint(self._model_dir)
            if max_steps <= start_step:
                _logger.info("Skipping training since max_steps has already saved.")
                return self
        hooks = _check_hooks_type(hooks)
        if steps is not None or max_steps is not None:
            hooks.append(StopAtStepHook(steps, max_steps))
        saving_listeners = _check_listeners_type(saving_listeners)
        loss = self._train_model(input_fn, hooks, saving_listeners)
        _logger.info("Loss for final step: %s.", loss)
        return self

    def _train_model(self, input_fn: Callable, hooks: list, saving_listeners: list) -> Any:
        with self._new_graph() as g:
            global_step = create_global_step(g)
            get_or_create_global_step_read(g)
            features, labels, input_hooks = self._features_and_labels(input_fn, ModeKeys.TRAIN)
            spec = self._call_model_fn(features, labels, ModeKeys.TRAIN, self.config)
            global_step = get_global_step(g)
            if self._warm_start_settings is not None and self.latest_checkpoint() is None:
                _logger.info("Warm-starting with WarmStartSettings: %s", self._warm_start_settings)
                spec = spec._replace(
                    scaffold=self._warm_start_settings.scaffold_with_init_fn(spec.scaffold)
                )
            return self._train_with_spec(spec, input_hooks, hooks, global_step, saving_listeners)

    def _train_with_spec(
        self,
        spec: EstimatorSpec,
        worker_hooks: list,
        hooks: list,
        global_step: Any,
        saving_listeners: list,
    ) -> Any:
        summaries = graph_lib.get_collection(GraphKeys.SUMMARIES)
        if _can_write_summaries() and not any(s.op.name == "loss" for s in summaries):
            summary_ops.scalar("loss", spec.loss)
        graph_lib.add_to_collection(GraphKeys.LOSSES, spec.loss)
        worker_hooks = list(worker_hooks) + hooks + [NanTensorHook(spec.loss)]
        config = self._config
        if config.log_step_count_steps is not None:
            worker_hooks.append(
                LoggingTensorHook(
                    {"loss": spec.loss, "step": global_step},
                    every_n_iter=config.log_step_count_steps,
                )
            )
        worker_hooks.extend(spec.training_hooks)
        if spec.scaffold.saver is None and not graph_lib.get_collection(GraphKeys.SAVERS):
            Saver(  # joins the SAVERS collection, where the scaffold finds it
                max_to_keep=config.keep_checkpoint_max,
                keep_checkpoint_every_n_hours=config.keep_checkpoint_every_n_hours,
            )
        chief_hooks: list = []
        saver_hooks = [
            h
            for h in worker_hooks + list(spec.training_chief_hooks)
            if isinstance(h, CheckpointSaverHook)
        ]
        if saving_listeners and saver_hooks:
            raise ValueError(
                "saving_listeners with a CheckpointSaverHook of your own: give the listeners "
                "to that hook (sluice's Estimator adds them only to the hook it makes)."
            )
        if config.save_checkpoints_secs or config.save_checkpoints_steps:
            if not saver_hooks:
                chief_hooks = [
                    CheckpointSaverHook(
                        self._model_dir,
                        save_secs=config.save_checkpoints_secs,
                        save_steps=config.save_checkpoints_steps,
                        scaffold=spec.scaffold,
                        listeners=saving_listeners,
                    )
                ]
        elif saving_listeners:
            raise ValueError(
                "There should be a CheckpointSaverHook to use saving_listeners. Please set "
                "one of the RunConfig.save_checkpoints_steps or "
                "RunConfig.save_checkpoints_secs."
            )
        loss = None
        any_step_done = False
        with MonitoredTrainingSession(
            checkpoint_dir=self._model_dir,
            scaffold=spec.scaffold,
            hooks=worker_hooks,
            chief_only_hooks=chief_hooks + list(spec.training_chief_hooks),
            save_checkpoint_secs=0,  # the CheckpointSaverHook above saves
            save_summaries_steps=config.save_summary_steps,
            config=self._session_config,
            max_wait_secs=config.session_creation_timeout_secs,
            log_step_count_steps=config.log_step_count_steps,
        ) as session:
            while not session.should_stop():
                _, loss = session.run([spec.train_op, spec.loss])
                any_step_done = True
        if not any_step_done:
            _logger.warning(
                "Training with estimator made no steps. Perhaps input is empty or misspecified."
            )
        return loss

    # -- evaluate ----------------------------------------------------------------------------
    def evaluate(
        self,
        input_fn: Callable,
        steps: int | None = None,
        hooks: list | None = None,
        checkpoint_path: str | None = None,
        name: str | None = None,
    ) -> dict:
        """Evaluates the model of the latest checkpoint (or `checkpoint_path`) on `steps`
        batches of `input_fn`, or on all of them (steps None).

        Returns:
          {metric name: value} for the EstimatorSpec's eval_metric_ops, plus 'loss' (the mean
          of the batches' losses) and 'global_step' (of the checkpoint evaluated).

        Raises:
          ValueError: steps <= 0, or eval_metric_ops naming 'loss' or 'global_step'.
        """
        hooks = _check_hooks_type(hooks)
        if steps is not None:
            if steps <= 0:
                raise ValueError(f"Must specify steps > 0, given: {steps}")
            hooks.append(evaluation.StopAfterNEvalsHook(num_evals=steps))
        if not checkpoint_path:
            checkpoint_path = self.latest_checkpoint()
            if not checkpoint_path:
                _logger.info(
                    "Could not find trained model in model_dir: %s, running initialization "
                    "to evaluate.",
                    self._model_dir,
                )
        with self._new_graph() as g:
            create_global_step(g)
            features, labels, input_hooks = self._features_and_labels(input_fn, ModeKeys.EVAL)
            spec = self._call_model_fn(features, labels, ModeKeys.EVAL, self.config)
            if LOSS_METRIC_KEY in spec.eval_metric_ops:
                raise ValueError(
                    f'Metric with name "{LOSS_METRIC_KEY}" is not allowed, because Estimator '
                    "already defines a default metric with the same name."
                )
            metric_ops = dict(spec.eval_metric_ops)
            metric_ops[LOSS_METRIC_KEY] = metric_mean(spec.loss)
            update_ops = [metric_ops[key][1] for key in sorted(metric_ops)]
            eval_dict = {key: metric_ops[key][0] for key in sorted(metric_ops)}
            if GraphKeys.GLOBAL_STEP in eval_dict:
                raise ValueError(
                    "Metric with name `global_step` is not allowed, because Estimator already "
                    "defines a default metric with the same name."
                )
            eval_dict[GraphKeys.GLOBAL_STEP] = get_global_step(g)
            scaffold = self._scaffold_to_restore(spec.scaffold, checkpoint_path)
            results = evaluation.evaluate_once(
                checkpoint_path=checkpoint_path,
                scaffold=scaffold,
                eval_ops=core_ops.group(*update_ops),
                final_ops=eval_dict,
                hooks=input_hooks + hooks + list(spec.evaluation_hooks),
                config=self._session_config,
            )
        # numpy scalars, as TF's session returns them, for the 0-d values
        results = {
            key: value[()] if isinstance(value, np.ndarray) and value.ndim == 0 else value
            for key, value in results.items()
        }
        _write_dict_to_summary(self.eval_dir(name), results, int(results["global_step"]))
        return results

    # -- predict -----------------------------------------------------------------------------
    def predict(
        self,
        input_fn: Callable,
        predict_keys: list[str] | None = None,
        hooks: list | None = None,
        checkpoint_path: str | None = None,
        yield_single_examples: bool = True,
    ) -> Iterator[Any]:
        """Yields the predictions of the latest checkpoint's model (or `checkpoint_path`'s) on
        `input_fn`'s features until the input ends: one example at a time (a dict of them
        when the predictions are a dict), or whole batches with yield_single_examples=False.

        Raises:
          ValueError: predict_keys with predictions that are not a dict, or naming none of
            them; predictions of different batch lengths (one example at a time).
        """
        hooks = _check_hooks_type(hooks)
        if not checkpoint_path:
            checkpoint_path = self.latest_checkpoint()
        if not checkpoint_path:
            _logger.info(
                "Could not find trained model in model_dir: %s, running initialization to predict.",
                self._model_dir,
            )
        with self._new_graph() as g:
            create_global_step(g)
            result = self._call_input_fn(input_fn, ModeKeys.PREDICT)
            features, _, input_hooks = _parse_input_fn_result(result)
            if not _reads_an_input(features):
                _logger.warning(
                    "Input graph does not use tf.data.Dataset or contain a QueueRunner. That "
                    "means predict yields forever. This is probably a mistake."
                )
            spec = self._call_model_fn(features, None, ModeKeys.PREDICT, self.config)
            predictions = _extract_keys(spec.predictions, predict_keys)
            scaffold = self._scaffold_to_restore(spec.scaffold, checkpoint_path)
            creator = ChiefSessionCreator(
                scaffold=scaffold,
                checkpoint_filename_with_path=checkpoint_path,
                config=self._session_config,
            )
            all_hooks = input_hooks + hooks + list(spec.prediction_hooks)
            with MonitoredSession(session_creator=creator, hooks=all_hooks) as session:
                while not session.should_stop():
                    values = session.run(predictions)
                    if not yield_single_examples:
                        yield values
                    elif not isinstance(predictions, dict):
                        yield from values
                    else:
                        for i in range(_batch_length(values)):
                            yield {key: value[i] for key, value in values.items()}

    # -- building the graphs -----------------------------------------------------------------
    @contextlib.contextmanager
    def _new_graph(self) -> Iterator[Graph]:
        """A new default graph, seeded by config.tf_random_seed, under config.device_fn."""
        g = Graph()
        with g.as_default():
            devices = g.device(self._device_fn) if self._device_fn else contextlib.nullcontext()
            with devices:
                graph_lib.set_random_seed(self._config.tf_random_seed)
                yield g

    def _scaffold_to_restore(self, scaffold: Scaffold, checkpoint_path: str | None) -> Scaffold:
        """The scaffold for evaluate and predict. Their graph lacks the optimizer's variables
        that training saved: unless the model_fn chose a saver, restore the graph's
        variables from a checkpoint that may hold more. Without a checkpoint, warm-start."""
        if scaffold.saver is None and not graph_lib.get_collection(GraphKeys.SAVERS):
            Saver(var_list=global_variables(), allow_empty=True)
        if checkpoint_path is None and self._warm_start_settings is not None:
            scaffold = self._warm_start_settings.scaffold_with_init_fn(scaffold)
        return scaffold

    def _call_input_fn(self, input_fn: Callable, mode: str) -> Any:
        args = fn_args(input_fn)
        kwargs: dict = {}
        if "mode" in args:
            kwargs["mode"] = mode
        if "params" in args:
            kwargs["params"] = self.params
        if "config" in args:
            kwargs["config"] = self.config
        with graph_lib.get_default_graph().device("/cpu:0"):
            return input_fn(**kwargs)

    def _features_and_labels(self, input_fn: Callable, mode: str) -> tuple:
        return _parse_input_fn_result(self._call_input_fn(input_fn, mode))

    def _call_model_fn(self, features: Any, labels: Any, mode: str, config: RunConfig) -> Any:
        """Calls model_fn with the arguments it declares.

        Raises:
          ValueError: labels given to a model_fn without a labels argument, or a result that
            is not an EstimatorSpec.
        """
        args = fn_args(self._model_fn)
        kwargs: dict = {}
        if "labels" in args:
            kwargs["labels"] = labels
        elif labels is not None:
            raise ValueError("model_fn does not take labels, but input_fn returns labels.")
        if "mode" in args:
            kwargs["mode"] = mode
        if "params" in args:
            kwargs["params"] = self.params
        if "config" in args:
            kwargs["config"] = config
        _logger.info("Calling model_fn.")
        result = self._model_fn(features=features, **kwargs)
        _logger.info("Done calling model_fn.")
        if not isinstance(result, EstimatorSpec):
            raise ValueError("model_fn should return an EstimatorSpec.")
        return result


class _DatasetInitializerHook(SessionRunHook):
    """Initializes the iterator of a Dataset that input_fn returned, in each new session."""

    def __init__(self, iterator: Any):
        self._iterator = iterator

    def begin(self) -> None:
        self._initializer = self._iterator.initializer

    def after_create_session(self, session: Any, coord: Any) -> None:
        session.run(self._initializer)


def _parse_input_fn_result(result: Any) -> tuple:
    """(features, labels or None, input hooks) from what input_fn returned.

    Raises:
      ValueError: a tuple or list that is not (features, labels).
    """
    hooks: list = []
    if isinstance(result, Dataset):
        iterator = result.make_initializable_iterator()
        hooks.append(_DatasetInitializerHook(iterator))
        result = iterator.get_next()
    if isinstance(result, (list, tuple)):
        if len(result) != 2:
            raise ValueError("input_fn should return (features, labels) as a len 2 tuple.")
        return result[0], result[1], hooks
    return result, None, hooks


def _reads_an_input(features: Any) -> bool:
    """Whether the features come from a dataset iterator or a queue (else predict never
    ends)."""
    leaves = features.values() if isinstance(features, dict) else [features]
    if any(getattr(getattr(t, "op", None), "type", None) == "IteratorGetNext" for t in leaves):
        return True
    return bool(graph_lib.get_collection("queue_runners"))


def _extract_keys(predictions: Any, predict_keys: list[str] | None) -> Any:
    if not predict_keys:
        return predictions
    if not isinstance(predictions, dict):
        raise ValueError("predict_keys argument is not valid in case of non-dict predictions.")
    chosen = {key: value for key, value in predictions.items() if key in predict_keys}
    if not chosen:
        raise ValueError(
            f"Expected to run at least one output from {list(predictions)}, provided "
            f"{predict_keys}."
        )
    return chosen


def _batch_length(values: dict) -> int:
    length = None
    for key, value in values.items():
        length = length or value.shape[0]
        if value.shape[0] != length:
            raise ValueError(
                f"Batch length of predictions should be same. {key} has different batch "
                "length than others."
            )
    return length or 0


def _config_with_model_dir(config: RunConfig | None, model_dir: str | None) -> RunConfig:
    """config (default RunConfig()) with the session config and model_dir filled in; a new
    temporary directory when neither names one.

    Raises:
      ValueError: config is not a RunConfig, or model_dir and config.model_dir differ.
    """
    if config is None:
        config = RunConfig()
        _logger.info("Using default config.")
    if not isinstance(config, RunConfig):
        raise ValueError(f"config must be an instance of `RunConfig`, but provided {config}.")
    if config.session_config is None:
        config = config.replace(session_config=default_session_config())
    if model_dir is not None:
        model_dir = os.fspath(model_dir)
        if config.model_dir is not None and config.model_dir != model_dir:
            raise ValueError(
                "`model_dir` are set both in constructor and `RunConfig`, but with different "
                f"values. In constructor: '{model_dir}', in `RunConfig`: '{config.model_dir}' "
            )
    if model_dir:
        config = config.replace(model_dir=model_dir)
    elif config.model_dir is None:
        model_dir = tempfile.mkdtemp()
        _logger.warning("Using temporary folder as model directory: %s", model_dir)
        config = config.replace(model_dir=model_dir)
    return config


def _check_checkpoint_available(model_dir: str) -> None:
    if not latest_checkpoint(model_dir):
        raise ValueError(f"Could not find trained model in model_dir: {model_dir}.")


def _check_hooks_type(hooks: Any) -> list:
    hooks = list(hooks or [])
    for hook in hooks:
        if not isinstance(hook, SessionRunHook):
            raise TypeError(f"Hooks must be a SessionRunHook, given: {hook}")
    return hooks


def _check_listeners_type(listeners: Any) -> list:
    listeners = list(listeners or [])
    for listener in listeners:
        if not isinstance(listener, CheckpointSaverListener):
            raise TypeError(
                f"saving_listeners must be a list of CheckpointSaverListener, given: {listener}"
            )
    return listeners


def _global_step_in_checkpoint(model_dir: str) -> int:
    """The global step of model_dir's latest checkpoint; 0 without one."""
    path = latest_checkpoint(model_dir)
    if path is None:
        return 0
    checkpoint = reader.load_checkpoint(path)
    if not checkpoint.has_tensor(GraphKeys.GLOBAL_STEP):
        return 0
    return int(checkpoint.get_tensor(GraphKeys.GLOBAL_STEP))


def _can_write_summaries() -> bool:
    """Whether the TensorBoard writer library is installed (TF always writes the loss
    summary; without the extra, sluice writes no summaries)."""
    return importlib.util.find_spec("tensorboardX") is not None


def _write_dict_to_summary(output_dir: str, results: dict, step: int) -> None:
    """Logs the evaluation results and writes the scalar ones to output_dir's events."""
    text = ", ".join(f"{key} = {value}" for key, value in sorted(results.items()))
    _logger.info("Saving dict for global step %d: %s", step, text)
    writer = summary_writers.cached_writer(output_dir)
    if writer is None:
        return
    for key, value in results.items():
        if key == GraphKeys.GLOBAL_STEP or value is None:
            continue
        if np.ndim(value) == 0 and np.issubdtype(np.asarray(value).dtype, np.number):
            summary_writers.add_scalar(writer, key, float(value), step)
        else:
            _logger.warning(
                "Skipping summary for %s, must be a float, np.float32, np.int64, np.int32 or "
                "int or np.ndarray or a serialized string of Summary.",
                key,
            )
    writer.flush()
