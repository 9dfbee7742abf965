"""`keras.optimizers.schedules.serialize` and `deserialize`: a learning-rate schedule as Keras 3
writes it, {"module": "keras.optimizers.schedules", "class_name": "ExponentialDecay", "config":
{...}, "registered_name": None}, and back (a custom schedule by its registered name, or from
`custom_objects`). They live with Keras's serialization, above the optimizers, and register
themselves there so that an optimizer's `get_config`/`from_config` write and read its schedule.

>>> schedule = sl.optimizers.schedules.CosineDecay(0.1, decay_steps=100)
>>> config = sl.optimizers.schedules.serialize(schedule)
>>> config["module"], config["class_name"], config["config"]["decay_steps"]
('keras.optimizers.schedules', 'CosineDecay', 100)
>>> type(sl.optimizers.schedules.deserialize(config)).__name__
'CosineDecay'
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.optimizers import keras_schedules
from sluice._keras.saving import serialization


@export("optimizers.schedules.serialize")
def serialize(learning_rate_schedule: Any) -> dict:
    """The Keras config of a schedule (see the module docstring)."""
    return serialization.serialize_keras_object(learning_rate_schedule)


@export("optimizers.schedules.deserialize")
def deserialize(config: dict, custom_objects: dict | None = None) -> Any:
    """The schedule a config describes.

    Raises:
      ValueError: an unknown class; TypeError: a config that names no schedule.
    """
    schedule = serialization.deserialize_keras_object(config, custom_objects=custom_objects)
    if not callable(schedule):
        raise TypeError(f"Could not interpret learning rate schedule config: {config!r}.")
    return schedule


keras_schedules.set_codec(serialize, deserialize)
