"""`Model` (functional and subclassed); `Sequential` (module `sequential`) is one too.

A model owns one graph and, through it, one Session (`sluice._keras.layers.runtime`):
  * functional, `Model(inputs, outputs)`: the graph of `inputs` (from `sl.Input`, built in the
    default graph). The layers called between them are found by walking back from `outputs`
    through the calls that produced each tensor; `fit` replays those calls with training=True
    on the same inputs (one more forward pass in the graph, sharing the weights), while predict
    and evaluate use `outputs` as built (training=False);
  * `Sequential([...])` and subclasses of `Model` (which define `call`): a new graph of their
    own, built when the input shape is known: from an `Input`/`InputLayer` or `input_shape=`
    on the first layer, from `build(input_shape)`, or from the first data given to fit or
    predict. Used as a layer inside another model instead, they build in that model's graph.

>>> x = np.random.default_rng(0).normal(size=(32, 4)).astype("float32")
>>> y = x.sum(axis=1, keepdims=True)
>>> Dense = sl.layers.Dense
>>> model = sl.Sequential([sl.Input((4,)), Dense(8, activation="relu"), Dense(1)])
>>> model.compile("adam", "mse"); history = model.fit(x, y, epochs=3, verbose=0)
>>> len(history.history["loss"]), model.predict(x, verbose=0).shape
(3, (32, 1))
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from sluice._export import export
from sluice._keras.layers import base, runtime, tracking
from sluice._keras.layers.core.input_layer import InputLayer, input_layer_of
from sluice._keras.models import functional_config, input_rank, summary
from sluice._keras.models.functional import nodes_between
from sluice._keras.models.trainer import Trainer
from sluice._keras.saving import keras_archive, serialization, weights_file
from sluice._keras.utils import rng_utils
from sluice._tf1.cells import nest
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Graph, Tensor


@export("Model", "models.Model")
class Model(Trainer, base.Layer):
    """A trainable graph of layers: `Model(inputs, outputs)` (functional), or a subclass that
    defines `call(inputs, training=None)` (see the module docstring).

    Args:
      inputs: a Tensor from `sl.Input`, or a list or dict of them.
      outputs: the Tensor(s) computed from `inputs` by layers.
      name: the model's name (default "functional", or the class name in snake case).
      trainable: whether fit updates the weights.
    """

    _named_outputs = False  # a Sequential's outputs are named by its layers too

    def __init__(self, *args: Any, **kwargs: Any):
        inputs = kwargs.pop("inputs", args[0] if args else None)
        outputs = kwargs.pop("outputs", args[1] if len(args) > 1 else None)
        if len(args) > 2:
            raise TypeError(
                "Model(inputs, outputs, name=None, trainable=True) takes 2 positional arguments."
            )
        functional = inputs is not None or outputs is not None
        base.Layer.__init__(self, **kwargs)
        if functional and self._auto_named and type(self) is Model:
            self.name = self._base_name = "functional"
        self._init_trainer()
        self._layers: list[base.Layer] = []
        self._graph_nodes: list[tracking.Node] = []
        self._input_struct: Any = None
        self._input_names: list[str] = []
        self._output_struct: Any = None
        self._inference_outputs: Any = None
        self._functional = functional
        self._pending_optimizer_state: list | None = None  # see defer_optimizer_state
        if functional:
            if inputs is None or outputs is None:
                raise ValueError("A functional Model needs both `inputs` and `outputs`.")
            self._init_functional(inputs, outputs)

    # -- functional -----------------------------------------------------------------------------
    def _init_functional(self, inputs: Any, outputs: Any) -> None:
        flat_in, flat_out = nest.flatten(inputs), nest.flatten(outputs)
        input_layers = []
        for t in flat_in:
            layer = input_layer_of(t)
            if layer is None:
                raise ValueError(f"Model inputs must be tensors made by sl.Input(...), got {t!r}.")
            input_layers.append(layer)
        for t in flat_out:
            if not isinstance(t, Tensor):
                raise TypeError(f"Model outputs must be symbolic Tensors, got {t!r}.")
        self._enter_graph(tracking.graph_of(flat_in + flat_out))
        runtime.manage(self._graph)
        self._graph_nodes = nodes_between(flat_in, flat_out)
        layers = list(input_layers)
        for node in self._graph_nodes:
            if node.layer not in layers:
                layers.append(node.layer)
        names = [layer.name for layer in layers]
        for name in names:
            if names.count(name) > 1:  # Keras's check: a saved model refers to layers by name
                raise ValueError(
                    f"The name {name!r} is used {names.count(name)} times in model "
                    f"{self.name!r}; the names of a model's layers must be unique."
                )
        self._layers = layers
        self._set_inputs(inputs, input_layers)
        self._output_struct = outputs
        self._inference_outputs = outputs
        self.built = True

    def _set_inputs(self, struct: Any, input_layers: list[InputLayer]) -> None:
        self._input_struct = struct
        self._input_names = [layer.name for layer in input_layers]
        if isinstance(struct, dict) and all(
            isinstance(k, str) and isinstance(v, Tensor) for k, v in struct.items()
        ):  # as in Keras, a dict of inputs is fed by its keys (nest.flatten's order: sorted)
            self._input_names = sorted(struct)

    def _replay(self, inputs: Any) -> Any:
        """The functional graph applied to new input tensors (each node's layer called again)."""
        inputs = input_rank.adjust_tensors(self, inputs)  # Keras's trailing axis of size 1
        flat_orig, flat_new = nest.flatten(self._input_struct), nest.flatten(inputs)
        if len(flat_orig) != len(flat_new):
            raise ValueError(
                f"Model {self.name!r} takes {len(flat_orig)} inputs, got {len(flat_new)}."
            )
        mapping = dict(zip(flat_orig, flat_new))

        def swap(v):
            return mapping.get(v, v) if isinstance(v, Tensor) else v

        for node in self._graph_nodes:
            args = nest.map_structure(swap, node.args)
            kwargs = nest.map_structure(swap, node.kwargs)
            outputs = node.layer(*args, **kwargs)
            for old, new in zip(nest.flatten(node.outputs), nest.flatten(outputs)):
                mapping[old] = new
        return nest.map_structure(lambda t: mapping[t], self._output_struct)

    def call(self, inputs: Any, training: bool | None = None, mask: Any = None) -> Any:
        if not self._functional:
            raise NotImplementedError(
                f"{type(self).__name__} must define call(inputs, training=None)."
            )
        return self._replay(inputs)

    # -- building -------------------------------------------------------------------------------
    def _standalone_graph(self) -> Graph:
        """The model's graph; a new one (seeded like the default graph or by set_random_seed)
        when the model has none yet."""
        if self._graph is None:
            g = Graph()
            seed = rng_utils.get_random_seed()
            g.seed = seed if seed is not None else graph_lib.get_default_graph().seed
            self._enter_graph(g)
            runtime.manage(g)
        return self._graph

    def _build_for_call(self, input_shape: Any) -> None:
        pass  # a model used as a layer builds its layers as its call calls them

    def _forward(self, inputs: Any, training: bool) -> Any:
        """One forward pass of the model on `inputs` in its graph."""
        with self._graph.as_default(), tracking.forward_pass(training):
            if "training" in self._call_arguments():
                return self.call(inputs, training=training)
            return self.call(inputs)

    def build(self, input_shape: Any = None, dtype: Any = None) -> None:
        """Builds the model for inputs of `input_shape` (with the batch dim; a list of shapes for
        several inputs): placeholders, and a forward pass that creates the weights."""
        if self._input_struct is not None:
            return
        if input_shape is None:
            raise ValueError(f"Model {self.name!r}: build() needs an input_shape.")
        several = (
            isinstance(input_shape, list)
            and input_shape
            and isinstance(input_shape[0], (list, tuple))
        )
        shapes = list(input_shape) if several else [input_shape]
        kinds = dtype if isinstance(dtype, (list, tuple)) else [dtype] * len(shapes)
        g = self._standalone_graph()
        with g.as_default():
            layers = [
                InputLayer(batch_shape=tuple(s), dtype=k or self.dtype)
                for s, k in zip(shapes, kinds)
            ]
        placeholders = [layer.output for layer in layers]
        self._set_inputs(placeholders if several else placeholders[0], layers)
        self._inference_outputs = self._forward(self._input_struct, training=False)
        self.built = True

    def _ensure_built(self, arrays: list[np.ndarray]) -> None:
        """Builds the model from the shapes and dtypes of the first data it is given."""
        if self._input_struct is not None:
            return
        shapes = [(None,) + tuple(a.shape[1:]) for a in arrays]
        kinds = [_input_dtype(a, self.dtype) for a in arrays]
        self.build(shapes if len(shapes) > 1 else shapes[0], kinds if len(kinds) > 1 else kinds[0])

    # -- the model's parts ----------------------------------------------------------------------
    @property
    def layers(self) -> list[base.Layer]:
        if self._layers or self._functional:
            return list(self._layers)
        return self._sublayers()

    def _sublayers(self) -> list[base.Layer]:
        found = list(self._layers)
        for layer in base.Layer._sublayers(self):
            if layer not in found:
                found.append(layer)
        return found

    def get_layer(self, name: str | None = None, index: int | None = None) -> base.Layer:
        """A layer by name or by index in `layers`."""
        if index is not None:
            if not -len(self.layers) <= index < len(self.layers):
                raise ValueError(
                    f"Was asked to retrieve layer at index {index} but model {self.name!r} only "
                    f"has {len(self.layers)} layers."
                )
            return self.layers[index]
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise ValueError(
            f"No such layer: {name}. Existing layers are: {[layer.name for layer in self.layers]}."
        )

    @property
    def input(self) -> Any:
        """The model's input tensor(s), in the structure it was built with (one Tensor, a list
        or a dict), as Keras's `model.input`."""
        if self._input_struct is not None:
            return self._input_struct
        return super().input

    @property
    def output(self) -> Any:
        """The model's output tensor(s), in the structure it was built with."""
        if self._inference_outputs is not None:
            return self._inference_outputs
        return super().output

    @property
    def inputs(self) -> list[Tensor]:
        return nest.flatten(self._input_struct) if self._input_struct is not None else []

    @property
    def outputs(self) -> list[Tensor]:
        return nest.flatten(self._inference_outputs) if self._inference_outputs is not None else []

    @property
    def output_names(self) -> list[str] | None:
        """The names of the layers whose calls make the outputs, in flat order (Keras 3's
        `output_names` of a functional model or a Sequential); None for a subclassed model
        (its outputs are made inside `call`) or one not built yet."""
        if not (self._functional or self._named_outputs) or self._inference_outputs is None:
            return None
        names = []
        for t in self.outputs:
            node = tracking.producing_node(t)
            layer = node.layer if node is not None else input_layer_of(t)
            names.append(layer.name if layer is not None else t.op.name)
        return names

    @property
    def input_shape(self) -> Any:
        shapes = [tracking.shape_tuple(t) for t in self.inputs]
        return shapes[0] if len(shapes) == 1 else shapes

    @property
    def output_shape(self) -> Any:
        shapes = [tracking.shape_tuple(t) for t in self.outputs]
        return shapes[0] if len(shapes) == 1 else shapes

    @property
    def session(self) -> Any:
        """The Session holding the values of the model's variables."""
        return self._runtime().session

    def summary(
        self,
        line_length: int | None = None,
        positions: Any = None,
        print_fn: Any = None,
        **kwargs: Any,
    ) -> None:
        """Prints the layers, their output shapes and parameter counts, and the totals."""
        summary.print_summary(self, line_length=line_length or 80, print_fn=print_fn or print)

    # -- weights ----------------------------------------------------------------------------------
    def save_weights(self, filepath: str, overwrite: bool = True) -> None:
        """Writes every weight to the h5 file `filepath` (see `sluice.saving`)."""
        weights_file.save_weights(self, filepath, overwrite)

    def load_weights(
        self, filepath: str, skip_mismatch: bool = False, by_name: bool = False
    ) -> None:
        """Loads weights from `save_weights`'s files, Keras 3 `.weights.h5` and `.keras` files,
        and Keras 2 HDF5 files (by layer order, or by layer name with `by_name`); names, shapes
        and dtypes are checked before anything is written (see `sluice.saving`)."""
        if not self.built:
            raise ValueError(
                f"Model {self.name!r} is not built yet: build it, or fit/predict once, first."
            )
        weights_file.load_weights(self, filepath, skip_mismatch, by_name=by_name)

    def reset_states(self) -> None:
        """Zeroes the states of every stateful layer in the model (Keras 2's `reset_states`,
        which older scripts call between epochs of a stateful RNN)."""
        for layer in self.layers:
            if hasattr(layer, "reset_states"):
                layer.reset_states()

    def get_weights(self) -> list[np.ndarray]:
        # copies the caller may change, as Keras's (the session's arrays are read-only)
        return [np.array(w) for w in runtime.read_values(self._graph, self.weights)]

    def set_weights(self, weights: list[Any]) -> None:
        runtime.write_values(self._graph, self.weights, weights, f"model {self.name!r}")

    def save(
        self, filepath: str, overwrite: bool = True, zipped: bool | None = None, **kwargs: Any
    ) -> None:
        """Saves the whole model (config, weights, compile and optimizer state) as a Keras 3
        `.keras` file; `sl.models.load_model` reads it back. See
        `sluice._keras.saving.keras_archive`."""
        keras_archive.save_model(self, filepath, overwrite=overwrite, zipped=zipped, **kwargs)

    # -- config -----------------------------------------------------------------------------------
    @property
    def _public_path(self) -> str | None:
        """Keras's name of the class a functional model is saved as (None: by its own class)."""
        if self._functional and type(self) is Model:
            return "keras.src.models.functional.Functional"
        return None

    def get_config(self) -> dict:
        """A functional model's layers and how they are called (Keras 3's format, see
        `functional_config`); a subclassed model's `__init__` arguments (override it)."""
        if self._functional:
            return functional_config.get_config(self)
        return base.Layer.get_config(self)

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> Model:
        if all(k in config for k in ("layers", "input_layers", "output_layers")):
            return functional_config.from_config(cls, config, custom_objects)
        return cls(**config)

    def get_build_config(self) -> dict | None:
        """{"input_shape": ...} of a built model whose inputs are not in its config."""
        if self._functional or self._input_struct is None:
            return None
        return {"input_shape": self.input_shape}

    def build_from_config(self, config: dict) -> None:
        if serialization.rebuilding_a_model_part():
            return  # a part of a model being rebuilt: built in that model's graph when called
        shape = config.get("input_shape") if isinstance(config, dict) else None
        if shape is not None:
            self.build(shape)

    def get_compile_config(self) -> dict | None:
        """The arguments `compile` was given (Keras's `compile_config`), None if not compiled."""
        if not self.compiled:
            return None
        return {
            "optimizer": keras_archive.serialize_optimizer(self.optimizer),
            "loss": serialization.serialize_keras_object(self.loss),
            "loss_weights": self.loss_weights,
            "metrics": serialization.serialize_keras_object(self._metric_identifiers) or None,
            "weighted_metrics": serialization.serialize_keras_object(
                self._weighted_metric_identifiers
            ),
            "run_eagerly": False,
            "steps_per_execution": self._steps_per_execution,
            "jit_compile": _JIT_COMPILE[self._engine],
        }

    def compile_from_config(self, config: dict) -> None:
        """`compile` with the arguments of a `compile_config` (objects deserialized). A model
        whose class overrides `compile` is left uncompiled with a warning, as Keras does: its
        arguments are its own, so the caller compiles it again after loading."""
        if type(self).compile is not Model.compile:
            warnings.warn(
                "`compile()` was not called as part of model loading because the model's "
                "`compile()` method is custom. All subclassed Models that have `compile()` "
                "overridden should also override `get_compile_config()` and "
                "`compile_from_config(config)`. Alternatively, you can call `compile()` "
                "manually after loading.",
                stacklevel=2,
            )
            return
        if not isinstance(config, dict):
            raise ValueError(f"A compile_config must be a dict, got {config!r}.")
        known = ("optimizer", "loss", "loss_weights", "metrics", "weighted_metrics",
                 "run_eagerly", "steps_per_execution", "jit_compile")  # fmt: skip
        if "optimizer" in config:
            config = {**config, "optimizer": _without_keras_only_defaults(config["optimizer"])}
        args = {k: serialization.deserialize_keras_object(config[k]) for k in known if k in config}
        self.compile(**args)

    # -- optimizer state loaded with the model ----------------------------------------------------
    def compile(self, *args: Any, **kwargs: Any) -> None:
        self._pending_optimizer_state = None  # a new optimizer starts afresh, as in Keras
        super().compile(*args, **kwargs)

    compile.__doc__ = Trainer.compile.__doc__

    @property
    def pending_optimizer_state(self) -> list | None:
        """The optimizer values `load_model` read, kept until the optimizer's Variables exist."""
        return self._pending_optimizer_state

    def defer_optimizer_state(self, state: list) -> None:
        """Keeps optimizer values read from a file until training makes the optimizer's
        Variables; they are restored then (a new `compile` drops them, as in Keras)."""
        self._pending_optimizer_state = state

    def _prepare_training(self, xs: list, y: Any) -> Any:
        function = super()._prepare_training(xs, y)
        pending = getattr(self, "_pending_optimizer_state", None)
        if pending is not None:  # load_model's: the optimizer's Variables exist only now
            keras_archive.restore_optimizer_state(self, pending)  # kept pending if it raises
            self._pending_optimizer_state = None
        return function


_JIT_COMPILE = {"auto": "auto", "compiled": True, "interpreted": False}
# Optimizer options Keras 3 writes into every optimizer config that sluice's optimizers do not
# take; at these values they change nothing, so a file Keras wrote loads.
_KERAS_ONLY_OPTIMIZER_DEFAULTS = {
    "use_ema": False,
    "ema_momentum": 0.99,
    "ema_overwrite_frequency": None,
    "loss_scale_factor": None,
    "gradient_accumulation_steps": None,
}


def _without_keras_only_defaults(optimizer: Any) -> Any:
    """An optimizer config without the Keras-only options at their defaults (others stay, and
    the optimizer's constructor refuses them by name)."""
    if not isinstance(optimizer, dict) or not isinstance(optimizer.get("config"), dict):
        return optimizer
    inner = {
        k: v for k, v in optimizer["config"].items()
        if k not in _KERAS_ONLY_OPTIMIZER_DEFAULTS or v != _KERAS_ONLY_OPTIMIZER_DEFAULTS[k]
    }  # fmt: skip
    return {**optimizer, "config": inner}


def _input_dtype(array: np.ndarray, default: str) -> Any:
    if np.issubdtype(array.dtype, np.integer):
        return dtypes.int32
    if array.dtype == bool:
        return dtypes.bool_
    return default


# Keras 3 saves a functional model as this internal class
serialization.register_builtin("keras.src.models.functional.Functional", Model)
