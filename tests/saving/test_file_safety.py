"""Saving and loading models and weights as files a user's disk holds: a full disk is an OSError
naming the file (the earlier file stays), a FIFO is refused instead of blocking, a `.keras` zip
bomb is refused before it is inflated, and killed saves' temporary files are cleaned up."""

import contextlib
import errno
import io
import os
import struct
import zipfile

import h5py
import numpy as np
import pytest

import sluice as sl
from sluice import layers as L
from sluice._keras.saving import keras_archive
from sluice._tf1.checkpoints import atomic, regular_file
from tests.file_faults import deadline, fail_writes_to

needs_proc = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
DEAD_PID = 999_999_999  # above any pid_max: no process has it


def _model():
    return sl.Sequential([sl.Input((3,)), L.Dense(2)])


def _set(model, value):
    model.set_weights([np.full(w.shape, value, w.dtype) for w in model.get_weights()])


# -- a full disk ------------------------------------------------------------------------------
@needs_proc
@pytest.mark.parametrize("name", ["model.weights.h5", "model.keras"])
def test_a_full_disk_while_saving_is_an_oserror_and_keeps_the_earlier_file(
    tmp_path, monkeypatch, name
):
    model = _model()
    path = str(tmp_path / name)
    save = model.save_weights if name.endswith(".h5") else model.save
    _set(model, 1.0)
    save(path)
    before = (tmp_path / name).read_bytes()
    _set(model, 2.0)
    with monkeypatch.context() as patch:
        fail_writes_to(patch, name)
        with pytest.raises(OSError) as caught:
            save(path)
    assert caught.value.errno == errno.ENOSPC and path in str(caught.value)
    assert (tmp_path / name).read_bytes() == before
    assert os.listdir(tmp_path) == [name]  # no temporary file left
    again = sl.models.load_model(path) if name.endswith(".keras") else _model()
    if name.endswith(".h5"):
        again.load_weights(path)
    assert all((w == 1.0).all() for w in again.get_weights())


# -- FIFOs ------------------------------------------------------------------------------------
@needs_fifo
@pytest.mark.parametrize("name", ["w.weights.h5", "w.h5", "m.keras", "weights"])
def test_load_weights_from_a_fifo_is_refused_naming_it(tmp_path, name):
    os.mkfifo(tmp_path / name)
    with deadline(), pytest.raises(ValueError, match=f"{name}' is a FIFO.*not a regular file"):
        _model().load_weights(str(tmp_path / name))


@needs_fifo
@pytest.mark.parametrize("name", ["w.weights.h5", "m.keras"])
def test_a_fifo_swapped_in_after_the_check_is_never_read(tmp_path, monkeypatch, name):
    path = str(tmp_path / name)
    model = _model()
    _set(model, 0.5)
    model.save_weights(path) if name != "m.keras" else model.save(path)
    _set(model, 0.0)
    checked = regular_file.open_regular

    def check_then_swap(*args, **kwargs):  # a FIFO takes the file's name right after the check
        fd = checked(*args, **kwargs)
        os.mkfifo(tmp_path / "fifo")
        os.replace(tmp_path / "fifo", path)
        monkeypatch.setattr(regular_file, "open_regular", checked)
        return fd

    monkeypatch.setattr(regular_file, "open_regular", check_then_swap)
    # HDF5 or zipfile opening the path again would wait for a writer forever
    if name == "m.keras":  # read from the file that was checked
        with deadline():
            model.load_weights(path)
        assert all(np.all(w == 0.5) for w in model.get_weights())
    else:  # sluice's checkpoint reader checks its own open again: the FIFO is named
        with deadline(), pytest.raises(ValueError, match="is a FIFO"):
            model.load_weights(path)


@needs_fifo
def test_load_model_from_a_fifo_is_refused_naming_it(tmp_path):
    os.mkfifo(tmp_path / "m.keras")
    with deadline(), pytest.raises(ValueError, match="m.keras' is a FIFO.*not a regular file"):
        sl.models.load_model(str(tmp_path / "m.keras"))


# -- zip members ------------------------------------------------------------------------------
def _keras_with_members(tmp_path, extra=(), weights=None):
    """A `.keras` file of a tiny model, its weights member replaced by `weights` when given,
    with the (name, bytes) members `extra` written after the others."""
    good = str(tmp_path / "good.keras")
    _model().save(good)
    path = str(tmp_path / "odd.keras")
    with zipfile.ZipFile(good) as zin, zipfile.ZipFile(path, "w") as zout:
        for info in zin.infolist():
            is_weights = info.filename == keras_archive.WEIGHTS and weights is not None
            zout.writestr(info.filename, weights if is_weights else zin.read(info))
        with (
            pytest.warns(UserWarning, match="Duplicate name")
            if any(name in zin.namelist() for name, _ in extra)
            else contextlib.nullcontext()
        ):
            for name, data in extra:
                zout.writestr(name, data)
    return path


@pytest.mark.parametrize(
    "member, message",
    [
        (keras_archive.WEIGHTS, "two members of the same name"),
        ("../model.weights.h5", "member '../model.weights.h5' has an absolute path or '..'"),
    ],
)
def test_load_weights_checks_the_member_names_of_a_keras_file_as_load_model(
    tmp_path, member, message
):
    path = _keras_with_members(tmp_path, [(member, b"\0" * 100)])
    with pytest.raises(ValueError, match="odd.keras.*" + message):
        _model().load_weights(path)
    with pytest.raises(ValueError, match="odd.keras.*" + message):
        sl.models.load_model(path)


def test_load_weights_of_a_keras_zip_with_a_damaged_directory_is_a_valueerror(tmp_path):
    path = _keras_with_members(tmp_path)
    raw = bytearray(open(path, "rb").read())
    at = raw.find(b"PK\x01\x02")  # the first central directory entry; the end record stays
    raw[at : at + 4] = b"XXXX"
    open(path, "wb").write(bytes(raw))
    with pytest.raises(ValueError, match="odd.keras'?: a damaged or unreadable `.keras` zip"):
        _model().load_weights(path)
    with pytest.raises(ValueError, match="odd.keras'?: a damaged or unreadable `.keras` zip"):
        sl.models.load_model(path)


def test_an_optimizer_state_name_that_is_not_utf8_is_refused_naming_the_file(tmp_path):
    model = _model()
    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as f:
        keras_archive.keras_layout.write_model_weights(model, f)
        f.create_dataset("optimizer/vars/0", data=np.int64(1))
        f["optimizer/vars/0"].attrs["name"] = np.bytes_(b"\xff\xfe")
    path = _keras_with_members(tmp_path, weights=buffer.getvalue())
    with pytest.raises(ValueError, match="odd.keras: optimizer/vars/0: .*not UTF-8"):
        sl.models.load_model(path)


# -- zip bombs --------------------------------------------------------------------------------
def _keras_with_weights_member(tmp_path, data, declared=None):
    """A `.keras` file of a tiny model whose weights member is `data` (deflated), its header
    saying `declared` bytes when given (a lie) instead of len(data)."""
    good = str(tmp_path / "good.keras")
    _model().save(good)
    path = str(tmp_path / "bomb.keras")
    with zipfile.ZipFile(good) as zin, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            member = data if info.filename == keras_archive.WEIGHTS else zin.read(info)
            zout.writestr(info.filename, member)
    if declared is not None:
        raw = bytearray(open(path, "rb").read())
        name = keras_archive.WEIGHTS.encode()
        # the uncompressed size in the local header and in the central directory's entry
        for signature, size_at, name_at in ((b"PK\x03\x04", 22, 30), (b"PK\x01\x02", 24, 46)):
            at = raw.find(signature)
            while raw[at + name_at : at + name_at + len(name)] != name:
                at = raw.find(signature, at + 4)
            struct.pack_into("<I", raw, at + size_at, declared)
        open(path, "wb").write(bytes(raw))
    return path


ZEROS = bytes(40 * 2**20)  # 40 MB of zeros deflate to about 40 KB


def test_a_weights_member_larger_than_the_model_needs_is_refused(tmp_path):
    path = _keras_with_weights_member(tmp_path, ZEROS)
    assert os.path.getsize(path) < 200_000
    message = f"declares {len(ZEROS)} bytes; .*'sequential[^']*' has 2 weights.*at most"
    with pytest.raises(ValueError, match=message) as caught:
        sl.models.load_model(path)
    cap = keras_archive.weights_cap(_model())
    assert cap < len(ZEROS) and f"at most {cap} bytes" in str(caught.value)
    with pytest.raises(ValueError, match=f"at most {cap} bytes"):
        _model().load_weights(path)


def test_a_weights_member_declaring_gigabytes_is_refused_without_inflating(tmp_path, monkeypatch):
    path = _keras_with_weights_member(tmp_path, b"\0" * 1000, declared=int(3.5 * 2**30))
    opened = []
    real_open = zipfile.ZipFile.open
    monkeypatch.setattr(
        zipfile.ZipFile,
        "open",
        lambda self, name, *a, **k: (
            opened.append(getattr(name, "filename", name)) or real_open(self, name, *a, **k)
        ),
    )
    with pytest.raises(ValueError, match=f"declares {int(3.5 * 2**30)} bytes.*Refused without"):
        sl.models.load_model(path)
    assert keras_archive.WEIGHTS not in opened


def test_a_weights_member_whose_header_understates_it_is_refused(tmp_path):
    path = _keras_with_weights_member(tmp_path, ZEROS, declared=1000)
    with pytest.raises(ValueError, match="bomb.keras.*(damaged|inflates to more than)"):
        sl.models.load_model(path)


@pytest.mark.slow  # a fit; test_keras_archive's Adam round trips load under the cap too
def test_the_cap_fits_a_trained_model_with_its_optimizer_state(tmp_path):
    model = sl.Sequential([sl.Input((3,)), L.Dense(4), L.Dense(1)])
    model.compile(sl.optimizers.Adam(0.01), "mse")
    model.fit(np.ones((4, 3), np.float32), np.ones((4, 1), np.float32), epochs=1, verbose=0)
    path = str(tmp_path / "m.keras")
    model.save(path)
    with zipfile.ZipFile(path) as zf:
        size = zf.getinfo(keras_archive.WEIGHTS).file_size
    assert size <= keras_archive.weights_cap(model)
    again = sl.models.load_model(path)
    for a, b in zip(model.get_weights(), again.get_weights()):
        np.testing.assert_array_equal(a, b)


# -- temporary files of killed saves ----------------------------------------------------------
@pytest.mark.parametrize("name", ["model.keras", "model.weights.h5"])
def test_a_save_removes_the_stale_temporary_files_of_killed_saves_of_its_target(tmp_path, name):
    model = _model()
    stale = f".{name}.tmp-{DEAD_PID}-0123456789abcdef"
    alive = f".{name}.tmp-{os.getppid()}-0123456789abcdef"  # its writer may still be running
    other_target = f".{name}.bak.tmp-{DEAD_PID}-0123456789abcdef"
    not_ours = f".{name}.tmp-notes"
    for kept in (stale, alive, other_target, not_ours):
        (tmp_path / kept).write_bytes(b"partial")
    os.mkfifo(tmp_path / f".{name}.tmp-{DEAD_PID}-fedcba9876543210")  # not a regular file
    (model.save if name.endswith(".keras") else model.save_weights)(str(tmp_path / name))
    assert sorted(os.listdir(tmp_path)) == sorted(
        [name, alive, other_target, not_ours, f".{name}.tmp-{DEAD_PID}-fedcba9876543210"]
    )
    assert atomic.is_temporary(stale, name, exact=True)
    assert not atomic.is_temporary(other_target, name, exact=True)
    assert atomic.is_temporary(other_target, name)  # a prefix, as Saver's cleanup uses it


def test_a_temporary_file_of_another_machine_is_never_removed(tmp_path):
    """Its pid names no process here: a host sharing the directory (NFS) or another container
    may be writing it. Only this machine's (and PID namespace's) dead owners' files go."""
    name = "model.keras"
    ours = os.path.basename(atomic.temporary_name(str(tmp_path / name)))
    assert ours.startswith(f".{name}.tmp-{os.getpid()}.{atomic.machine_tag()}-")
    other_machine = format(int(atomic.machine_tag(), 16) ^ 1, "08x")
    theirs = f".{name}.tmp-{DEAD_PID}.{other_machine}-0123456789abcdef"
    dead_here = f".{name}.tmp-{DEAD_PID}.{atomic.machine_tag()}-0123456789abcdef"
    for planted in (theirs, dead_here):
        (tmp_path / planted).write_bytes(b"partial")
    atomic.remove_stale_temporaries(str(tmp_path), name, exact=True)
    assert sorted(os.listdir(tmp_path)) == [theirs]
    atomic.remove_stale_temporaries(str(tmp_path), "model")  # Saver's prefix form too
    assert sorted(os.listdir(tmp_path)) == [theirs]
