"""Keras 2 HDF5 weights: `model.save_weights("w.h5")` and `model.save("m.h5")` of tf.keras.

The layout (tf.keras `hdf5_format.save_weights_to_hdf5_group`), at the root of a weights file or
in the `model_weights` group of a whole-model file:

    attrs: layer_names = [b"input_1", b"dense", b"lstm", ...]   every layer of `model.layers`
           (or layer_names0, layer_names1, ... when the list is too long for one attribute),
           backend, keras_version
    /dense                attrs: weight_names = [b"dense/kernel:0", b"dense/bias:0"]
    /dense/dense/kernel:0, /dense/dense/bias:0               the values, by weight name
    /lstm/lstm/lstm_cell/kernel:0, recurrent_kernel:0, bias:0  LSTM: gates i, f, c, o
    /gru/gru/gru_cell/...  bias [2, 3*units] with reset_after (tf.keras 2's default), else [3*units]
    /input_1              attrs: weight_names = []

A layer's weights are listed in Keras 2's `layer.weights` order: the trainable ones, then the
others (BatchNormalization: gamma, beta, moving_mean, moving_variance; Bidirectional: the
forward layer's, then the backward layer's). Loading matches layers as tf.keras does:

  * by default, by position: the model's layers that have weights, in `model.layers` order,
    against the file's layers that have weights (the counts must agree);
  * with `by_name=True`, by layer name; layers the file does not have keep their values.

Weights saved by `CuDNNLSTM`/`CuDNNGRU` (one bias per gate for the inputs and one for the state)
are converted as tf.keras converts them when loading into `LSTM`/`GRU(reset_after=True)`.
Everything is checked before any value is written; the file is untrusted (names are followed
one hard link at a time, never as paths; see `h5_values`).

>>> import h5py
>>> model = sl.Sequential([sl.Input((3,)), sl.layers.Dense(2, name="dense")])
>>> kernel, bias = np.ones((3, 2), "float32"), np.array([1.0, 2.0], "float32")
>>> with h5py.File("tf_keras.h5", "w") as f:
...     f.attrs["layer_names"] = [b"dense"]
...     layer = f.create_group("dense")
...     layer.attrs["weight_names"] = [b"dense/kernel:0", b"dense/bias:0"]
...     layer["dense/kernel:0"], layer["dense/bias:0"] = kernel, bias
>>> with h5py.File("tf_keras.h5", "r") as f:
...     read_legacy_weights(model, f)
>>> model.predict(np.zeros((1, 3), "float32"), verbose=0)
array([[1., 2.]], dtype=float32)
"""

from __future__ import annotations

import os
from typing import Any

import h5py
import numpy as np

from sluice._keras.layers import runtime
from sluice._keras.layers.base import Layer
from sluice._keras.layers.rnn.bidirectional import Bidirectional
from sluice._keras.layers.rnn.rnn import RNN
from sluice._keras.layers.rnn.rnn_cells import GRUCell, LSTMCell
from sluice._keras.saving import h5_values, keras_layout
from sluice._tf1.checkpoints import h5_checks
from sluice.framework.variables import Variable

_MAX_NAMES = 1_000_000
_MAX_NAME_LENGTH = 4096


def is_legacy_layout(group: h5py.Group) -> bool:
    """Whether `group` (a file's root) holds Keras 2 weights (`layer_names`, at the root or in
    `model_weights`)."""
    root = _weights_root(group)
    return root is not None and any(n in root.attrs for n in ("layer_names", "layer_names0"))


def _weights_root(group: h5py.Group) -> h5py.Group | None:
    if "layer_names" in group.attrs or "layer_names0" in group.attrs:
        return group
    return h5_values.find_group(group, "model_weights")


def _string_list(obj: Any, name: str, where: str) -> list[str]:
    """A list-of-strings attribute (Keras 2 splits long ones into `name0`, `name1`, ...),
    checked to be 1-D arrays of fixed-length bytes or strings before it is read."""
    parts = [name] if name in obj.attrs else []
    while name not in obj.attrs and f"{name}{len(parts)}" in obj.attrs:
        parts.append(f"{name}{len(parts)}")
    values: list[str] = []
    for part in parts:
        attr_id = obj.attrs.get_id(part)
        dtype, shape = attr_id.dtype, attr_id.shape
        variable = dtype.kind == "O" and h5py.check_string_dtype(dtype) is not None
        if shape == (0,):  # Keras writes a layer without weights an empty float64 list
            continue
        if not (dtype.kind in "SU" or variable) or len(shape) > 1:
            raise ValueError(f"{where}: the attribute {part!r} is {dtype} {shape}, not strings.")
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if count + len(values) > _MAX_NAMES or count * dtype.itemsize > obj.file.id.get_filesize():
            raise ValueError(
                f"{where}: the attribute {part!r} declares {count} names of {dtype.itemsize} "
                "bytes, more than a weights file lists (or than the file holds)."
            )
        if variable and os.path.isfile(obj.file.filename):
            try:  # variable-length strings live in global heaps, on which HDF5 can loop
                h5_checks.check_global_heaps(obj.file.filename)
            except h5_checks.CheckpointError as err:
                raise ValueError(f"{where}: {err.message}") from None
        for item in np.atleast_1d(obj.attrs[part]).tolist():
            text = item.decode("utf8") if isinstance(item, bytes) else str(item)
            if len(text) > _MAX_NAME_LENGTH:
                raise ValueError(f"{where}: a name in {part!r} is {len(text)} characters long.")
            values.append(text)
    return values


def _name_parts(name: str, where: str) -> list[str]:
    """The parts of a layer or weight name, each one link to follow: none may be empty, "." or
    "..", so a name can only reach objects below its own group."""
    parts = name.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise ValueError(
            f"{where}: the name {name!r} is not a plain name (empty, '.' or '..' parts); it "
            "could reach objects outside its layer's group."
        )
    return parts


def _child(group: h5py.Group, name: str, where: str) -> Any:
    obj = group
    for part in _name_parts(name, where):
        obj = h5_values.hard_child(obj, part)
        if obj is None:
            raise ValueError(f"{where}: the file lists {name!r} but has no such object.")
    return obj


def _file_layers(root: h5py.Group, source: str) -> list[tuple[str, list[tuple[str, Any]]]]:
    """(layer name, [(weight name, dataset)]) for every layer the file lists."""
    layers = []
    for layer_name in _string_list(root, "layer_names", source):
        if len(_name_parts(layer_name, source)) != 1:
            raise ValueError(f"{source}: the layer name {layer_name!r} is not a plain name.")
        group = _child(root, layer_name, source)
        where = f"{source}, layer {layer_name!r}"
        if not isinstance(group, h5py.Group):
            raise ValueError(f"{where}: expected a group.")
        names = _string_list(group, "weight_names", where)
        layers.append((layer_name, [(n, _child(group, n, where)) for n in names]))
    return layers


# -- the model's side -----------------------------------------------------------------------------
def _children(layer: Layer) -> list[Layer]:
    if hasattr(layer, "_functional"):  # a model: its layers, in Keras's order
        return keras_layout.keras_layers(layer)
    return layer.sublayers()


def legacy_weights(layer: Layer) -> list[Variable]:
    """Keras 2's `layer.weights` of a sluice layer: its trainable weights (its own, then its
    sublayers', depth first), then the others in the same order."""
    records: list[tuple[Variable, bool]] = []
    seen: set[int] = set()

    def visit(obj: Layer, trainable: bool) -> None:
        trainable = trainable and obj.trainable
        for w in obj.own_weights:
            if id(w.variable) not in seen:
                seen.add(id(w.variable))
                records.append((w.variable, trainable and w.variable.trainable))
        for child in _children(obj):
            visit(child, trainable)

    visit(layer, True)
    return [v for v, t in records if t] + [v for v, t in records if not t]


def _layers_with_weights(model: Layer) -> list[Layer]:
    return [layer for layer in keras_layout.keras_layers(model) if legacy_weights(layer)]


# -- CuDNN weights --------------------------------------------------------------------------------
def _per_gate(kernel: np.ndarray, gates: int, transform: Any) -> np.ndarray:
    return np.hstack([transform(k) for k in np.hsplit(kernel, gates)])


def _from_cudnn(cell: Any, arrays: list[np.ndarray]) -> list[np.ndarray] | None:
    """tf.keras's conversion of CuDNNLSTM/CuDNNGRU weights (`_convert_rnn_weights`), or None
    when `arrays` are not CuDNN weights for `cell`: CuDNN keeps each gate's input kernel in
    column-major order, its recurrent kernel transposed, and two biases per gate."""
    if len(arrays) != 3 or arrays[2].ndim != 1:
        return None
    units = cell.units
    gates = 4 if isinstance(cell, LSTMCell) else 3
    if arrays[2].shape[0] != 2 * gates * units:
        return None
    if isinstance(cell, GRUCell) and not cell.reset_after:
        return None

    def input_kernel(k: np.ndarray) -> np.ndarray:
        return k.T.reshape(k.shape, order="F")

    kernel = _per_gate(np.asarray(arrays[0]), gates, input_kernel)
    recurrent = _per_gate(np.asarray(arrays[1]), gates, lambda k: k.T)
    biases = np.asarray(arrays[2])
    bias = biases.reshape(2, -1) if gates == 3 else np.sum(np.split(biases, 2), axis=0)
    return [kernel, recurrent, bias]


def _convert(layer: Layer, arrays: list[np.ndarray]) -> list[np.ndarray]:
    """The file's arrays for `layer`, converted from CuDNN layouts where they are in one."""
    if isinstance(layer, Bidirectional) and len(arrays) % 2 == 0:
        half = len(arrays) // 2
        return _convert(layer.forward_layer, arrays[:half]) + _convert(
            layer.backward_layer, arrays[half:]
        )
    if isinstance(layer, RNN) and isinstance(layer.cell, (LSTMCell, GRUCell)):
        return _from_cudnn(layer.cell, arrays) or arrays
    return arrays


# -- loading --------------------------------------------------------------------------------------
def _match(
    layer: Layer, file_name: str, weights: list[tuple[str, Any]]
) -> list[tuple[Variable, np.ndarray]]:
    """(variable, value) for each weight of `layer` from the file's layer `file_name`."""
    variables = legacy_weights(layer)
    where = f"layer {layer.name!r} ({type(layer).__name__}), file layer {file_name!r}"
    if len(weights) != len(variables):
        raise ValueError(
            f"{where}: the file has {len(weights)} weights {[n for n, _ in weights]}, the layer "
            f"has {len(variables)}: {[v.op.name for v in variables]}."
        )
    arrays = [
        h5_values.checked_array(ds, f"{where}, weight {name!r}", v, any_shape=True)
        for (name, ds), v in zip(weights, variables)
    ]
    arrays = _convert(layer, arrays)
    for (name, _), value, variable in zip(weights, arrays, variables):
        if value.shape != tuple(variable.shape.as_list()):
            raise ValueError(
                f"{where}, weight {name!r}: the file's value has shape {value.shape}; the "
                f"weight {variable.op.name} has shape {tuple(variable.shape.as_list())}."
            )
    return [(v, a.astype(v.dtype.name, copy=False)) for v, a in zip(variables, arrays)]


def read_legacy_weights(
    model: Layer,
    group: h5py.Group,
    by_name: bool = False,
    skip_mismatch: bool = False,
    source: str = "the file",
) -> None:
    """Loads Keras 2 HDF5 weights (see the module docstring) into `model` (built).

    Args:
      model: a built model.
      group: the root of the file (a weights file, or a whole-model file with `model_weights`).
      by_name: match layers by name instead of by position.
      skip_mismatch: with `by_name`, leave layers whose weights differ in count or shape as
        they are instead of raising.
      source: how to name the file in errors.

    Raises:
      ValueError: listing what does not match; nothing is changed then.
    """
    if not model.built:
        raise ValueError(
            f"Build {model.name!r} (call it or fit it) before loading weights into it."
        )
    root = _weights_root(group)
    if root is None:
        raise ValueError(f"{source} has no Keras 2 weights (no 'layer_names' attribute).")
    file_layers = _file_layers(root, source)
    with_weights = [(name, weights) for name, weights in file_layers if weights]
    layers = _layers_with_weights(model)
    problems: list[str] = []
    pairs: list[tuple[Variable, np.ndarray]] = []
    if by_name:
        by_file_name = dict(file_layers)
        jobs = [(layer, layer.name, by_file_name[layer.name]) for layer in layers
                if layer.name in by_file_name]  # fmt: skip
    else:
        if len(with_weights) != len(layers):
            raise ValueError(
                f"Cannot load {source} into {model.name!r}: the file has weights for "
                f"{len(with_weights)} layers {[n for n, _ in with_weights]}, the model has "
                f"{len(layers)} layers with weights {[layer.name for layer in layers]}."
            )
        jobs = [(layer, name, weights) for layer, (name, weights) in zip(layers, with_weights)]
    for layer, name, weights in jobs:
        try:
            pairs += _match(layer, name, weights)
        except (ValueError, OSError, KeyError, TypeError) as err:
            if not (skip_mismatch and by_name):
                problems.append(str(err))
    if problems:
        listed = "\n  ".join(problems)
        raise ValueError(
            f"Cannot load the Keras 2 weights of {source} into {model.name!r}:\n  {listed}"
        )
    if pairs:
        variables, values = zip(*pairs)
        runtime.runtime_for(model.graph).write(list(variables), list(values))
