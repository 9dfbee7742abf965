"""`get`, `serialize` and `deserialize` of a family of Keras objects found by name.

`keras.initializers`, `keras.constraints`, `keras.regularizers` and `keras.activations` each
have the same three functions (Keras 3's `keras/src/<family>/__init__.py`): `get` takes a name,
a config dict, a class or a callable; `serialize` writes a built-in as {"module":
"keras.<family>", "class_name", "config", "registered_name": None}; `deserialize` reads such a
config back. A `Family` is that logic written once; each module declares its family and exports
thin functions over it.

>>> from sluice._keras import constraints
>>> constraints.FAMILY.get("max_norm").max_value
2
>>> constraints.FAMILY.serialize(constraints.NonNeg())["class_name"]
'NonNeg'
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import re
from collections.abc import Mapping
from typing import Any

from sluice._keras.saving import serialization


def to_snake_case(name: str) -> str:
    """Keras's `naming.to_snake_case`: "BatchNormalization" -> "batch_normalization",
    "Conv2D" -> "conv2d", "SimpleRNN" -> "simple_rnn", "L1L2" -> "l1l2"."""
    name = re.sub(r"\W+", "", name)
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


@dataclasses.dataclass(frozen=True)
class Family:
    """One family of Keras objects.

    Attributes:
      kind: what the messages call one ("constraint", "activation function").
      module: the Keras module its built-ins are saved under ("keras.constraints").
      classes: the built-in classes, saved and read back by their class name.
      aliases: more names `get` takes (Keras's aliases, its functions by name).
      instantiate: whether `get` of a class (or of a name naming one) gives a new instance
        (activations: no, a class is a callable like any other).
      unknown_name: the message for a name nobody knows, formatted with the name.
    """

    kind: str
    module: str
    classes: tuple[type, ...] = ()
    aliases: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    instantiate: bool = True
    unknown_name: str = ""

    @functools.cached_property
    def by_class_name(self) -> dict[str, type]:
        return {cls.__name__: cls for cls in self.classes}

    @functools.cached_property
    def names(self) -> dict[str, Any]:
        """Every name `get` knows: the class names, their snake_case forms, the aliases."""
        snake = {to_snake_case(name): cls for name, cls in self.by_class_name.items()}
        return {**self.by_class_name, **snake, **self.aliases}

    def get(self, identifier: Any) -> Any:
        """Keras's `get`: None gives None; a dict is `deserialize`d; a name is looked up in
        `names`, then among the objects registered with `register_keras_serializable`; a class
        gives a new instance (when `instantiate`); any other callable is itself.

        Raises:
          ValueError: an unknown name, or anything else.
        """
        if identifier is None:
            return None
        if isinstance(identifier, dict):
            return self.deserialize(identifier)
        if isinstance(identifier, str):
            found = self.names.get(identifier)
            if found is None:
                found = serialization.get_registered_object(identifier)
            if found is None or not callable(found):
                message = self.unknown_name or f"Could not interpret {self.kind} identifier: {{}}"
                raise ValueError(
                    f"{message.format(identifier)}. Known names: {sorted(self.names)}; register "
                    "others with @sl.saving.register_keras_serializable()."
                )
            identifier = found
        if inspect.isclass(identifier) and self.instantiate:
            return identifier()
        if callable(identifier):
            return identifier
        raise ValueError(f"Could not interpret {self.kind} identifier: {identifier!r}")

    def serialize(self, obj: Any) -> Any:
        """A built-in as Keras 3 saves it ({"module", "class_name", "config",
        "registered_name": None}); anything else as `serialize_keras_object` writes it; None
        for None."""
        if obj is None:
            return None
        cls = type(obj)
        if self.by_class_name.get(cls.__name__) is cls:
            return {"module": self.module, "class_name": cls.__name__,
                    "config": obj.get_config(), "registered_name": None}  # fmt: skip
        return serialization.serialize_keras_object(obj)

    def deserialize(self, config: Any, custom_objects: dict | None = None) -> Any:
        """The object a `serialize` config describes (also the older {"class_name", "config"}
        form; a name is `get`): a class of `custom_objects` or of the registry first, then the
        family's built-ins by class name, then any Keras object.

        Raises:
          ValueError: not a config, or a class name nobody knows.
        """
        if isinstance(config, str):
            return self.get(config)
        if not isinstance(config, dict) or not isinstance(config.get("class_name"), str):
            raise ValueError(
                f"A {self.kind} config must be a dict with a class_name, got {config!r}."
            )
        name = config["class_name"]
        custom = (config.get("registered_name"), name)
        if not any(
            isinstance(key, str) and serialization.get_registered_object(key, custom_objects)
            for key in custom
        ):
            cls = self.names.get(name)  # or an alias Keras saved ("OrthogonalInitializer")
            if inspect.isclass(cls):
                return cls.from_config(dict(config.get("config") or {}))
        return serialization.deserialize_keras_object(config, custom_objects)
