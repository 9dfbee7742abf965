"""Fuzzes the checkpoint reader: mutates a valid checkpoint (attributes, shapes, dtypes, storage
layout, links, bytes, truncation) and loads it. Run by `test_h5_fuzz.py` in a child process
whose address space is limited, so that a large allocation fails instead of swapping, and
under a timeout, so that a hang fails the test:

    python h5_fuzz_worker.py WORK_DIR MAX_EXAMPLES [SEED]

Every load must return exactly the saved values or raise a `CheckpointError` of kind
"data_loss" or "invalid" (DataLossError, InvalidArgumentError) whose message names the file;
"unimplemented" is allowed only when the mutation set `format_version`. Any other exception
fails the run, and Hypothesis prints the mutation that caused it. Without JAX (see
`saver_child.import_checkpoint_modules`), so it starts quickly.
"""

import os
import resource
import shutil
import sys
import warnings
import zlib

import h5py
import numpy as np
from hypothesis import HealthCheck, given, reject, seed, settings
from hypothesis import strategies as st

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from saver_child import import_checkpoint_modules  # noqa: E402

import_checkpoint_modules()
from sluice._tf1.checkpoints import h5_format  # noqa: E402

ADDRESS_SPACE = 3 << 30  # far below any declared size the mutations make (up to 2**40 bytes)


def saved_arrays() -> dict:
    import ml_dtypes

    rng = np.random.default_rng(0)
    return {
        "dense/kernel": rng.normal(size=(3, 4)).astype(np.float32),
        "dense/bias": rng.normal(size=5),
        "global_step": np.int64(42),
        "empty": np.zeros((0, 3), np.float32),
        "bf": rng.normal(size=(2, 2)).astype(ml_dtypes.bfloat16),
        "mask": np.array([True, False, True]),
        "c": np.array([1 + 2j, -3j], np.complex64),
        "u8": np.arange(7, dtype=np.uint8),
    }


SAVED = saved_arrays()
COUNTS = {"dropout/random_uniform": 3, "noise": 7}
VARIABLES = sorted(SAVED)
DATASETS = [f"variables/{n}" for n in VARIABLES] + ["random_state/op_names", "random_state/counts"]
OBJECTS = ["/"] + DATASETS
ATTRS = ["format", "format_version", "num_variables", "global_step", "dtype", "shape", "crc32"]


def write_legacy(path: str) -> None:
    """The same checkpoint as sluice wrote it before the hardening: HDF5's earliest format,
    variable-length strings (in a global heap), no shape attribute."""
    with h5py.File(path, "w") as f:
        f.attrs.update(format="sluice.checkpoint", format_version=1, num_variables=len(SAVED))
        f.attrs["global_step"] = np.int64(42)
        group = f.create_group("variables")
        for name, value in SAVED.items():
            value = np.asarray(value)
            stored = value.view(np.uint16) if value.dtype.name == "bfloat16" else value
            ds = group.create_dataset(name, data=stored)
            ds.attrs["dtype"] = value.dtype.name
            little = stored.astype(stored.dtype.newbyteorder("<"))
            ds.attrs["crc32"] = np.uint32(zlib.crc32(little.tobytes()))
        state = f.create_group("random_state")
        ops = sorted(COUNTS)
        names = state.create_dataset(
            "op_names", data=np.array(ops, dtype=object), dtype=h5py.string_dtype()
        )
        names.attrs["crc32"] = np.uint32(zlib.crc32(b"\0".join(o.encode() for o in ops)))
        counts = state.create_dataset("counts", data=np.array([COUNTS[o] for o in ops], np.int64))
        counts.attrs["crc32"] = np.uint32(zlib.crc32(counts[()].tobytes()))


# -- strategies -----------------------------------------------------------------------------------
attr_values = st.one_of(
    st.sampled_from(
        [
            "float32",
            "int64",
            "bfloat16",
            "uint16",
            "bool",
            "O",
            "S10",
            "(3,)f4",
            "V8",
            "<U4",
            "float32, float32",
            "float128",
            "sluice.checkpoint",
            "",
            "nonsense",
        ]
    ),  # fmt: skip
    st.text(max_size=80),
    st.binary(max_size=80).map(np.bytes_),
    st.integers(min_value=-(2**63), max_value=2**63 - 1).map(np.int64),
    st.integers(min_value=0, max_value=2**64 - 1).map(np.uint64),
    st.floats(allow_nan=True),
    st.lists(st.integers(min_value=-(2**40), max_value=2**40), max_size=40).map(
        lambda v: np.array(v, np.int64)
    ),
)
attribute_mutation = st.tuples(
    st.just("attribute"),
    st.sampled_from(OBJECTS),
    st.sampled_from(ATTRS),
    st.one_of(st.just(None), attr_values),  # None deletes the attribute
)
shape_mutation = st.tuples(
    st.just("shape"),
    st.sampled_from(DATASETS),
    st.one_of(
        st.lists(st.integers(min_value=0, max_value=9), max_size=4),
        st.sampled_from([[2**31], [10**10], [2**20, 2**20], [0], [1, 0, 5], [2**40]]),
    ),
)
dtype_mutation = st.tuples(
    st.just("dtype"),
    st.sampled_from(DATASETS),
    st.sampled_from(
        [
            "int8",
            "uint8",
            "int16",
            "uint16",
            "int32",
            "float16",
            "float32",
            "float64",
            "int64",
            "uint64",
            "complex64",
            "complex128",
            "bool",
            ">f4",
            ">i8",
            ">u2",
            "vlen-str",
            "vlen-f4",
            "compound",
            "(2,)f4",
            "S4",
            "V4",
            "enum",
        ]
    ),  # fmt: skip
    st.sampled_from(["view", "astype", "declared-only"]),
)
layout_mutation = st.tuples(
    st.just("layout"),
    st.sampled_from(DATASETS),
    st.sampled_from(
        [
            "chunked",
            "gzip",
            "lzf",
            "shuffle",
            "fletcher32",
            "scaleoffset",
            "compact",
            "external",
            "virtual",
            "soft-link",
            "external-link",
            "hard-link-twin",
            "group",
            "unallocated",
            "named-type",
            "maxshape",
        ]
    ),  # fmt: skip
)
byte_edit = st.one_of(
    st.tuples(st.just("xor"), st.floats(0, 1, exclude_max=True), st.integers(1, 255)),
    st.tuples(
        st.just("overwrite"), st.floats(0, 1, exclude_max=True), st.binary(min_size=1, max_size=64)
    ),
)
byte_mutation = st.tuples(st.just("bytes"), st.lists(byte_edit, min_size=1, max_size=4))
truncation = st.tuples(st.just("truncate"), st.floats(0, 1, exclude_max=True))
appendage = st.tuples(st.just("append"), st.binary(min_size=1, max_size=4096))
mutations = st.tuples(
    st.sampled_from(["current", "legacy"]),
    st.one_of(attribute_mutation, shape_mutation, dtype_mutation, layout_mutation, truncation,
              appendage, byte_mutation),
    st.one_of(st.none(), byte_mutation, truncation),
)  # fmt: skip


# -- applying a mutation --------------------------------------------------------------------------
def _recreate(f: h5py.File, name: str, **create) -> h5py.Dataset:
    """Replaces the dataset `name` by a new one made with `create`, keeping its attributes."""
    attrs = {k: v for k, v in f[name].attrs.items()}
    parent, _, base = name.rpartition("/")
    del f[name]
    ds = f[parent].create_dataset(base, **create)
    for key, value in attrs.items():
        ds.attrs[key] = value
    return ds


def _apply_shape(f: h5py.File, name: str, shape: list) -> None:
    old = f[name]
    values, shape = old[()], tuple(shape)
    size = int(np.prod(shape, dtype=object))
    if values.size == size:
        _recreate(f, name, data=np.reshape(values, shape))  # same bytes, same crc32
    elif size * values.dtype.itemsize <= 1 << 20:
        data = np.resize(values, shape) if values.size else np.zeros(shape, values.dtype)
        _recreate(f, name, data=data)
    else:
        _recreate(f, name, shape=shape, dtype=values.dtype)  # declared, never written


def _apply_dtype(f: h5py.File, name: str, target: str, mode: str) -> None:
    values = f[name][()]
    special = {
        "vlen-str": h5py.string_dtype(),
        "vlen-f4": h5py.vlen_dtype(np.float32),
        "compound": np.dtype([("a", "f4"), ("b", "i2")]),
        "enum": h5py.enum_dtype({"A": 0, "B": 1}, basetype="i1"),
    }
    dtype = special.get(target) or np.dtype(target)
    if mode == "declared-only" or target in ("vlen-str", "vlen-f4", "(2,)f4", "V4"):
        _recreate(f, name, shape=values.shape, dtype=dtype)
        return
    if mode == "view" and values.dtype.kind not in "OS":
        raw = np.ascontiguousarray(values).reshape(-1).view(np.uint8)
        if dtype.itemsize == 0 or raw.size % dtype.itemsize:
            reject()
        _recreate(f, name, data=raw.view(dtype))
        return
    try:
        converted = np.asarray(values).astype(dtype)
    except (TypeError, ValueError):
        reject()
    _recreate(f, name, data=converted)


def _apply_layout(f: h5py.File, name: str, layout: str, work: str) -> None:
    values = f[name][()]
    shape = values.shape
    chunks = tuple(max(1, d) for d in shape) if shape else None
    if layout in ("chunked", "gzip", "lzf", "shuffle", "fletcher32", "scaleoffset", "maxshape"):
        if not shape or values.dtype.kind in "OSc" and layout == "scaleoffset":
            reject()
        options = {
            "chunked": dict(chunks=chunks),
            "gzip": dict(compression="gzip"),
            "lzf": dict(compression="lzf"),
            "shuffle": dict(shuffle=True),
            "fletcher32": dict(fletcher32=True),
            "scaleoffset": dict(scaleoffset=0 if values.dtype.kind in "iub" else 2),
            "maxshape": dict(maxshape=tuple(None for _ in shape)),
        }[layout]
        _recreate(f, name, data=values, **options)
    elif layout == "compact":
        attrs = dict(f[name].attrs)
        parent, _, base = name.rpartition("/")
        del f[name]
        plist = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        plist.set_layout(h5py.h5d.COMPACT)
        tid = h5py.h5t.py_create(values.dtype, logical=True)
        space = h5py.h5s.create_simple(shape) if shape else h5py.h5s.create(h5py.h5s.SCALAR)
        dsid = h5py.h5d.create(f[parent].id, base.encode(), tid, space, dcpl=plist)
        if values.size:
            dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ascontiguousarray(values))
        for key, value in attrs.items():
            f[name].attrs[key] = value
    elif layout == "external":
        raw = os.path.join(work, "external.bin")
        np.ascontiguousarray(values).tofile(raw)
        if values.dtype.kind in "OS" or not shape:
            reject()
        external = [(raw, 0, max(1, values.nbytes))]
        _recreate(f, name, shape=shape, dtype=values.dtype, external=external)
    elif layout == "virtual":
        if not shape or values.dtype.kind in "OS":
            reject()
        source = os.path.join(work, "virtual-source.h5")
        with h5py.File(source, "w") as s:
            s["x"] = values
        vlayout = h5py.VirtualLayout(shape=shape, dtype=values.dtype)
        vlayout[...] = h5py.VirtualSource(source, "x", shape=shape)
        attrs = dict(f[name].attrs)
        parent, _, base = name.rpartition("/")
        del f[name]
        ds = f[parent].create_virtual_dataset(base, vlayout)
        for key, value in attrs.items():
            ds.attrs[key] = value
    elif layout == "soft-link":
        f["twin"] = values
        del f[name]
        f[name] = h5py.SoftLink("/twin")
    elif layout == "external-link":
        source = os.path.join(work, "linked.h5")
        with h5py.File(source, "w") as s:
            s["x"] = values
        del f[name]
        f[name] = h5py.ExternalLink(source, "x")
    elif layout == "hard-link-twin":
        parent = name.rpartition("/")[0]
        f[f"{parent}/twin"] = f[name]
    elif layout == "group":
        del f[name]
        f.create_group(name)
    elif layout == "unallocated":
        _recreate(f, name, shape=shape, dtype=values.dtype)
    elif layout == "named-type":
        f[name.rpartition("/")[0] + "/a_type"] = np.dtype("f4")


def _apply_bytes(path: str, mutation: tuple) -> None:
    kind = mutation[0]
    size = os.path.getsize(path)
    if kind == "truncate":
        with open(path, "r+b") as fh:
            fh.truncate(int(mutation[1] * size))
    elif kind == "append":
        with open(path, "ab") as fh:
            fh.write(mutation[1])
    elif size:
        with open(path, "r+b") as fh:
            for edit, where, what in mutation[1]:
                fh.seek(int(where * size))
                if edit == "xor":
                    byte = fh.read(1)
                    fh.seek(int(where * size))
                    fh.write(bytes([byte[0] ^ what]))
                else:
                    fh.write(what[: max(0, size - int(where * size))])


def apply(path: str, mutation: tuple, work: str) -> None:
    kind = mutation[0]
    if kind in ("truncate", "append", "bytes"):
        _apply_bytes(path, mutation)
        return
    try:
        with h5py.File(path, "a") as f:
            if kind == "attribute":
                _, obj, key, value = mutation
                if value is None:
                    if key not in f[obj].attrs:
                        reject()
                    del f[obj].attrs[key]
                else:
                    f[obj].attrs[key] = value
            elif kind == "shape":
                _apply_shape(f, mutation[1], mutation[2])
            elif kind == "dtype":
                _apply_dtype(f, *mutation[1:])
            else:
                _apply_layout(f, mutation[1], mutation[2], work)
    except (TypeError, ValueError, OSError, KeyError, OverflowError):
        reject()  # h5py cannot make this mutation: not a file the reader can meet


# -- the oracle -----------------------------------------------------------------------------------
def check_load(load, path: str, allowed: set, exact_shapes: bool = True) -> None:
    """The load returns the saved values (of the saved shapes, unless `exact_shapes` is False:
    a file of the earlier format records no shape but the dataset's) or raises an allowed
    CheckpointError naming the file."""
    try:
        checkpoint = load()
    except h5_format.CheckpointError as err:
        assert err.kind in allowed, f"{err.kind}: {err.message}"
        assert repr(path) in err.message, err.message
        return
    for name, value in SAVED.items():
        if name in checkpoint.arrays:
            got = checkpoint.arrays[name]
            assert got.dtype == np.asarray(value).dtype, (name, got.dtype)
            assert got.shape == np.shape(value) or not exact_shapes, (name, got.shape)
            assert got.tobytes() == np.asarray(value).tobytes(), name
    assert checkpoint.random_counts == COUNTS, checkpoint.random_counts


def run(work: str, max_examples: int, seed_value: int | None) -> None:
    bases = {"current": os.path.join(work, "base.h5"), "legacy": os.path.join(work, "legacy.h5")}
    h5_format.write_checkpoint(bases["current"], SAVED, 42, COUNTS)
    write_legacy(bases["legacy"])
    expected = {n: (np.asarray(v).dtype, np.shape(v)) for n, v in SAVED.items()}

    @settings(
        max_examples=max_examples,
        deadline=None,
        database=None,
        derandomize=seed_value is None,
        suppress_health_check=list(HealthCheck),
    )
    @given(mutations)
    def fuzz(mutation):
        path = os.path.join(work, "model-1.h5")
        base, first, then = mutation
        shutil.copyfile(bases[base], path)
        if os.environ.get("FUZZ_LOG"):
            print(repr(mutation)[:300], file=sys.stderr, flush=True)
        apply(path, first, work)
        if then is not None:
            apply(path, then, work)
        allowed = {"data_loss", "invalid"}
        # "this sluice reads version 1" when the version was set, or when a byte of a file
        # of the earlier format (no metadata checksums) changed it
        legacy_bytes = base == "legacy" and {first[0], (then or ("",))[0]} & {"bytes", "truncate"}
        if (first[0] == "attribute" and first[2] == "format_version") or legacy_bytes:
            allowed.add("unimplemented")
        check_load(lambda: h5_format.read_checkpoint(path, expected), path, allowed)
        # a file of the earlier format records no shape: a reshape with the same bytes (a shape
        # mutation, or a view as the same dtype, which flattens) shows only against the
        # expected shapes (a restore, which checks them against the graph's)
        reshaped = first[0] == "shape" or (first[0] == "dtype" and first[3] == "view")
        exact = not (base == "legacy" and reshaped)
        check_load(lambda: h5_format.read_checkpoint(path), path, allowed, exact)
        try:
            specs = h5_format.describe(path)
        except h5_format.CheckpointError as err:
            assert err.kind in allowed and repr(path) in err.message, err.message
        else:
            for name, spec in specs.items():  # what sl.train.load_variable does
                load = lambda: h5_format.read_checkpoint(path, {name: spec}, True)  # noqa: E731
                check_load(load, path, allowed, exact)

    if seed_value is not None:
        fuzz = seed(seed_value)(fuzz)
    fuzz()


if __name__ == "__main__":
    warnings.simplefilter("ignore")  # NumPy's casting warnings while mutating
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    run(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else None)
    print("fuzz: ok", flush=True)
