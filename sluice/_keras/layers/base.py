"""`Layer`: the Keras 3 life cycle on a sluice graph.

    layer = Dense(4)              # __init__ stores the configuration; no graph, no weights yet
    y = layer(x)                  # x: a symbolic Tensor (e.g. sl.Input). The first call enters
                                  # x's graph, names the layer, calls build(input_shape) (which
                                  # creates weights with add_weight), then call(x): graph ops
    layer.get_config()            # the __init__ arguments; Dense.from_config(config) rebuilds it

Names. A layer without a `name` gets its class name in snake case ("dense"); on its first call
it is made unique among the layers of its graph ("dense_1", ...), so one model built twice, in
two graphs, has the same names. A layer first called inside another layer's `call` or `build`
(an LSTM's cell, a Bidirectional's copies, a nested model's layers) is named inside its
parent instead. Each weight is the Variable `<layer path>/<weight name>`: `dense/kernel`,
`lstm/lstm_cell/recurrent_kernel`, `bidirectional/forward_lstm/lstm_cell/bias`.

What a call leaves behind besides ops (the Node that made each output, masks, updates and
losses for the training step) is kept by `tracking`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import weakref
from typing import Any

import numpy as np

from sluice._export import export
from sluice._keras import config
from sluice._keras import constraints as constraints_lib
from sluice._keras import initializers as initializers_lib
from sluice._keras import random as keras_random
from sluice._keras import regularizers as regularizers_lib
from sluice._keras.array import as_array
from sluice._keras.layers import input_spec, runtime, stateless, tracking, value_calls
from sluice._keras.layers.tracking import (
    Node,
    get_mask,
    graph_of,
    layer_names,
    outer_training,
    parent_layer,
    record_node,
    set_mask,
    shape_tuple,
    unique_name,
)
from sluice._keras.optimizers import weight_constraints
from sluice._keras.utils import traceback_utils
from sluice._tf1.cells import nest
from sluice._tf1.cells.scopes import snake_case
from sluice.framework import state_cells
from sluice.framework import variables as variables_lib
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir import tracing as trace_scope
from sluice.framework.ir.graph import Graph, Operation, Tensor
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.variables import Variable


@dataclasses.dataclass(frozen=True)
class Weight:
    """A layer's weight: its name inside the layer, its Variable, its regularizer and its
    constraint (also the Variable's `constraint`, which the optimizer applies after each step)."""

    name: str
    variable: Variable
    regularizer: Any = None
    constraint: Any = None


@export("layers.Layer")
class Layer:
    """The base class of every layer (Keras 3 life cycle; see the module docstring).

    Subclasses override `__init__` (store the configuration, call `super().__init__(**kwargs)`),
    `build(input_shape)` (create weights with `add_weight`), `call(inputs, training=None,
    mask=None)` (build ops; declare only the arguments used), `compute_output_shape` and
    `get_config`.

    Args:
      activity_regularizer: a regularizer of the outputs (a loss term divided by the batch size, in
        training and evaluation, as Keras 3).
      trainable: whether the weights are trained.
      dtype: the layer's dtype policy (Keras 3's): a dtype name ("float32") for its weights and
        computations, "mixed_float16" / "mixed_bfloat16" to compute in 16 bits with float32
        weights, or a `DTypePolicy`; default the global policy (`sl.config.dtype_policy()`).
      autocast: whether floating inputs are cast to the compute dtype, and, for a mixed policy,
        floating weights read in `call` too.
      name: the layer's name (default: the class name in snake case, made unique in its graph).
      input_shape, input_dim: the input shape without the batch (first layer of a Sequential).
    """

    def __init_subclass__(cls, **kwargs: Any):
        super().__init_subclass__(**kwargs)
        build = cls.__dict__.get("build")
        if build is not None and not getattr(build, "_marks_built", False):
            cls.build = _marking_built(build)

    def __init__(
        self,
        activity_regularizer: Any = None,
        trainable: bool = True,
        dtype: Any = None,
        autocast: bool = True,
        name: str | None = None,
        **kwargs: Any,
    ):
        input_shape = kwargs.pop("input_shape", None)
        input_dim = kwargs.pop("input_dim", None)
        batch_input_shape = kwargs.pop("batch_input_shape", None)
        if kwargs:
            raise TypeError(
                f"{type(self).__name__}: unexpected keyword arguments {sorted(kwargs)}."
            )
        if name is not None and (not isinstance(name, str) or "/" in name or not name):
            raise ValueError(f"A layer name must be a non-empty string without '/', got {name!r}.")
        self.name = name or snake_case(type(self).__name__)
        self._base_name = self.name  # before it is made unique in a graph
        self._auto_named = name is None
        self.trainable = bool(trainable)
        self._dtype_policy = config.get_dtype_policy(dtype)
        self._dtype = dtypes.as_dtype(self._dtype_policy.variable_dtype)  # of the weights
        self.autocast = bool(autocast)
        self.activity_regularizer = regularizers_lib.get(activity_regularizer)
        self.built = False
        self.supports_masking = False
        self._graph: Graph | None = None  # the graph of the first call, where it was built
        self._other_graphs: weakref.WeakSet[Graph] = weakref.WeakSet()  # later calls' graphs
        self._path: str | None = None
        self._weights: list[Weight] = []
        self._child_names: set[str] = set()
        # calls in the layer's own graph, and weak references to calls in other graphs (kept by
        # their graph's call records): a model that calls a long-lived layer is freed with its
        # graph
        self._nodes: list[Node | weakref.ref] = []
        self._value_losses: list[Any] = []  # the `add_loss` values of the last call on arrays
        if batch_input_shape is not None:
            self._input_shape_arg = tuple(batch_input_shape)
        elif input_shape is not None:
            self._input_shape_arg = (None,) + tuple(input_shape)
        elif input_dim is not None:
            self._input_shape_arg = (None, int(input_dim))
        else:
            self._input_shape_arg = None

    # -- configuration --------------------------------------------------------------------------
    @property
    def dtype(self) -> str:
        """The dtype of the layer's weights, by name ("float32"): `variable_dtype`, as Keras 3."""
        return self._dtype.name

    @property
    def dtype_policy(self) -> Any:
        """The layer's `DTypePolicy`."""
        return self._dtype_policy

    @dtype_policy.setter
    def dtype_policy(self, value: Any) -> None:
        if self._weights:
            raise ValueError(
                f"Layer {self.name!r} has weights already: set its dtype_policy before it is built."
            )
        self._dtype_policy = config.get_dtype_policy(value)
        self._dtype = dtypes.as_dtype(self._dtype_policy.variable_dtype)

    @property
    def compute_dtype(self) -> str:
        """The dtype of the layer's computations, inputs and outputs."""
        return self._dtype_policy.compute_dtype

    @property
    def variable_dtype(self) -> str:
        return self._dtype.name

    def _config_dtype(self) -> Any:
        """`dtype` in the config: the dtype name, or for a mixed policy its config as Keras 3
        saves it."""
        policy = self._dtype_policy
        if policy.compute_dtype == policy.variable_dtype:
            return self.dtype
        return {"module": "keras", "class_name": "DTypePolicy",
                "config": policy.get_config(), "registered_name": None}  # fmt: skip

    def get_config(self) -> dict:
        """The arguments that rebuild this layer with `from_config` (Keras's config)."""
        config = {"name": self.name, "trainable": self.trainable, "dtype": self._config_dtype()}
        if self.activity_regularizer is not None:
            config["activity_regularizer"] = regularizers_lib.serialize(self.activity_regularizer)
        return config

    @classmethod
    def from_config(cls, config: dict) -> Layer:
        return cls(**config)

    # -- the graph and the names ----------------------------------------------------------------
    @property
    def graph(self) -> Graph | None:
        """The graph of the layer's first call, where it was built (None before that). Its
        weights are used from any graph it is called in."""
        return self._graph

    @property
    def path(self) -> str:
        """The layer's path: the prefix of its weights' names ("dense", "lstm/lstm_cell")."""
        return self._path if self._path is not None else self.name

    def _enter_graph(self, g: Graph, parent: Layer | None = None) -> None:
        """Names the layer on its first call (fixing its path, the prefix of its weights) and
        records that it is used in `g`. A layer may be called in any number of graphs: its
        weights are state cells, mirrored in each (see `sluice.framework.state_cells`)."""
        if self._graph is not None:
            if g is not self._graph and g not in self._other_graphs:
                self._other_graphs.add(g)
                for w in self._weights:  # `v.value` in `call` then reads the mirror here
                    w.variable.graph_variable(g)
                if parent is None:
                    self._take_name_in(layer_names(g))
            return
        self._graph = g
        taken = parent._child_names if parent is not None else layer_names(g)
        if self._auto_named:
            self.name = unique_name(self.name, taken)
        elif self.name in taken and parent is not None:
            raise ValueError(
                f"The layer name {self.name!r} is used twice in layer {parent.name!r}; the "
                "names of a layer's sublayers must be unique (leave `name` out to get a unique "
                "one)."
            )
        else:  # as in Keras, a name given is kept: two models may each hold an "encoder"
            taken.add(self.name)
        self._path = self.name if parent is None else f"{parent.path}/{self.name}"
        for attribute, generator in keras_random.generators_of(self):
            generator.set_path(f"{self._path}/{attribute}")  # stable checkpoint names

    def _take_name_in(self, taken: set[str]) -> None:
        """Reserves the layer's name among the top-level layers of another graph it is called
        in; an auto-named layer whose name is taken there gets the next free one (two
        `Sequential`s built in graphs of their own are both "sequential" until a model holds
        both, where Keras's global names would differ)."""
        if self.name not in taken:
            taken.add(self.name)
        elif self._auto_named:
            self.name = unique_name(self._base_name, taken)

    def _build_sublayer(self, layer: Layer, input_shape: Any) -> None:
        """Builds `layer` as a child of this one (for layers used inside `call` without being
        called, such as an RNN's cell)."""
        if self._graph is None:  # build() called by hand, before any call (as in add_weight)
            self._enter_graph(graph_lib.get_default_graph(), parent_layer())
        layer._enter_graph(self._graph, self)
        if not layer.built:
            with self._graph.name_scope(layer.name):
                layer.build(input_shape)
            layer.built = True

    # -- weights --------------------------------------------------------------------------------
    def add_weight(
        self,
        shape: Any = None,
        initializer: Any = None,
        dtype: Any = None,
        trainable: bool = True,
        autocast: bool = True,
        regularizer: Any = None,
        constraint: Any = None,
        aggregation: str = "none",
        overwrite_with_gradient: bool = False,
        name: str | None = None,
    ) -> Variable:
        """Creates the weight `<layer path>/<name>` (call it from `build`).

        Args:
          shape: its fully known shape.
          initializer: a name ("glorot_uniform", "zeros", ...), an Initializer or a callable
            `(shape, dtype) -> Tensor`; default glorot_uniform for floats, zeros otherwise.
          dtype: default the layer's dtype.
          trainable: whether the optimizer updates it.
          regularizer: adds `regularizer(weight)` to the training loss.
          constraint: a constraint (name, config, `sl.constraints` object or callable) that the
            optimizer applies to the weight after each update.
          name: its name inside the layer ("kernel").

        Returns:
          The Variable.
        """
        constraint = constraints_lib.get(constraint)
        if self._graph is None:  # build() called by hand, before any call
            self._enter_graph(graph_lib.get_default_graph(), parent_layer())
        dtype = dtypes.as_dtype(
            config.get_dtype_policy(dtype).variable_dtype if dtype is not None else self._dtype
        )
        name = name or f"variable_{len(self._weights)}"
        if any(w.name == name for w in self._weights):
            raise ValueError(f"Layer {self.name!r} already has a weight named {name!r}.")
        shape = [int(d) for d in (shape or ())]
        if initializer is None:
            initializer = "glorot_uniform" if dtypes.is_floating(dtype) else "zeros"
        init = initializers_lib.get(initializer)
        g = self._graph

        def initial_value():
            with trace_scope.outside_trace():  # computed once, as Keras makes variables eagerly
                return init(shape, dtype=dtype)

        with g.as_default(), g.name_scope(None):
            variable = Variable(
                initial_value,
                trainable=trainable,
                name=f"{self.path}/{name}",
                dtype=dtype,
                constraint=constraint,
            )
        path = variable.op.get_attr("shared_name")
        cell = state_cells.StateCell(
            path, dtype, variable.shape, initial_value, trainable, autocast=autocast
        )
        state_cells.attach(variable, cell)
        weight_constraints.constrain(variable, constraint)
        self._weights.append(Weight(name, variable, regularizers_lib.get(regularizer), constraint))
        return variable

    @property
    def base_name(self) -> str:
        """The layer's name before it was made unique in a graph."""
        return self._base_name

    @property
    def declared_input_shape(self) -> tuple | None:
        """The batch shape `input_shape`, `batch_input_shape` or `input_dim` gave (or None)."""
        return self._input_shape_arg

    @property
    def auto_named(self) -> bool:
        """Whether the layer was made without a `name` (it takes a unique one when called)."""
        return self._auto_named

    def allow_renaming(self) -> None:
        """Lets the layer take a unique name in the graph it enters, as an unnamed layer does
        (a clone whose name is taken there)."""
        self._auto_named = True

    @property
    def call_nodes(self) -> list[Node]:
        """The Node of each call of the layer, in call order (the functional API's graph), of
        the graphs that still exist."""
        nodes = [n() if isinstance(n, weakref.ref) else n for n in self._nodes]
        return [n for n in nodes if n is not None]

    def _add_node(self, node: Node, graph: Graph) -> None:
        self._nodes.append(node if graph is self._graph else weakref.ref(node))

    def record_call(self, node: Node, graph: Graph, parent: Layer | None = None) -> None:
        """Records a call built outside `__call__` (a functional model's op layer): binds the
        layer to `graph` (as a child of `parent`) and appends `node` to its calls."""
        self._enter_graph(graph, parent)
        self._add_node(node, graph)

    @property
    def own_weights(self) -> list[Weight]:
        """The Weights this layer created itself (not its sublayers'), in creation order."""
        return list(self._weights)

    def sublayers(self) -> list[Layer]:
        """The layers this layer holds (its children in the tree of weights), in order."""
        return self._sublayers()

    def _sublayers(self) -> list[Layer]:
        """The layers this layer holds in its attributes, in assignment order."""
        found: list[Layer] = []
        for key, value in vars(self).items():
            if key.startswith("_parent"):
                continue
            items = value if isinstance(value, (list, tuple)) else [value]
            for item in items:
                if isinstance(item, Layer) and item is not self and item not in found:
                    found.append(item)
        return found

    def weight_records(self) -> list[tuple[str, Weight]]:
        """(full path, Weight) for every weight of this layer and its sublayers, in order."""
        records, seen = [], set()

        def visit(layer: Layer) -> None:
            for w in layer._weights:
                if id(w.variable) not in seen:
                    seen.add(id(w.variable))
                    records.append((f"{layer.path}/{w.name}", w))
            for child in layer._sublayers():
                visit(child)

        visit(self)
        return records

    @property
    def weights(self) -> list[Variable]:
        """Every weight, in Keras 3's order: the layer's own (those made trainable first), then
        each sublayer's in turn, whatever is frozen since; the order of `get_weights`."""
        found, seen = [], set()

        def visit(layer: Layer) -> None:
            own = sorted(layer._weights, key=lambda w: not w.variable.trainable)
            for w in own:
                if id(w.variable) not in seen:
                    seen.add(id(w.variable))
                    found.append(w.variable)
            for child in layer._sublayers():
                visit(child)

        visit(self)
        return found

    @property
    def variables(self) -> list[Variable]:
        """Every state of the layer: its weights and its SeedGenerators' states (each layer's
        own, then its sublayers'), as Keras lists them; metrics' are not included."""
        found: list[Variable] = []

        def visit(layer: Layer) -> None:
            found.extend(w.variable for w in layer._weights)
            found.extend(generator.state for _, generator in keras_random.generators_of(layer))
            for child in layer._sublayers():
                visit(child)

        visit(self)
        return list({id(v): v for v in found}.values())

    @property
    def trainable_weights(self) -> list[Variable]:
        """The weights the optimizer updates: none when the layer is not trainable."""
        if not self.trainable:
            return []
        found = [w.variable for w in self._weights if w.variable.trainable]
        for child in self._sublayers():
            found += child.trainable_weights
        return list({id(v): v for v in found}.values())

    @property
    def non_trainable_weights(self) -> list[Variable]:
        trainable = {id(v) for v in self.trainable_weights}
        return [w.variable for _, w in self.weight_records() if id(w.variable) not in trainable]

    @property
    def trainable_variables(self) -> list[Variable]:
        return self.trainable_weights

    @property
    def non_trainable_variables(self) -> list[Variable]:
        """The states the optimizer leaves alone: the non-trainable weights and the
        SeedGenerators' states (Keras's list), in the order of `variables`."""
        trainable = {id(v) for v in self.trainable_weights}
        return [v for v in self.variables if id(v) not in trainable]

    def count_params(self) -> int:
        """The number of scalars in the layer's weights."""
        if not self.built:
            raise ValueError(
                f"You tried to call `count_params` on layer {self.name!r}, but the layer isn't "
                "built. You can build it manually via: `layer.build(input_shape)` (or call it on "
                "an input)."
            )
        return int(sum(np.prod(v.shape.as_list(), dtype=np.int64) for v in self.weights))

    @property
    def losses(self) -> list[Tensor]:
        """The weight-regularization terms of this layer's weights (graph scalars inside graph
        code). Outside graphs, Keras 3's eager `layer.losses`: the values its layers gave
        `add_loss` in its last call on arrays (reset by the next call), then the regularization
        terms' values."""
        terms = [] if tracking.tracing() else self._eager_losses()
        for _, w in self.weight_records():
            value = w.variable.value  # Keras 3's attribute outside the graphs that use it
            if w.regularizer is not None and not callable(value):  # a value, as eager Keras
                terms.append(as_array(np.asarray(w.regularizer(value))))
            elif w.regularizer is not None:
                g = graph_lib.entered_default_graph() or w.variable.graph  # the model's graph
                with g.as_default(), g.name_scope("regularizer"):
                    terms.append(w.regularizer(w.variable.value()))
        return terms

    def _eager_losses(self) -> list[Any]:
        found, seen, todo = [], set(), [self]
        while todo:
            layer = todo.pop(0)
            if id(layer) not in seen:
                seen.add(id(layer))
                found += getattr(layer, "_value_losses", [])
                todo += layer._sublayers()
        return found

    def set_value_losses(self, losses: list[tuple[Layer, Any]]) -> None:
        """After a call on arrays: clears the `add_loss` values of this layer and its sublayers,
        then gives each (layer, value) pair's value to its layer."""
        seen, todo = set(), [self]
        while todo:
            layer = todo.pop()
            if id(layer) not in seen:
                seen.add(id(layer))
                layer._value_losses = []
                todo += layer._sublayers()
        for layer, value in losses:
            layer._value_losses.append(value)

    def get_weights(self) -> list[np.ndarray]:
        """The weights' current values (from the session of the layer's model), as arrays the
        caller may change (`w[0] *= 0.5; layer.set_weights(w)`, as in Keras)."""
        return [np.array(w) for w in runtime.read_values(self._graph, self.weights)]

    def set_weights(self, weights: list[Any]) -> None:
        """Loads values into the weights, in the order of `weights`; checks count and shapes."""
        runtime.write_values(self._graph, self.weights, weights, f"layer {self.name!r}")

    # -- the life cycle -------------------------------------------------------------------------
    def build(self, input_shape: Any) -> None:
        """Creates the weights for inputs of `input_shape` (tuples with None for unknown dims)."""
        self.built = True

    def _build_for_call(self, input_shape: Any) -> None:
        """What the first call does before `call`: `build` (a model builds its layers as its
        `call` calls them instead)."""
        self.build(input_shape)

    def call(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        return inputs

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The mask of the outputs: `mask` itself when the layer supports masking, else None."""
        return mask if self.supports_masking else None

    def compute_output_shape(self, input_shape: Any) -> Any:
        """The output shape for `input_shape`, by calling a copy of the layer in a scratch graph
        (layers override this when it is simpler to compute)."""
        clone = type(self).from_config(self.get_config())
        with Graph().as_default():
            inputs = nest.map_structure(
                lambda s: core_ops.placeholder(self._dtype, s), _as_shape_structure(input_shape)
            )
            outputs = clone(inputs)
        return nest.map_structure(shape_tuple, outputs)

    def add_loss(self, loss: Any) -> None:
        """Adds a loss term (a scalar Tensor) to the training loss of the current call."""
        tracking.add_to_collector(loss=core_ops.convert_to_tensor(loss), owner=self)

    def add_update(self, update: Any) -> None:
        """Runs `update` (an op) with each training step that includes the current call."""
        op = update if isinstance(update, Operation) else core_ops.convert_to_tensor(update).op
        tracking.add_to_collector(update=op)

    def stateless_call(self, trainable_variables, non_trainable_variables, *args, **kwargs):
        """The call on the variable values given, without side effects (see `stateless`)."""
        return stateless.stateless_call(
            self, trainable_variables, non_trainable_variables, *args, **kwargs
        )

    def _call_arguments(self) -> set[str]:
        return set(inspect.signature(self.call).parameters)

    @traceback_utils.filter_traceback
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Builds the layer on its first call, then `call`s it; see the module docstring."""
        if not args and "inputs" in kwargs:
            args = (kwargs.pop("inputs"),)
        if not args:
            raise TypeError(f"Layer {self.name!r} needs its inputs as the first argument.")
        inputs = args[0]
        flat = nest.flatten((args, kwargs))
        tensors = [t for t in flat if isinstance(t, (Tensor, Variable))]
        if not any(isinstance(t, Tensor) for t in nest.flatten(inputs)):
            if value_calls.are_values(inputs):  # layer(np_array): computed now, as in Keras
                return value_calls.call_on_values(self, args, kwargs)
            raise TypeError(
                f"Layer {self.name!r} was called on {type(inputs).__name__}; layers are called on "
                "symbolic tensors (sl.Input(...) or another layer's output), or on NumPy arrays to "
                "compute values."
            )
        input_spec.assert_input_compatibility(getattr(self, "input_spec", None), inputs, self.name)
        g = graph_of(tensors)
        parent = parent_layer()
        self._enter_graph(g, parent)
        raw_args = args
        with g.as_default():
            args = (nest.map_structure(self._autocast, inputs),) + args[1:]
            inputs = args[0]
        accepted = self._call_arguments()
        node_kwargs = {k: v for k, v in kwargs.items() if k != "mask" and v is not None}
        training = kwargs.pop("training", None)
        if "training" in accepted:
            kwargs["training"] = bool(training) if training is not None else bool(outer_training())
        previous_mask = kwargs.get("mask")
        if previous_mask is None:  # the inputs' masks, for `call` and `compute_mask`
            masks = [get_mask(t) for t in nest.flatten(inputs)]
            if any(m is not None for m in masks):
                previous_mask = (
                    masks[0] if len(masks) == 1 else nest.pack_sequence_as(inputs, masks)
                )
        if "mask" in accepted and kwargs.get("mask") is None and previous_mask is not None:
            kwargs["mask"] = previous_mask
        with g.as_default(), g.name_scope(self.name):
            with tracking.calling(self, kwargs.get("training")):
                if not self.built:
                    self._build_for_call(nest.map_structure(shape_tuple, inputs))
                    self.built = True
                with self._autocast_scope():
                    outputs = self.call(*args, **kwargs)
            outputs = _distinct_from(outputs, (raw_args, args, kwargs))
            if self.activity_regularizer is not None:  # in training and inference (Keras 3)
                for out in nest.flatten(outputs):
                    batch = fill_ops.cast(fill_ops.shape(out)[0], out.dtype)
                    self.add_loss(self.activity_regularizer(out) / batch)
            self._attach_masks(inputs, outputs, previous_mask)  # Keras 3: compute_mask sees it
        node = Node(self, raw_args, node_kwargs, outputs)
        self._add_node(node, g)
        record_node(node)
        return outputs

    def _autocast(self, x: Any) -> Any:
        """Floating input tensors in the layer's compute dtype (Keras's autocast)."""
        compute = dtypes.as_dtype(self._dtype_policy.compute_dtype)
        if (
            self.autocast
            and isinstance(x, Tensor)
            and dtypes.is_floating(x.dtype)
            and dtypes.is_floating(compute)
            and x.dtype != compute
        ):
            cast = fill_ops.cast(x, compute)
            set_mask(cast, get_mask(x))
            return cast
        return x

    def _autocast_scope(self) -> Any:
        """Keras 3's AutocastScope around `call`: a layer of a mixed policy reads its floating
        weights (and its sublayers', unless they set another) cast to its compute dtype; inside
        another layer's scope, a layer sets its own compute dtype (None: no cast)."""
        compute = dtypes.as_dtype(self._dtype_policy.compute_dtype)
        current = variables_lib.autocast_dtype()
        if current is None and compute == self._dtype:
            return contextlib.nullcontext()
        if not self.autocast or not dtypes.is_floating(compute):
            return variables_lib.autocast_scope(None)
        return variables_lib.autocast_scope(compute)

    def _attach_masks(self, inputs: Any, outputs: Any, mask: Any) -> None:
        out_mask = self.compute_mask(inputs, mask)
        flat_out = [t for t in nest.flatten(outputs) if isinstance(t, Tensor)]
        flat_mask = nest.flatten(out_mask) if isinstance(out_mask, (list, tuple)) else [out_mask]
        if len(flat_mask) != len(flat_out):
            flat_mask = (
                flat_mask[:1] * len(flat_out) if len(flat_mask) == 1 else [None] * len(flat_out)
            )
        for t, m in zip(flat_out, flat_mask):
            set_mask(t, m)

    # -- Keras conveniences -----------------------------------------------------------------
    @property
    def input(self) -> Any:
        """The input of the layer's first call (a symbolic Tensor)."""
        nodes = self.call_nodes
        if not nodes:
            raise AttributeError(f"Layer {self.name!r} has never been called; it has no input.")
        return nodes[0].args[0]

    @property
    def output(self) -> Any:
        """The output of the layer's first call."""
        nodes = self.call_nodes
        if not nodes:
            raise AttributeError(f"Layer {self.name!r} has never been called; it has no output.")
        return nodes[0].outputs

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name}, built={self.built}>"


def _marking_built(build: Any) -> Any:
    """A subclass's `build` that leaves the layer built, as Keras 3 wraps it: `layer.build(
    shape)` called by hand builds the weights once, and the first call does not build again."""

    @functools.wraps(build)
    def build_and_mark(self: Layer, *args: Any, **kwargs: Any) -> Any:
        result = build(self, *args, **kwargs)
        self.built = True
        return result

    build_and_mark._marks_built = True
    return build_and_mark


def _as_shape_structure(shape: Any) -> Any:
    """A shape tuple, or a list of shape tuples, with each shape as a TensorShape (a leaf)."""
    if (
        isinstance(shape, (list, tuple))
        and shape
        and all(isinstance(s, (list, tuple)) for s in shape)
    ):
        return [TensorShape(list(s)) for s in shape]
    return TensorShape(list(shape))


def _distinct_from(outputs: Any, inputs: Any) -> Any:
    """`outputs`, with an identity copy of each one that is one of `inputs` (Dropout in
    inference returns its input): every call then has outputs of its own, which the tensors'
    call history and a functional model's walk rely on (tf.keras copies them the same way)."""
    given = {id(t) for t in nest.flatten(inputs) if isinstance(t, Tensor)}
    return nest.map_structure(
        lambda t: core_ops.identity(t) if isinstance(t, Tensor) and id(t) in given else t, outputs
    )
