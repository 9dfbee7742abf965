"""The h5 reader treats a checkpoint as untrusted input: each hostile construct is refused with
an error naming the file and the dataset, before any value is read.

`test_h5_fuzz.py` mutates valid checkpoints at random; these are the constructs one by one.
"""

import os
import re
import struct
import subprocess
import sys
import zlib

import h5py
import numpy as np
import pytest

import sluice as sl
from sluice import train
from sluice._tf1.checkpoints import h5_format

HERE = os.path.dirname(os.path.abspath(__file__))
VALUES = np.arange(6, dtype=np.float32).reshape(2, 3)


@pytest.fixture
def checkpoint(tmp_path):
    path = str(tmp_path / "model-1.h5")
    h5_format.write_checkpoint(path, {"w": VALUES}, 1, {"dropout": 3})
    return path


def _replace_dataset(path, name="w", keep_attrs=True, **create):
    """Re-creates /variables/<name> with `create` (h5py create_dataset arguments)."""
    with h5py.File(path, "a") as f:
        group = f["variables"]
        attrs = dict(group[name].attrs)
        del group[name]
        ds = group.create_dataset(name, **create)
        for key, value in attrs.items() if keep_attrs else ():
            ds.attrs[key] = value
        return ds.name


def _set_attr(path, key, value, obj="variables/w"):
    with h5py.File(path, "a") as f:
        f[obj].attrs[key] = value


def _refused(path, message, error=sl.errors.DataLossError, name="w"):
    """load_variable and Saver.restore both raise `error` naming the file and `message`."""
    pattern = re.escape(path) + ".*" + message
    with pytest.raises(error, match=pattern):
        train.load_variable(path, name)
    with sl.Graph().as_default():
        sl.Variable(np.zeros((2, 3), np.float32), name="w")
        with sl.Session() as sess, pytest.raises(error, match=pattern):
            train.Saver().restore(sess, path)


def test_a_valid_checkpoint_reads_back_exactly(checkpoint):
    np.testing.assert_array_equal(train.load_variable(checkpoint, "w"), VALUES)
    with h5py.File(checkpoint) as f:
        assert list(f["variables/w"].attrs["shape"]) == [2, 3]
        assert f.id.get_create_plist().get_version()[0] >= 2  # superblock and headers checksummed


def test_external_storage_is_refused(checkpoint, tmp_path):
    secret = tmp_path / "secret.bin"
    np.arange(6, dtype=np.float32).tofile(secret)
    _replace_dataset(checkpoint, shape=(2, 3), dtype="f4", external=[(str(secret), 0, 24)])
    _set_attr(checkpoint, "crc32", np.uint32(zlib.crc32(VALUES.tobytes())))
    _refused(checkpoint, r"variable 'w' keeps its values in the external file .*secret\.bin")


def test_a_virtual_dataset_is_refused(checkpoint, tmp_path):
    source = str(tmp_path / "source.h5")
    with h5py.File(source, "w") as f:
        f["x"] = VALUES
    layout = h5py.VirtualLayout(shape=(2, 3), dtype="f4")
    layout[:] = h5py.VirtualSource(source, "x", shape=(2, 3))
    with h5py.File(checkpoint, "a") as f:
        attrs = dict(f["variables/w"].attrs)
        del f["variables/w"]
        ds = f["variables"].create_virtual_dataset("w", layout)
        for key, value in attrs.items():
            ds.attrs[key] = value
    _refused(checkpoint, r"variable 'w' is a virtual dataset")


@pytest.mark.parametrize("kind", ["external", "soft"])
def test_links_are_refused(checkpoint, tmp_path, kind):
    source = str(tmp_path / "source.h5")
    with h5py.File(source, "w") as f:
        f["x"] = VALUES
    with h5py.File(checkpoint, "a") as f:
        f["variables/elsewhere"] = VALUES
        del f["variables/w"]
        if kind == "external":
            f["variables/w"] = h5py.ExternalLink(source, "x")
        else:
            f["variables/w"] = h5py.SoftLink("/variables/elsewhere")
    _refused(checkpoint, r"/variables/w is not an object of this file but an h5py \w+Link")


def test_a_declared_size_beyond_the_file_is_refused_before_any_allocation(checkpoint):
    """2e10 float32 elements (74.5 GiB) declared in a small file: refused, in a process whose
    address space is limited to 2 GiB (so an attempt to allocate would fail loudly, not swap)."""
    _replace_dataset(checkpoint, shape=(20_000_000_000,), dtype="f4")
    assert os.path.getsize(checkpoint) < 20_000
    code = (
        "import resource, sys; sys.path.insert(0, sys.argv[1]);"
        "from saver_child import import_checkpoint_modules; import_checkpoint_modules();"
        "from sluice._tf1.checkpoints import h5_format;"
        "resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30));"
        "h5_format.read_checkpoint(sys.argv[2])"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, HERE, checkpoint], capture_output=True, text=True, timeout=60
    )
    assert "CheckpointError" in proc.stderr and "MemoryError" not in proc.stderr, proc.stderr
    assert "declares 80000000000 bytes of values, more than the whole file" in proc.stderr
    _refused(checkpoint, r"variable 'w' declares 80000000000 bytes")


def test_a_declared_size_larger_than_what_is_stored_is_refused(checkpoint):
    with h5py.File(checkpoint, "a") as f:
        f["variables"].create_dataset("big", shape=(40, 40), dtype="f4")  # never written
        f["variables/big"].attrs.update(dtype="float32", crc32=np.uint32(0))
        f.attrs["num_variables"] = 2
    message = r"variable 'big' declares 6400 bytes .* stores 0"
    with pytest.raises(sl.errors.DataLossError, match=message):
        train.load_variable(checkpoint, "big")


def test_values_beyond_the_end_of_the_file_are_refused(tmp_path):
    path = str(tmp_path / "model-1.h5")
    h5_format.write_checkpoint(path, {"w": np.zeros(100_000, np.float32)})
    with h5py.File(path) as f:
        offset = f["variables/w"].id.get_offset()
    with open(path, "r+b") as fh:
        fh.truncate(offset + 1000)
    with pytest.raises(sl.errors.DataLossError, match=re.escape(path) + ".*(corrupt|truncated)"):
        train.load_variable(path, "w")


@pytest.mark.parametrize(
    "value",
    ["nonsense", "int64", "O", "S10", "(3,)f4", "V8", "float32, float32", "<U4", "float128"],
)
def test_a_dtype_attribute_sluice_does_not_write_is_refused(checkpoint, value):
    """Before, the raw text reached np.dtype: "int64" over float32 values restored float32
    values into an int64 variable, "nonsense" raised a raw TypeError."""
    _set_attr(checkpoint, "dtype", value)
    _refused(checkpoint, r"variable 'w' (has the dtype attribute|is stored as float32 but)")


@pytest.mark.parametrize("value", [np.bytes_(b"\xff\xfe"), 5, np.array(["a", "b"], dtype="S1")])
def test_a_dtype_attribute_that_is_not_a_short_text_is_refused(checkpoint, value):
    _set_attr(checkpoint, "dtype", value)
    _refused(checkpoint, r"attribute 'dtype' of the variable 'w'")


@pytest.mark.parametrize(
    "data, dtype",
    [
        (np.array(["a", "b"], dtype=object), h5py.string_dtype()),
        (np.zeros(2, [("a", "f4"), ("b", "i4")]), None),
        (None, np.dtype("(3,)f4")),
        (np.zeros(2, "V4"), None),
        (np.array([b"ab", b"cd"]), None),
    ],
    ids=["vlen string", "compound", "array type", "opaque", "fixed string"],
)
def test_datasets_of_non_numeric_types_are_refused(checkpoint, data, dtype):
    _replace_dataset(checkpoint, data=data, dtype=dtype, shape=None if data is not None else (2,))
    _refused(checkpoint, r"variable 'w' is stored as .*not a plain numeric type")


def test_a_vlen_dataset_is_refused(checkpoint):
    _replace_dataset(checkpoint, shape=(2,), dtype=h5py.vlen_dtype(np.float32))
    _refused(checkpoint, r"variable 'w' is stored as .*not a plain numeric type")


@pytest.mark.parametrize(
    "create, message",
    [
        (dict(data=VALUES, chunks=(1, 3)), "chunked storage layout"),
        (dict(data=VALUES, compression="gzip"), "chunked storage layout"),
    ],
)
def test_storage_layouts_sluice_does_not_write_are_refused(checkpoint, create, message):
    _replace_dataset(checkpoint, **create)
    _refused(checkpoint, r"variable 'w' has the " + message)


def test_a_shape_that_disagrees_with_its_attribute_is_refused(checkpoint):
    _replace_dataset(checkpoint, data=VALUES.reshape(3, 2))  # same bytes, same crc32
    with pytest.raises(
        sl.errors.DataLossError, match=r"variable 'w' has shape \[3, 2\] but its shape attribute"
    ):
        train.load_variable(checkpoint, "w")


def test_a_shape_that_disagrees_with_the_variable_is_an_invalid_argument(checkpoint):
    with h5py.File(checkpoint, "a") as f:
        del f["variables/w"].attrs["shape"]
    _replace_dataset(checkpoint, data=VALUES.reshape(3, 2))
    with sl.Graph().as_default():
        sl.Variable(np.zeros((2, 3), np.float32), name="w")
        with (
            sl.Session() as sess,
            pytest.raises(
                sl.errors.InvalidArgumentError,
                match=r"(?s)" + re.escape(checkpoint) + r".*w: shape \[3, 2\] in the checkpoint",
            ),
        ):
            train.Saver().restore(sess, checkpoint)


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("num_variables", "three", r"attribute 'num_variables' of the file has type"),
        ("num_variables", np.arange(10), r"attribute 'num_variables' of the file has shape"),
        ("num_variables", 7, r"the file lists 7 variables but holds 1"),
        ("num_variables", -1, r"attribute 'num_variables' of the file is -1, out of range"),
        ("format_version", 1.5, r"attribute 'format_version' of the file has type"),
        ("global_step", "x", r"attribute 'global_step' of the file has type"),
    ],
)
def test_root_attributes_are_checked_before_use(checkpoint, key, value, message):
    _set_attr(checkpoint, key, value, obj="/")
    _refused(checkpoint, message)


def test_a_random_state_of_the_wrong_shape_is_refused(checkpoint):
    with h5py.File(checkpoint, "a") as f:
        attrs = dict(f["random_state/counts"].attrs)
        del f["random_state/counts"]
        f["random_state/counts"] = np.zeros(5, np.int64)
        f["random_state/counts"].attrs.update(attrs)
    sl.Variable(np.zeros((2, 3), np.float32), name="w")
    with (
        sl.Session() as sess,
        pytest.raises(
            sl.errors.DataLossError, match=r"random_state/counts is int64 of shape \[5\], not 1"
        ),
    ):
        train.Saver().restore(sess, checkpoint)


def _legacy_file(path):
    """A checkpoint as sluice wrote it before the hardening: HDF5's earliest format, string
    attributes and op names of variable length (kept in a global heap), no shape attribute."""
    with h5py.File(path, "w") as f:
        f.attrs.update(format="sluice.checkpoint", format_version=1, num_variables=1)
        f.attrs["global_step"] = np.int64(4)
        ds = f.create_group("variables").create_dataset("w", data=VALUES)
        ds.attrs["dtype"] = "float32"
        ds.attrs["crc32"] = np.uint32(zlib.crc32(VALUES.tobytes()))
        state = f.create_group("random_state")
        names = state.create_dataset(
            "op_names", data=np.array(["dropout"], dtype=object), dtype=h5py.string_dtype()
        )
        names.attrs["crc32"] = np.uint32(zlib.crc32(b"dropout"))
        counts = state.create_dataset("counts", data=np.array([3], np.int64))
        counts.attrs["crc32"] = np.uint32(zlib.crc32(np.array([3], np.int64).tobytes()))
    return path


def test_files_of_the_earlier_format_still_read(tmp_path):
    path = _legacy_file(str(tmp_path / "old.h5"))
    checkpoint = h5_format.read_checkpoint(path)
    np.testing.assert_array_equal(checkpoint.arrays["w"], VALUES)
    assert checkpoint.global_step == 4 and checkpoint.random_counts == {"dropout": 3}


def test_a_global_heap_that_would_make_hdf5_loop_forever_is_refused(tmp_path):
    """HDF5 walks a global heap collection object by object and never advances past a
    free-space object of size 0: reading a variable-length string from it hangs. Found by the
    fuzz test; checked in a child process with a timeout, so a regression fails, not hangs."""
    path = _legacy_file(str(tmp_path / "old.h5"))
    data = bytearray(open(path, "rb").read())
    start = data.index(b"GCOL")
    offset = start + 16
    while True:  # to the free-space object (index 0)
        index, _, _, size = struct.unpack_from("<HHIQ", data, offset)
        if index == 0:
            break
        offset += 16 + (size + 7) // 8 * 8
    struct.pack_into("<Q", data, offset + 8, 0)
    open(path, "wb").write(data)
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from saver_child import import_checkpoint_modules; import_checkpoint_modules();"
        "from sluice._tf1.checkpoints import h5_format;"
        "h5_format.read_checkpoint(sys.argv[2])"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, HERE, path], capture_output=True, text=True, timeout=60
    )
    assert "CheckpointError" in proc.stderr, proc.stderr
    assert "a global heap (where variable-length strings are kept)" in proc.stderr
    assert "does not fit it" in proc.stderr


def test_bfloat16_and_big_endian_values_read_back_exactly(tmp_path):
    import ml_dtypes

    path = str(tmp_path / "model.h5")
    values = {
        "bf": np.array([1.5, -2.0], ml_dtypes.bfloat16),
        "c": np.array([1 + 2j], np.complex64),
        "b": np.array([True, False]),
        "u": np.array([2**63], np.uint64),
    }
    h5_format.write_checkpoint(path, values)
    big = values["c"].astype(">c8")
    _replace_dataset(path, "c", data=big)  # same values, other byte order: same crc32
    checkpoint = h5_format.read_checkpoint(path)
    for name, value in values.items():
        assert checkpoint.arrays[name].dtype == value.dtype
        np.testing.assert_array_equal(checkpoint.arrays[name], value)
