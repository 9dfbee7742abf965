"""Weights in h5 files: `save_weights` / `load_weights`.

`load_weights` reads three formats, recognised by their content: sluice's own (below), Keras 3's
(a `.weights.h5` file or a `.keras` zip; `keras_layout`) and Keras 2's HDF5 weights or
whole-model files (`legacy_h5`). `save_weights` writes sluice's own.

The file is a sluice checkpoint (`sluice._tf1.checkpoints.h5_format`: written atomically, a CRC per
dataset), holding one dataset per weight under its path in the model: `/variables/dense/kernel`,
`/variables/lstm/lstm_cell/recurrent_kernel`, ... Loading checks the names, shapes and dtypes
against the model before writing anything and lists every difference.

>>> def make_model():
...     return sl.Sequential([sl.Input((4,)), sl.layers.Dense(2)])
>>> model, same_architecture = make_model(), make_model()
>>> model.save_weights("ckpt/model.weights.h5")
>>> same_architecture.load_weights("ckpt/model.weights.h5")
>>> all(np.array_equal(a, b) for a, b in zip(model.get_weights(), same_architecture.get_weights()))
True
"""

from __future__ import annotations

import io
import os
import zipfile
from typing import Any

import h5py

from sluice._export import export
from sluice._keras.layers import runtime
from sluice._keras.layers.tracking import unique_name
from sluice._keras.saving import keras_archive, keras_layout, legacy_h5
from sluice._tf1.checkpoints import atomic, h5_format, regular_file
from sluice.framework.placement import processes
from sluice.framework.variables import Variable

_KERAS_ARCHIVE_WEIGHTS = "model.weights.h5"


def named_weights(layer: Any) -> dict[str, Variable]:
    """{save name: Variable} for every weight of a layer or model.

    A weight's save name is its path inside its layer ("kernel", "lstm_cell/kernel") under the
    layer's key: its given name, or its class name in snake case numbered in the order of the
    model's layers ("dense", "dense_1", ...), as Keras 3 does. So the names do not depend on
    how many other layers the graph holds: a model built twice in one graph (its layers then
    named dense_2, dense_3 there) still reads the file of the first.
    """
    members = list(layer.layers) if hasattr(layer, "layers") else []
    named: dict[str, Variable] = {}
    taken: set[str] = set()
    seen: set[int] = set()
    for member in members + [layer]:
        if member is layer:
            records = [(p, w) for p, w in layer.weight_records() if id(w.variable) not in seen]
            key, prefix = layer.base_name, layer.path
            if not records:
                continue
        else:
            records = member.weight_records()
            key, prefix = unique_name(member.base_name, taken), member.path
        for path, weight in records:
            seen.add(id(weight.variable))
            name = f"{key}/{path[len(prefix) + 1 :]}" if path.startswith(prefix + "/") else path
            if name in named and named[name] is not weight.variable:
                raise ValueError(f"Two weights of {layer.name!r} would be saved as {name!r}.")
            named[name] = weight.variable
    return named


@export("saving.save_weights")
def save_weights(layer: Any, filepath: str, overwrite: bool = True) -> None:
    """Writes every weight of `layer` (a model or layer) to the h5 file `filepath`, atomically:
    a full disk is an OSError naming it, and the file there before is unchanged. In a
    multi-process run every process calls it; process 0 writes the file."""
    filepath = os.fspath(filepath)
    if not filepath.endswith(".h5"):
        raise ValueError(f"The filename must end in `.weights.h5` (or `.h5`), got {filepath!r}.")
    if not overwrite and os.path.exists(filepath):
        raise FileExistsError(f"{filepath!r} exists and overwrite=False.")
    named = named_weights(layer)
    values = runtime.read_values(layer.graph, list(named.values()))  # every process: a gather
    if processes.is_chief():
        directory, name = os.path.split(os.path.abspath(filepath))
        os.makedirs(directory, exist_ok=True)
        # the temporary files of saves killed before their rename (this target's only, once
        # their process is gone), as Saver removes its own
        atomic.remove_stale_temporaries(directory, name, exact=True)
        h5_format.write_checkpoint(filepath, dict(zip(named, values)))
    processes.barrier(f"sluice save_weights {filepath}")


@export("saving.load_weights")
def load_weights(
    layer: Any, filepath: str, skip_mismatch: bool = False, by_name: bool = False
) -> None:
    """Loads the weights of `layer` from `filepath`: a file written by `save_weights`, a Keras 3
    `.weights.h5` or `.keras` file, or a Keras 2 HDF5 weights or whole-model file.

    Args:
      skip_mismatch: leave weights that are missing from the file or differ in shape as they
        are instead of raising (Keras 2 files: only with `by_name`).
      by_name: Keras 2 files only: match layers by name instead of by position.

    Raises:
      FileNotFoundError: no such file.
      ValueError: the file is not a regular file (a FIFO, a device) or not a weights file, a
        `.keras` file's weights are larger than the model can need, or its names, shapes or
        dtypes differ from the model's (the message lists each difference); nothing is loaded
        then.
    """
    filepath = os.fspath(filepath)
    if not os.path.exists(filepath):
        raise FileNotFoundError(f"No weights file at {filepath!r}.")
    try:  # reading a FIFO or a device could block forever
        fh = os.fdopen(regular_file.open_regular(filepath), "rb")
    except regular_file.NotRegularFileError as err:
        raise ValueError(f"Cannot load weights: {err}") from None
    with fh:  # the checked file itself is read, whatever the path names by now
        if not layer.built:
            raise ValueError(
                f"Build {layer.name!r} (call it or fit it) before loading weights into it."
            )
        if not h5_format.is_sluice_checkpoint(filepath) and _load_keras_file(
            layer, filepath, fh, skip_mismatch, by_name
        ):
            return
    if by_name:
        raise ValueError(
            f"by_name=True applies to Keras 2 HDF5 files; {filepath!r} is not one (sluice's "
            "own files are matched by weight names already)."
        )
    _load_sluice_file(layer, filepath, skip_mismatch)


def _load_keras_file(
    layer: Any, filepath: str, fh: Any, skip_mismatch: bool, by_name: bool
) -> bool:
    """Loads a Keras 3 or Keras 2 file, read from `fh` (the file `filepath` named when it was
    checked); False when it is neither."""
    source = repr(filepath)
    if zipfile.is_zipfile(fh):
        try:
            archive = zipfile.ZipFile(fh)
        except zipfile.BadZipFile as err:  # its end record is sound, its directory is not
            raise ValueError(
                f"{filepath!r}: a damaged or unreadable `.keras` zip ({err})."
            ) from None
        with archive:
            members = keras_archive.checked_members(archive, filepath)  # as load_model checks
            if _KERAS_ARCHIVE_WEIGHTS not in members:
                raise ValueError(
                    f"{filepath!r} is a zip file without {_KERAS_ARCHIVE_WEIGHTS!r}: not a "
                    "`.keras` model file."
                )
            # capped by what this model's weights can need: a zip bomb is refused, not inflated
            data = keras_archive.read_weights_member(
                archive, members[_KERAS_ARCHIVE_WEIGHTS], layer, filepath
            )
        try:
            f = h5py.File(io.BytesIO(data), "r")
        except OSError as err:  # not HDF5
            raise ValueError(
                f"{filepath!r}: its {_KERAS_ARCHIVE_WEIGHTS!r} is not a readable HDF5 file ({err})."
            ) from None
        with f:
            keras_layout.read_model_weights(layer, f, skip_mismatch, source)
        return True
    try:
        f = h5py.File(regular_file.same_file(fh.fileno(), filepath), "r")
    except OSError:
        return False  # not HDF5: sluice's reader says what is wrong with it
    with f:
        if legacy_h5.is_legacy_layout(f):
            legacy_h5.read_legacy_weights(layer, f, by_name, skip_mismatch, source)
            return True
        if keras_layout.is_keras3_layout(f):
            if by_name:
                raise ValueError(
                    f"by_name=True applies to Keras 2 HDF5 files; {filepath!r} is a Keras 3 "
                    "weights file, whose weights are found by their paths in the model."
                )
            keras_layout.read_model_weights(layer, f, skip_mismatch, source)
            return True
    return False


def _load_sluice_file(layer: Any, filepath: str, skip_mismatch: bool) -> None:
    """Loads a file written by `save_weights`."""
    named = named_weights(layer)
    expected = {name: (v.dtype, v.shape) for name, v in named.items()}
    try:
        if skip_mismatch:
            found = h5_format.describe(filepath)
            expected = {
                n: spec for n, spec in expected.items()
                if n in found and tuple(found[n][1]) == tuple(spec[1].as_list())
            }  # fmt: skip
            checkpoint = h5_format.read_checkpoint(filepath, expected, allow_extra=True)
        else:
            checkpoint = h5_format.read_checkpoint(filepath, expected)
    except h5_format.CheckpointError as err:
        raise ValueError(f"Cannot load weights into {layer.name!r}: {err.message}") from None
    names = list(checkpoint.arrays)
    runtime.runtime_for(layer.graph).write(
        [named[n] for n in names], [checkpoint.arrays[n] for n in names]
    )
