"""`GraphOpLayer`: graph ops that no layer made (`x + y`, `x * 2`, `x[:, 0]`, `sl.concat`, ...),
kept as a layer so that a functional model can replay and save them.

Keras 3 records each `keras.ops` call on symbolic tensors as a node of the model; Keras 2 wrapped
each TF op in a `TFOpLambda` layer. Here `Model(inputs, outputs)` (see
`sluice._keras.models.functional`) wraps each such op, with the constants it reads (`x * 2`
makes a Const), in a `GraphOpLayer`.
The layer holds a small program, in the JSON form its config has:

    ops:     [{"type": "Const", "inputs": [], "attrs": {"value": <array>, "dtype": <dtype>}},
              {"type": "Mul", "inputs": [["input", 0], ["op", 0, 0]], "attrs": {}}]
    outputs: [[1, 0]]                 # (op index, output index) of each result

A call creates the same op types with the same attributes on its inputs (`Graph.create_op`),
so gradients, masks and both engines treat the replayed ops like the originals. Arrays are
stored as {"__ndarray__": nested lists, "dtype": name}, dtypes as {"__dtype__": name}, tuples
as {"__tuple__": [...]}; anything else in an attribute cannot be saved and says so.

Masks do not pass through: the op was built on the tensor, before the model wrapped it, with no
mask (Keras 3 operators drop masks too, keras-team/keras#18416), and a replay must compute what
the model built. Only pure ops are kept: variables, random numbers, control flow, placeholders
and file I/O are refused (`check_replayable`), with a hint to use a `Lambda` or a custom layer.

>>> x = sl.Input((3,))
>>> model = sl.Model(x, x * 2.0 + 1.0)
>>> [type(layer).__name__ for layer in model.layers]
['InputLayer', 'GraphOpLayer', 'GraphOpLayer']
>>> model.predict(np.ones((1, 3), np.float32), verbose=0)
array([[3., 3., 3.]], dtype=float32)
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from sluice._keras.layers.base import Layer
from sluice._keras.layers.tracking import graph_of
from sluice._keras.saving import serialization
from sluice._tf1.cells.scopes import snake_case
from sluice.framework.ir import dtypes, registry
from sluice.framework.ir.graph import Operation, Tensor

# Ops that read or write state outside their inputs, or that are feed points of a graph.
_REFUSED = frozenset({
    "ApplyUpdates", "LearningRateSchedule", "DropoutApply", "ReadRow", "WriteRow", "ZerosLikeRow",
    "DynamicSum", "Placeholder", "PlaceholderWithDefault", "NoOp",
})  # fmt: skip

# Keras 3's names for the operations Python operators and common functions make.
_KERAS_NAMES = {
    "AddV2": "add", "Sub": "subtract", "Mul": "multiply", "RealDiv": "true_divide",
    "Neg": "negative", "StridedSlice": "get_item", "ConcatV2": "concatenate", "Pack": "stack",
    "Pow": "power", "FloorDiv": "floor_divide", "FloorMod": "mod", "MatMul": "matmul",
    "BatchMatMulV2": "matmul", "Sum": "sum", "Prod": "prod", "Max": "max", "Min": "min",
}  # fmt: skip


def check_replayable(op: Operation) -> None:
    """Raises ValueError when `op` cannot be re-created on new inputs by a `GraphOpLayer`."""
    op_def = op.op_def
    why = None
    if op_def.name in ("VarHandleOp", "ReadVariableOp") or "Variable" in op_def.name:
        why = "it reads a variable (made outside the layers, or a layer's weight used directly)"
    elif op_def.stateful or op_def.name in _REFUSED or op_def.host_only:
        why = "it is stateful (variables, random numbers, feeds or I/O)"
    elif op_def.control_flow or op.control_flow_context is not None:
        why = "it is control flow (cond / while_loop)"
    elif not op.inputs and op_def.name != "Const":
        why = "it has no inputs and is not a constant"
    elif op.control_inputs:
        why = "it has control dependencies"
    if why is not None:
        raise ValueError(
            f"A functional model cannot replay op {op.name!r} ({op.type}): {why}. Compute this "
            "part with a layer instead: sl.layers.Lambda(fn) for a stateless function, or a "
            "custom Layer (with add_weight for variables)."
        )


class GraphOpLayer(Layer):
    """Re-creates a fixed list of graph ops on its inputs (see the module docstring).

    Args:
      ops: [{"type", "inputs", "attrs"}] in an order where each op's inputs come first; an
        input is ["input", i] (the layer's i-th input) or ["op", k, j] (output j of op k).
      outputs: [[k, j]] for each result; one result is returned as a Tensor, several as a list.
      **kwargs: base Layer arguments (name, trainable, dtype).

    Raises:
      ValueError: an unknown or unreplayable op type, a reference to a later op or a missing
        input, or an attribute that is not one the module docstring lists.
    """

    def __init__(self, ops: list, outputs: list, **kwargs: Any):
        super().__init__(**kwargs)
        if not isinstance(ops, list) or not ops:
            raise ValueError(f"GraphOpLayer {self.name!r}: `ops` must be a non-empty list.")
        self.ops = ops
        if not isinstance(outputs, list) or not outputs:
            raise ValueError(f"GraphOpLayer {self.name!r}: `outputs` must be a non-empty list.")
        self.results = outputs
        self._decoded = [self._decode_op(k, spec) for k, spec in enumerate(ops)]
        for ref in self.results:
            self._check_ref(["op", *ref] if isinstance(ref, list) else ref, len(ops), "outputs")
        self.num_inputs = 1 + max(
            (ref[1] for _, refs, _ in self._decoded for ref in refs if ref[0] == "input"),
            default=-1,
        )
        if self._auto_named:  # named after its last op, as Keras names operations ("add")
            last = self._decoded[-1][0]
            self.name = self._base_name = _KERAS_NAMES.get(last, snake_case(last))

    @classmethod
    def from_ops(
        cls, ops: list[Operation], inputs: list[Tensor], outputs: list[Tensor], **kwargs: Any
    ) -> GraphOpLayer:
        """The layer that computes `outputs` from `inputs` as `ops` (topologically sorted) do.

        Raises:
          ValueError: an op that cannot be replayed (see `check_replayable`), or an op input
            that is neither in `inputs` nor made by an earlier op of `ops`.
        """
        position = {id(op): k for k, op in enumerate(ops)}
        input_index = {id(t): i for i, t in enumerate(inputs)}

        def ref(t: Tensor) -> list:
            if id(t) in input_index:
                return ["input", input_index[id(t)]]
            if id(t.op) in position:
                return ["op", position[id(t.op)], t.value_index]
            raise ValueError(f"Tensor {t.name} is neither an input nor made by the ops given.")

        specs = []
        for op in ops:
            check_replayable(op)
            specs.append({"type": op.type, "inputs": [ref(t) for t in op.inputs],
                          "attrs": {k: _encode(v, op) for k, v in op.attrs.items()}})  # fmt: skip
        return cls(specs, [[position[id(t.op)], t.value_index] for t in outputs], **kwargs)

    def _decode_op(self, k: int, spec: Any) -> tuple[str, list, dict]:
        where = f"GraphOpLayer {self.name!r}, op {k}"
        if not isinstance(spec, dict) or not isinstance(spec.get("type"), str):
            raise ValueError(f"{where}: expected {{'type', 'inputs', 'attrs'}}, got {spec!r:.200}.")
        op_type = spec["type"]
        try:
            op_def = registry.get_op_def(op_type)
        except KeyError:
            raise ValueError(f"{where}: unknown op type {op_type!r}.") from None
        if op_def.stateful or op_def.control_flow or op_def.host_only or op_type in _REFUSED:
            raise ValueError(f"{where}: op type {op_type!r} cannot be replayed by a layer.")
        refs = spec.get("inputs", [])
        if not isinstance(refs, list):
            raise ValueError(f"{where}: 'inputs' must be a list, got {refs!r:.200}.")
        for ref in refs:
            self._check_ref(ref, k, where)
        if not refs and op_type != "Const":
            raise ValueError(f"{where}: only a Const op may have no inputs, got {op_type!r}.")
        attrs = spec.get("attrs", {})
        if not isinstance(attrs, dict):
            raise ValueError(f"{where}: 'attrs' must be a dict, got {attrs!r:.200}.")
        decoded = {str(key): _decode(v, where) for key, v in attrs.items()}
        accepted = _keyword_names(op_def.kernel)
        unknown = sorted(set(decoded) - accepted) if accepted is not None else []
        if unknown:  # a run would fail on them; say so now, naming the layer
            raise ValueError(f"{where}: op type {op_type!r} has no attribute(s) {unknown}.")
        if op_type == "Const" and not (
            isinstance(decoded.get("value"), np.ndarray)
            and isinstance(decoded.get("dtype"), (np.dtype, dtypes.DType))
        ):
            raise ValueError(f"{where}: a Const needs an array 'value' and a 'dtype'.")
        return op_type, refs, decoded

    @staticmethod
    def _check_ref(ref: Any, before: int, where: str) -> None:
        ok = isinstance(ref, list) and all(type(i) is int and i >= 0 for i in ref[1:])
        ok = ok and (
            (len(ref) == 2 and ref[0] == "input")
            or (len(ref) == 3 and ref[0] == "op" and ref[1] < before)
        )
        if not ok:
            raise ValueError(
                f"{where}: an input reference must be ['input', i] or ['op', k, j] with k < "
                f"{before}, got {ref!r:.200}."
            )

    def _autocast(self, x: Any) -> Any:
        return x  # the ops keep the dtypes they were built with

    def call(self, inputs: Any) -> Any:
        given = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        if len(given) != self.num_inputs:
            raise ValueError(
                f"GraphOpLayer {self.name!r} takes {self.num_inputs} inputs, got {len(given)}."
            )
        g = graph_of(given)
        made: list[Operation] = []
        for k, (op_type, refs, attrs) in enumerate(self._decoded):
            args = [given[r[1]] if r[0] == "input" else _output(made[r[1]], r[2]) for r in refs]
            try:
                made.append(g.create_op(op_type, args, attrs, name=op_type))
            except (TypeError, ValueError, KeyError, AttributeError, IndexError) as err:
                # a saved model's attributes or inputs that do not fit the op
                raise ValueError(f"GraphOpLayer {self.name!r}, op {k} ({op_type}): {err}") from None
        results = [_output(made[k], j) for k, j in self.results]
        return results[0] if len(results) == 1 else results

    def get_config(self) -> dict:
        return {**super().get_config(), "ops": self.ops, "outputs": self.results}


def _keyword_names(kernel: Any) -> set[str] | None:
    """The attribute names `kernel` accepts (its keyword parameters); None when it takes any
    (`**kwargs`) or its signature cannot be read."""
    try:
        parameters = inspect.signature(kernel).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        return None
    return {p.name for p in parameters if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}


def _output(op: Operation, index: int) -> Tensor:
    if index >= len(op.outputs):
        raise ValueError(
            f"Op {op.name!r} ({op.type}) has {len(op.outputs)} outputs: it has no output {index}."
        )
    return op.outputs[index]


def _encode(value: Any, op: Operation) -> Any:
    """An attribute value in JSON form (see the module docstring)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (np.dtype, dtypes.DType)):
        return {"__dtype__": value.name}
    if isinstance(value, np.ndarray):
        return {"__ndarray__": value.tolist(), "dtype": value.dtype.name}
    if isinstance(value, list):
        return [_encode(v, op) for v in value]
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(v, op) for v in value]}
    raise ValueError(
        f"A functional model cannot save op {op.name!r} ({op.type}): its attribute value "
        f"{value!r:.100} of type {type(value).__name__} has no JSON form. Compute this part "
        "with a layer (sl.layers.Lambda or a custom Layer)."
    )


def _decode(value: Any, where: str) -> Any:
    """The attribute value `_encode` wrote; validates what a file may hold."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [_decode(v, where) for v in value]
    if isinstance(value, dict) and set(value) == {"__tuple__"}:
        return tuple(_decode(v, where) for v in value["__tuple__"])
    if isinstance(value, dict) and set(value) == {"__dtype__"}:
        return _dtype(value["__dtype__"], where)
    if isinstance(value, dict) and set(value) == {"__ndarray__", "dtype"}:
        try:
            return np.asarray(value["__ndarray__"], dtype=_dtype(value["dtype"], where))
        except (TypeError, ValueError) as err:
            raise ValueError(f"{where}: a malformed array attribute: {err}.") from None
    raise ValueError(f"{where}: an attribute value must be JSON data, got {value!r:.200}.")


def _dtype(name: Any, where: str) -> np.dtype:
    try:
        dtype = dtypes.as_dtype(name) if isinstance(name, str) else None
    except (TypeError, ValueError, KeyError):
        dtype = None
    if dtype is None or not (dtypes.is_floating(dtype) or dtype.kind in "biuc"):
        raise ValueError(f"{where}: {name!r} is not a numeric dtype name.")
    return dtype


serialization.register_builtin("keras.layers.GraphOpLayer", GraphOpLayer)
