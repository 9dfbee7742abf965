"""`RunConfig` (TF1 `tf.estimator.RunConfig`): where an Estimator writes, how often it saves,
logs and writes summaries, its graph seed and its session config.

sluice's Estimator runs in one process: the cluster fields answer as TF's do for a single
local task (`is_chief` True, `num_ps_replicas` 0, ...), and a `TF_CONFIG` that names a cluster
or a distribution strategy is refused with the way to go (`sl.distribution`).
"""

from __future__ import annotations

import copy
import inspect
import json
import os
from typing import Any

from sluice._export import export
from sluice.framework.config_protos import ConfigProto

_USE_DEFAULT = object()

# the properties `replace` may change, as TF 1.15 lists them
_REPLACEABLE = (
    "model_dir",
    "tf_random_seed",
    "save_summary_steps",
    "save_checkpoints_steps",
    "save_checkpoints_secs",
    "session_config",
    "keep_checkpoint_max",
    "keep_checkpoint_every_n_hours",
    "log_step_count_steps",
    "train_distribute",
    "device_fn",
    "protocol",
    "eval_distribute",
    "experimental_distribute",
    "experimental_max_worker_delay_secs",
    "session_creation_timeout_secs",
)

_SAVE_CKPT_ERR = "`save_checkpoints_steps` and `save_checkpoints_secs` cannot be both set."


@export("estimator.TaskType")
class TaskType:
    """The task types of a TF cluster (TF1 `tf.estimator.RunConfig`'s `task_type` values)."""

    MASTER = "master"
    PS = "ps"
    WORKER = "worker"
    CHIEF = "chief"
    EVALUATOR = "evaluator"


def default_session_config() -> ConfigProto:
    """TF's default session config for an Estimator: soft placement on."""
    return ConfigProto(allow_soft_placement=True)


@export("estimator.RunConfig")
class RunConfig:
    """The configuration of an `Estimator`'s runs.

    Args:
      model_dir: where checkpoints and summaries go (the Estimator's model_dir wins when
        only it is given; both given must agree).
      tf_random_seed: the graph-level seed of every graph the Estimator builds.
      save_summary_steps: write the summaries every this many global steps (0 or None: never).
      save_checkpoints_steps, save_checkpoints_secs: checkpoint every this many steps or
        seconds; at most one; neither given means every 600 seconds. Both None: no
        checkpoints during training (the training still saves none at its end).
      session_config: an `sl.ConfigProto` for the sessions.
      keep_checkpoint_max: how many recent checkpoints to keep (0 or None: all).
      keep_checkpoint_every_n_hours: also keep one checkpoint per this many hours.
      log_step_count_steps: log the loss and steps per second every this many steps (None:
        never).
      train_distribute, eval_distribute, experimental_distribute: must be None (see the
        module docstring).
      device_fn: a function `op -> device string` applied to every op of the graphs.
      protocol, experimental_max_worker_delay_secs, session_creation_timeout_secs: accepted
        and validated as TF does; a single process has no use for them.

    Raises:
      ValueError: both checkpoint schedules, a negative count, an empty model_dir, a
        session_config that is not a ConfigProto, a device_fn with other arguments than
        `op`, a distribution strategy or a TF_CONFIG cluster.

    >>> config = sl.estimator.RunConfig(save_checkpoints_steps=10)
    >>> config.save_checkpoints_steps, config.save_checkpoints_secs, config.is_chief
    (10, None, True)
    >>> config.replace(tf_random_seed=3).tf_random_seed
    3
    """

    def __init__(
        self,
        model_dir: str | None = None,
        tf_random_seed: int | None = None,
        save_summary_steps: int | None = 100,
        save_checkpoints_steps: Any = _USE_DEFAULT,
        save_checkpoints_secs: Any = _USE_DEFAULT,
        session_config: ConfigProto | None = None,
        keep_checkpoint_max: int | None = 5,
        keep_checkpoint_every_n_hours: float | None = 10000,
        log_step_count_steps: int | None = 100,
        train_distribute: Any = None,
        device_fn: Any = None,
        protocol: str | None = None,
        eval_distribute: Any = None,
        experimental_distribute: Any = None,
        experimental_max_worker_delay_secs: int | None = None,
        session_creation_timeout_secs: float = 7200,
    ):
        if save_checkpoints_steps is _USE_DEFAULT and save_checkpoints_secs is _USE_DEFAULT:
            save_checkpoints_steps, save_checkpoints_secs = None, 600
        elif save_checkpoints_secs is _USE_DEFAULT:
            save_checkpoints_secs = None
        elif save_checkpoints_steps is _USE_DEFAULT:
            save_checkpoints_steps = None
        elif save_checkpoints_steps is not None and save_checkpoints_secs is not None:
            raise ValueError(_SAVE_CKPT_ERR)
        if model_dir is not None:
            model_dir = os.fspath(model_dir)
        model_dir = _model_dir_from_tf_config(model_dir)
        self._replace_in_place(
            model_dir=model_dir,
            tf_random_seed=tf_random_seed,
            save_summary_steps=save_summary_steps,
            save_checkpoints_steps=save_checkpoints_steps,
            save_checkpoints_secs=save_checkpoints_secs,
            session_config=session_config,
            keep_checkpoint_max=keep_checkpoint_max,
            keep_checkpoint_every_n_hours=keep_checkpoint_every_n_hours,
            log_step_count_steps=log_step_count_steps,
            train_distribute=train_distribute,
            device_fn=device_fn,
            protocol=protocol,
            eval_distribute=eval_distribute,
            experimental_distribute=experimental_distribute,
            experimental_max_worker_delay_secs=experimental_max_worker_delay_secs,
            session_creation_timeout_secs=session_creation_timeout_secs,
        )

    def replace(self, **kwargs: Any) -> "RunConfig":
        """A copy with the given properties changed (those of the constructor but the cluster
        fields); giving one checkpoint schedule turns the other off.

        Raises:
          ValueError: an unknown or fixed property, or an invalid value (as the constructor).
        """
        return copy.deepcopy(self)._replace_in_place(**kwargs)

    def _replace_in_place(self, **kwargs: Any) -> "RunConfig":
        for key, value in kwargs.items():
            if key not in _REPLACEABLE:
                raise ValueError(
                    f"Replacing {key} is not supported. Allowed properties are "
                    f"{list(_REPLACEABLE)}."
                )
            setattr(self, "_" + key, value)
        if "save_checkpoints_steps" in kwargs and "save_checkpoints_secs" in kwargs:
            if self._save_checkpoints_steps is not None and self._save_checkpoints_secs is not None:
                raise ValueError(_SAVE_CKPT_ERR)
        elif "save_checkpoints_steps" in kwargs and self._save_checkpoints_steps is not None:
            self._save_checkpoints_secs = None
        elif "save_checkpoints_secs" in kwargs and self._save_checkpoints_secs is not None:
            self._save_checkpoints_steps = None
        self._validate()
        return self

    def _validate(self) -> None:
        def check(name: str, ok: Any, message: str) -> None:
            value = getattr(self, "_" + name)
            if value is not None and not ok(value):
                raise ValueError(message)

        check("model_dir", bool, "model_dir should be non-empty")
        check("save_summary_steps", lambda n: n >= 0, "save_summary_steps should be >= 0")
        check("save_checkpoints_steps", lambda n: n >= 0, "save_checkpoints_steps should be >= 0")
        check("save_checkpoints_secs", lambda n: n >= 0, "save_checkpoints_secs should be >= 0")
        check(
            "session_config",
            lambda c: isinstance(c, ConfigProto),
            "session_config must be instance of ConfigProto",
        )
        check("keep_checkpoint_max", lambda n: n >= 0, "keep_checkpoint_max should be >= 0")
        check(
            "keep_checkpoint_every_n_hours",
            lambda n: n > 0,
            "keep_checkpoint_every_n_hours should be > 0",
        )
        check("log_step_count_steps", lambda n: n > 0, "log_step_count_steps should be > 0")
        check(
            "tf_random_seed",
            lambda s: isinstance(s, int) and not isinstance(s, bool),
            "tf_random_seed must be integer.",
        )
        check(
            "experimental_max_worker_delay_secs",
            lambda d: isinstance(d, int),
            "experimental_max_worker_delay_secs must be an integer if set.",
        )
        check(
            "session_creation_timeout_secs",
            lambda t: t > 0,
            "session_creation_timeout_secs should be > 0",
        )
        check(
            "device_fn",
            lambda f: callable(f) and tuple(inspect.signature(f).parameters) == ("op",),
            'device_fn must be callable with exactly one argument "op".',
        )
        check(
            "protocol",
            lambda p: p in ("grpc", "grpc+verbs"),
            "protocol should be grpc or grpc+verbs",
        )
        for name in ("train_distribute", "eval_distribute", "experimental_distribute"):
            if getattr(self, "_" + name) is not None:
                raise ValueError(
                    f"RunConfig({name}=...): sluice's Estimator runs in one process without "
                    "a distribution strategy; distribute a Keras model with sl.distribution."
                )

    # -- the configuration -------------------------------------------------------------------
    model_dir = property(lambda self: self._model_dir)
    tf_random_seed = property(lambda self: self._tf_random_seed)
    save_summary_steps = property(lambda self: self._save_summary_steps)
    save_checkpoints_steps = property(lambda self: self._save_checkpoints_steps)
    save_checkpoints_secs = property(lambda self: self._save_checkpoints_secs)
    session_config = property(lambda self: self._session_config)
    keep_checkpoint_max = property(lambda self: self._keep_checkpoint_max)
    keep_checkpoint_every_n_hours = property(lambda self: self._keep_checkpoint_every_n_hours)
    log_step_count_steps = property(lambda self: self._log_step_count_steps)
    train_distribute = property(lambda self: self._train_distribute)
    eval_distribute = property(lambda self: self._eval_distribute)
    device_fn = property(lambda self: self._device_fn)
    protocol = property(lambda self: self._protocol)
    experimental_max_worker_delay_secs = property(
        lambda self: self._experimental_max_worker_delay_secs
    )
    session_creation_timeout_secs = property(lambda self: self._session_creation_timeout_secs)

    # -- the cluster of one local task, as TF reports it without TF_CONFIG -------------------
    cluster_spec = property(lambda self: None)
    evaluation_master = property(lambda self: "")
    is_chief = property(lambda self: True)
    master = property(lambda self: "")
    num_ps_replicas = property(lambda self: 0)
    num_worker_replicas = property(lambda self: 1)
    task_id = property(lambda self: 0)
    task_type = property(lambda self: TaskType.WORKER)
    global_id_in_cluster = property(lambda self: 0)
    service = property(lambda self: None)

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, '_' + name)!r}" for name in _REPLACEABLE)
        return f"RunConfig({fields})"


def _model_dir_from_tf_config(model_dir: str | None) -> str | None:
    """`model_dir`, or TF_CONFIG's (they must agree when both are set).

    Raises:
      ValueError: an empty model_dir, a disagreement, or a TF_CONFIG naming a cluster.
    """
    if model_dir == "":
        raise ValueError("model_dir should be non-empty.")
    tf_config = json.loads(os.environ.get("TF_CONFIG", "{}"))
    if tf_config.get("cluster"):
        raise ValueError(
            "TF_CONFIG names a cluster: sluice's Estimator runs in one process; "
            "use sl.distribution for training on several processes."
        )
    in_tf_config = tf_config.get("model_dir")
    if in_tf_config == "":
        raise ValueError("model_dir in TF_CONFIG should be non-empty.")
    if in_tf_config and model_dir and in_tf_config != model_dir:
        raise ValueError(
            "`model_dir` provided in RunConfig construct, if set, must have the same value "
            f"as the model_dir in TF_CONFIG. model_dir: {model_dir}\n"
            f'TF_CONFIG["model_dir"]: {in_tf_config}.\n'
        )
    return model_dir or in_tf_config
