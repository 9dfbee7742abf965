"""Whole models in Keras 3's `.keras` files: `save_model` and `load_model`.

A `.keras` file is a zip of three members:

    metadata.json      {"keras_version": "sluice <version>", "date_saved": "2026-01-31@12:00:00"}
    config.json        {"module", "class_name", "config", "registered_name", "build_config",
                        "compile_config"}: the model as `serialize_keras_object` writes it
    model.weights.h5   the weights in Keras 3's layout (`keras_layout`), and the optimizer:

        optimizer/vars/0    the training steps done (`fit`'s iteration counter), int64
        optimizer/vars/1    the learning rate, float32
        optimizer/vars/2..  the optimizer's state, in the order `Optimizer.variables()` lists
                            it (the leaves of its optax state: for Adam the step count, then
                            the first moments of each trainable weight, then the second ones);
                            each dataset's "name" attribute is the variable's name.

    (The optimizer group is written once the optimizer has state, i.e. after one fit step.
    An optimizer state without these names, as Keras writes it, is ignored with a warning.)

Writing is atomic: the zip is written to a temporary file beside the target and renamed over
it, so a crash leaves the old file or the new one (a later save removes the temporary files of
killed ones), and a full disk is an OSError naming the file. Loading treats the file as
untrusted: it must be a regular file (a FIFO could block forever), only the three members are
read, each up to a size cap whatever the zip's headers claim (the weights' cap is what the model
the config builds can need: `weights_cap`; a zip bomb is refused, not inflated), member
names with absolute paths or ".." are refused, the JSON must parse, every class it names must be
a sluice built-in, registered (`sl.saving.register_keras_serializable`) or in `custom_objects`
(modules named in the file are never imported, nothing is unpickled), Python bytecode (a
`Lambda`'s lambda) is refused unless `safe_mode=False`, and the weights must match the model
the config builds, in number, shapes and dtypes.

A loaded functional model is built in the default graph (as one built on `sl.Input`s is), so
its layers and tensors work with new Inputs; a Sequential or subclassed model has a graph of
its own. The legacy whole-model HDF5 format (`.h5`) is neither written nor read here (its
weights load with `model.load_weights`).

>>> model = sl.Sequential([sl.Input((3,)), sl.layers.Dense(2)])
>>> model.compile("adam", "mse")
>>> model.save("model.keras")
>>> again = sl.models.load_model("model.keras")
>>> x = np.ones((1, 3), np.float32)
>>> np.array_equal(model.predict(x, verbose=0), again.predict(x, verbose=0))
True
"""

from __future__ import annotations

import datetime
import io
import json
import os
import warnings
import zipfile
import zlib
from typing import Any, BinaryIO

import h5py
import numpy as np

from sluice import _version
from sluice._export import export
from sluice._keras.layers import runtime
from sluice._keras.saving import keras_layout, serialization
from sluice._module_paths import saved_module
from sluice._tf1.checkpoints import atomic, regular_file
from sluice.framework.placement import processes
from sluice.framework.variables import Variable

CONFIG = "config.json"
METADATA = "metadata.json"
WEIGHTS = "model.weights.h5"
# The most bytes read from a member, whatever the zip says (a zip bomb stops here).
MAX_JSON_BYTES = 64 * 2**20
# The weights member's cap (`weights_cap`): Adam keeps 2 slots per weight, AMSGrad and a
# centered RMSprop with momentum 3; one more for headroom (a zip bomb needs a factor of
# thousands); a group and a dataset header per weight and slot; the file's own metadata.
_OPTIMIZER_SLOTS = 4
_HEADER_BYTES = 16 * 2**10
_MARGIN_BYTES = 2**20
_OPTIMIZER = "optimizer"


# -- saving ----------------------------------------------------------------------------------
@export("saving.save_model")
def save_model(
    model: Any, filepath: Any, overwrite: bool = True, zipped: bool | None = None, **kwargs: Any
) -> None:
    """Writes `model` to the `.keras` file `filepath` (see the module docstring). In a
    multi-process run every process calls it; process 0 writes the file.

    Raises:
      ValueError: a path that does not end in ".keras" (".h5" too: the legacy format is not
        written), an unsupported argument, or a model that cannot be serialized.
      FileExistsError: the file exists and `overwrite` is False.
      OSError: the file cannot be written (a full disk: errno ENOSPC), naming it; the file
        there before is unchanged.
    """
    include_optimizer = kwargs.pop("include_optimizer", True)
    if kwargs.pop("save_format", None):
        raise ValueError(
            "The `save_format` argument is deprecated in Keras 3. Please remove this argument "
            "and pass a file path with either `.keras` or `.h5` extension."
        )
    if kwargs:
        raise ValueError(f"The following argument(s) are not supported: {list(kwargs)}")
    path = os.fspath(filepath)
    if path.endswith((".h5", ".hdf5")):
        raise ValueError(
            "sluice does not write the legacy HDF5 model format: use a `.keras` file for the "
            "whole model (`model.save('model.keras')`), or `model.save_weights("
            f"'model.weights.h5')` for the weights only. Received: filepath={path}."
        )
    if not path.endswith(".keras"):
        raise ValueError(
            "Invalid filepath extension for saving. Please add a `.keras` extension (the whole "
            "model), or use `model.save_weights('name.weights.h5')` for the weights only. "
            f"Received: filepath={path}."
        )
    if zipped is False:
        raise ValueError(
            "sluice writes `.keras` files zipped only (zipped=False is not supported)."
        )
    if not model.built:  # Keras's warning: a GAN whose step calls its parts is never built
        warnings.warn(
            "You are saving a model that has not yet been built. It might not contain any "
            "weights yet. Consider building the model first by calling it on some data.",
            stacklevel=2,
        )
    if not overwrite and os.path.exists(path):
        raise FileExistsError(f"{path!r} exists and overwrite=False.")
    config = json.dumps(serialization.serialize_keras_object(model))
    weights = _weights_bytes(model, include_optimizer)  # every process: reading is a gather
    if processes.is_chief():
        metadata = json.dumps({
            "keras_version": f"sluice {_sluice_version()}",
            "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S"),
        })  # fmt: skip
        directory, name = os.path.split(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        # the temporary files of saves killed before their rename: only this target's, only
        # once their process is gone
        atomic.remove_stale_temporaries(directory, name, exact=True)

        def write(fh: Any) -> None:
            with zipfile.ZipFile(fh, "w") as zf:
                zf.writestr(METADATA, metadata)
                zf.writestr(CONFIG, config)
                zf.writestr(WEIGHTS, weights)

        # Python's file I/O, never a C library's: a full disk is an OSError naming the path
        atomic.write_stream_atomically(path, write)
    processes.barrier(f"sluice save_model {path}")


def _sluice_version() -> str:
    return _version.__version__


def _weights_bytes(model: Any, include_optimizer: bool) -> bytes:
    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as f:
        keras_layout.write_model_weights(model, f)
        state = _optimizer_state(model) if include_optimizer else []
        if state:
            group = f.create_group(f"{_OPTIMIZER}/vars")
            for i, (name, value) in enumerate(state):
                group.create_dataset(str(i), data=value)
                group[str(i)].attrs["name"] = name
    return buffer.getvalue()


def _optimizer_variables(model: Any) -> list[tuple[str, Variable]]:
    """(name, Variable) of the optimizer state in file order; [] before the first fit step."""
    optimizer = getattr(model, "optimizer", None)
    fit_state = getattr(model, "_fit_state", None)
    if optimizer is None or fit_state is None or not optimizer.variables():
        return []
    rate = optimizer.learning_rate
    found = [("iterations", fit_state.iterations)]
    found.append(("learning_rate", rate if isinstance(rate, Variable) else None))
    return found + [(v.op.name, v) for v in optimizer.variables()]


def _optimizer_state(model: Any) -> list[tuple[str, np.ndarray]]:
    pending = getattr(model, "pending_optimizer_state", None)
    if pending is not None:  # loaded, not trained since: saved as it was read
        return pending
    pairs = _optimizer_variables(model)
    if not pairs:
        return []
    variables = [v for _, v in pairs if v is not None]
    values = iter(runtime.read_values(model.graph, variables))
    state = []
    for name, v in pairs:
        if v is not None:
            state.append((name, np.asarray(next(values))))
        else:  # a learning rate that is not a Variable: its number (NaN when it has none)
            rate = model.optimizer.learning_rate
            number = float(rate) if isinstance(rate, (int, float, np.number)) else np.nan
            state.append((name, np.asarray(number, np.float32)))
    return state


def serialize_optimizer(optimizer: Any) -> dict:
    """The optimizer's Keras config, its learning rate as the number it is now (fit keeps it in
    a Variable, which callbacks may have changed)."""
    config = dict(optimizer.get_config())
    rate = config.get("learning_rate")
    if isinstance(rate, Variable):
        config["learning_rate"] = float(runtime.read_values(rate.graph, [rate])[0])
    path = serialization.builtin_path(type(optimizer))
    if path is not None:
        module, name = path.rsplit(".", 1)
        registered = None
    else:
        module, name = saved_module(type(optimizer).__module__), type(optimizer).__name__
        registered = serialization.get_registered_name(type(optimizer))
    return {"module": module, "class_name": name,
            "config": serialization.serialize_keras_object(config),
            "registered_name": registered}  # fmt: skip


def restore_optimizer_state(model: Any, state: list[tuple[str, np.ndarray]]) -> None:
    """Loads `state` (read by `load_model`) into the optimizer's Variables and fit's iteration
    counter, once fit has built them.

    Raises:
      ValueError: the state does not fit this optimizer (count, shapes or dtypes).
    """
    pairs = _optimizer_variables(model)
    if len(pairs) != len(state):
        raise ValueError(
            f"The optimizer state saved with {model.name!r} has {len(state)} variables; its "
            f"optimizer ({type(model.optimizer).__name__}) has {len(pairs)}: "
            f"{[name for name, _ in pairs]}."
        )
    variables, values = [], []
    for (name, v), (saved_name, value) in zip(pairs, state):
        if v is None:
            continue
        if tuple(v.shape.as_list()) != tuple(value.shape):
            raise ValueError(
                f"The optimizer state {saved_name!r} saved with {model.name!r} has shape "
                f"{tuple(value.shape)}; {name} has shape {tuple(v.shape.as_list())}."
            )
        target = np.dtype(v.dtype.name)
        if target.kind in "iub" and value.dtype.kind not in "iub":
            raise ValueError(
                f"The optimizer state {saved_name!r} saved with {model.name!r} holds "
                f"{value.dtype} values; {name} is {target} (a count, not a real number)."
            )
        variables.append(v)
        values.append(value.astype(target))
    runtime.runtime_for(model.graph).write(variables, values)


# -- loading ---------------------------------------------------------------------------------
@export("models.load_model", "saving.load_model")
def load_model(
    filepath: Any, custom_objects: dict | None = None, compile: bool = True, safe_mode: bool = True
) -> Any:
    """The model saved in the `.keras` file `filepath`: rebuilt from its config, with its
    weights, compiled as it was (with `compile=True`) and its optimizer state restored when
    fit builds the optimizer, so fit continues where it stopped.

    Args:
      filepath: a `.keras` file.
      custom_objects: {name: class or function} for the custom objects the config names
        (by class name or registered name) that are not registered.
      compile: compile the model as it was saved.
      safe_mode: refuse Python bytecode (lambdas) in the config.

    Raises:
      ValueError: not a regular file (a FIFO, a device), not a `.keras` zip, a missing or
        oversized member (weights larger than the model can need), a member name with an
        absolute path or "..", bad JSON, an unknown class, bytecode in safe mode, or weights
        that do not match the model.
    """
    path = os.fspath(filepath)
    if not path.endswith(".keras"):
        raise ValueError(
            f"File format not supported: filepath={path}. Keras 3 only supports V3 `.keras` "
            "files and legacy H5 format files (`.h5` extension); sluice reads `.keras` files "
            "(and the weights of `.h5` files, with `model.load_weights`)."
        )
    with _open_archive(path) as fh:
        try:
            zf = zipfile.ZipFile(fh)
        except zipfile.BadZipFile as err:
            raise _damaged(path, err) from err
        with zf:
            model, state = _load_archive(zf, path, custom_objects, compile, safe_mode)
    if compile and state and getattr(model, "compiled", False):
        model.defer_optimizer_state(state)
    return model


def _open_archive(path: str) -> BinaryIO:
    """The `.keras` file, open; ValueError unless it is a regular file holding a zip."""
    try:
        fh = os.fdopen(regular_file.open_regular(path), "rb")  # a FIFO would block forever
    except FileNotFoundError:
        fh = None
    except OSError as err:  # not a regular file, not readable
        raise ValueError(f"Cannot load a model from {path}: {err}") from None
    if fh is not None and zipfile.is_zipfile(fh):
        return fh
    if fh is not None:
        fh.close()
    raise ValueError(
        f"File not found: filepath={path}. Please ensure the file is an accessible `.keras` "
        "zip file."
    )


def _load_archive(
    zf: zipfile.ZipFile, path: str, custom_objects: dict | None, compile: bool, safe_mode: bool
) -> tuple[Any, list[tuple[str, np.ndarray]]]:
    """The model of an open `.keras` zip and its optimizer state. The weights member is read
    last, capped by what the model its config builds can hold (`weights_cap`)."""
    infos = _member_infos(zf, path)
    config = _parse_json(_read_capped(zf, infos[CONFIG], MAX_JSON_BYTES, path), CONFIG, path)
    metadata = _parse_json(_read_capped(zf, infos[METADATA], MAX_JSON_BYTES, path), METADATA, path)
    if not isinstance(metadata, dict):
        raise ValueError(f"{path}: {METADATA} is not a JSON object.")
    if not isinstance(config, dict) or not isinstance(config.get("class_name"), str):
        raise ValueError(f"{path}: {CONFIG} does not describe a model (no class_name).")
    if not compile:
        config = {k: v for k, v in config.items() if k != "compile_config"}
    try:  # a functional model is built in the default graph (see `functional_config`)
        model = serialization.deserialize_keras_object(config, custom_objects, safe_mode)
    except RecursionError:
        raise ValueError(f"{path}: {CONFIG} nests too deeply.") from None
    except (KeyError, AttributeError, IndexError, TypeError) as err:  # a config of the wrong shape
        raise ValueError(
            f"{path}: {CONFIG} cannot be rebuilt ({type(err).__name__}: {err})."
        ) from err
    if not hasattr(model, "get_weights"):
        raise ValueError(f"{path}: the config describes {type(model).__name__}, not a model.")
    weights = read_weights_member(zf, infos[WEIGHTS], model, path)
    try:
        weights_file = h5py.File(io.BytesIO(weights), "r")
    except OSError as err:
        raise ValueError(f"{path}: {WEIGHTS} is not an HDF5 file ({err}).") from None
    with weights_file as f:
        keras_layout.read_model_weights(model, f, source=f"{path}")
        state = _read_optimizer_state(f, path)
    return model, state


def checked_members(zf: zipfile.ZipFile, path: str) -> dict[str, zipfile.ZipInfo]:
    """{name: entry} of every member, after checking every name: no absolute path or "..",
    no name twice (readers would disagree on which member is meant)."""
    infos = zf.infolist()
    for info in infos:
        name = info.filename
        parts = name.replace("\\", "/").split("/")
        if name.startswith(("/", "\\")) or ".." in parts or (len(name) > 1 and name[1] == ":"):
            raise ValueError(f"{path}: the zip member {name!r} has an absolute path or '..'.")
    by_name = {info.filename: info for info in infos}
    if len(by_name) != len(infos):
        raise ValueError(f"{path}: the zip holds two members of the same name.")
    return by_name


def _member_infos(zf: zipfile.ZipFile, path: str) -> dict[str, zipfile.ZipInfo]:
    """The three members' entries, after checking every member's name."""
    by_name = checked_members(zf, path)
    for name in (CONFIG, METADATA, WEIGHTS):
        if name not in by_name:
            raise ValueError(f"{path} is not a complete `.keras` file: it has no {name}.")
    return by_name


def weights_cap(model: Any) -> int:
    """The most bytes a weights h5 of `model` can need: each weight's values (8 bytes each at
    most) for the weight and `_OPTIMIZER_SLOTS` optimizer slots, HDF5's headers, and a margin."""
    values = sum(int(np.prod(v.shape.as_list(), dtype=np.int64)) for v in model.weights)
    per_weight = (1 + _OPTIMIZER_SLOTS) * _HEADER_BYTES
    return (1 + _OPTIMIZER_SLOTS) * 8 * values + per_weight * len(model.weights) + _MARGIN_BYTES


def read_weights_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, model: Any, path: str) -> bytes:
    """The weights member, refused (never inflated first) when its declared size or what it
    inflates to exceeds `weights_cap(model)`: a zip bomb ends here, not in a MemoryError."""
    cap = weights_cap(model)
    why = (
        f"the model {model.name!r} has {len(model.weights)} weights, so its weights file "
        f"needs at most {cap} bytes (with optimizer state and HDF5 headers)"
    )
    return _read_capped(zf, info, cap, path, why)


def _read_capped(
    zf: zipfile.ZipFile, info: zipfile.ZipInfo, cap: int, path: str, why: str = ""
) -> bytes:
    """A member's bytes, read in chunks and stopped past `cap`, whatever its header says."""
    why = why or f"at most {cap} bytes are read"
    if info.file_size > cap:
        raise ValueError(
            f"{path}: {info.filename} declares {info.file_size} bytes; {why}. Refused without "
            "inflating it."
        )
    chunks, total = [], 0
    try:
        with zf.open(info) as member:
            while chunk := member.read(min(2**20, cap + 1 - total)):
                total += len(chunk)
                if total > cap:
                    raise ValueError(
                        f"{path}: {info.filename} inflates to more than {cap} bytes (its header "
                        f"says {info.file_size}); {why}."
                    )
                chunks.append(chunk)
    except (zipfile.BadZipFile, NotImplementedError, RuntimeError, EOFError, zlib.error) as err:
        raise _damaged(path, err) from err
    return b"".join(chunks)


def _damaged(path: str, err: Exception) -> ValueError:
    # a corrupted (CRC, truncated), encrypted or exotically compressed member
    return ValueError(f"{path}: a damaged or unreadable `.keras` zip ({err}).")


def _parse_json(data: bytes, member: str, path: str) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        raise ValueError(f"{path}: {member} is not valid JSON ({err}).") from None


def _read_optimizer_state(f: h5py.File, path: str) -> list[tuple[str, np.ndarray]]:
    """The optimizer state in `f` as sluice writes it; [] when there is none. A state without
    sluice's names (written by Keras: another optimizer layout) is ignored with a warning."""
    group = keras_layout.find_group(f, f"{_OPTIMIZER}/vars")
    if group is None:
        return []
    count = len(group)
    if sorted(group) != sorted(str(i) for i in range(count)):
        raise ValueError(f"{path}: {_OPTIMIZER}/vars must hold datasets 0..{count - 1}.")
    state = []
    for i in range(count):
        where = f"{path}: {_OPTIMIZER}/vars/{i}"
        link = group.get(str(i), getlink=True)
        ds = group[str(i)] if isinstance(link, h5py.HardLink) else None
        if not isinstance(ds, h5py.Dataset) or ds.dtype.kind not in "biuf" or ds.dtype.fields:
            raise ValueError(f"{where} is not a numeric dataset of the file.")
        if ds.is_virtual or ds.id.get_create_plist().get_external_count():
            raise ValueError(f"{where} keeps its values in another file.")
        if ds.size * ds.dtype.itemsize > f.id.get_filesize():
            raise ValueError(f"{where} declares more bytes of values than the whole file holds.")
        name = ds.attrs.get("name")
        if name is None:
            warnings.warn(
                f"{path}: the optimizer state has no sluice names (written by Keras?); "
                "the optimizer starts afresh.",
                stacklevel=3,
            )
            return []
        if isinstance(name, bytes):
            try:
                name = name.decode("utf-8")
            except UnicodeDecodeError:
                raise ValueError(f"{where}: its 'name' attribute is not UTF-8 text.") from None
        state.append((str(name), ds[()]))
    return [(name, np.asarray(value)) for name, value in state]
