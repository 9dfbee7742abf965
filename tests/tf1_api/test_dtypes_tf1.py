"""TF1's `dtypes_test.py`, names forwarded from `tf.` to `sl.` (variant, quantized and float8
types left out: sluice has none), plus the ways TF1 programs use DTypes on tensors."""

import copy
import pickle

import numpy as np
import pytest

import sluice as sl

# TF1's DataType enum numbers (types.proto) of the dtypes sluice has
ENUMS = {
    "float32": 1,
    "float64": 2,
    "int32": 3,
    "uint8": 4,
    "int16": 5,
    "int8": 6,
    "string": 7,
    "complex64": 8,
    "int64": 9,
    "bool": 10,
    "bfloat16": 14,
    "uint16": 17,
    "complex128": 18,
    "float16": 19,
    "uint32": 22,
    "uint64": 23,
}


@pytest.mark.parametrize("name,enum", sorted(ENUMS.items()))
def test_all_types_convertible_to_dtype(name, enum):
    dtype = sl.as_dtype(enum)
    assert dtype.as_datatype_enum == enum
    assert dtype.name == name
    assert sl.as_dtype(enum + 100) is dtype  # a reference enum reads as the same dtype
    _ = np.empty((1, 1, 1, 1), dtype=dtype.as_numpy_dtype)
    if dtype != sl.bfloat16:
        assert sl.as_dtype(enum).base_dtype == sl.as_dtype(dtype.as_numpy_dtype)


def test_invalid():
    with pytest.raises(TypeError):
        sl.as_dtype(0)  # DT_INVALID
    with pytest.raises(TypeError):
        sl.as_dtype("not_a_type")
    with pytest.raises(TypeError):
        sl.as_dtype((sl.int32, sl.float32))
    with pytest.raises(TypeError):
        sl.as_dtype(np.dtype([("f1", np.uint), ("f2", np.int32)]))


def test_numpy_conversion():
    for np_type, dtype in [
        (np.float32, sl.float32),
        (np.float64, sl.float64),
        (np.int32, sl.int32),
        (np.int64, sl.int64),
        (np.uint8, sl.uint8),
        (np.uint16, sl.uint16),
        (np.int16, sl.int16),
        (np.int8, sl.int8),
        (np.complex64, sl.complex64),
        (np.complex128, sl.complex128),
        (np.bool_, sl.bool),
    ]:
        assert sl.as_dtype(np_type) is dtype
        assert sl.as_dtype(np.dtype(np_type)) is dtype

    class AnObject:
        dtype = "f4"

    class AnotherObject:
        dtype = np.dtype(np.complex64)

    assert sl.as_dtype(AnObject) is sl.float32
    assert sl.as_dtype(AnotherObject) is sl.complex64


def test_string_conversion():
    for name in ("float32", "float64", "int32", "uint8", "uint16", "int16", "int8"):
        assert sl.as_dtype(name) is getattr(sl, name)
    assert sl.as_dtype("complex64") is sl.complex64
    assert sl.as_dtype("complex128") is sl.complex128
    assert sl.as_dtype("int64") is sl.int64
    assert sl.as_dtype("bool") is sl.bool
    assert sl.as_dtype("bfloat16") is sl.bfloat16
    assert sl.as_dtype("float") is sl.float32
    assert sl.as_dtype("double") is sl.float64
    assert sl.as_dtype("half") is sl.float16
    assert sl.as_dtype("float32_ref") is sl.float32  # sluice has no reference dtypes
    assert sl.as_dtype("string") is sl.string
    with pytest.raises(TypeError, match="not supported"):
        sl.as_dtype("variant")


def test_real_dtype():
    for dtype in [sl.float32, sl.float64, sl.bool, sl.uint8, sl.int8, sl.int16, sl.int32]:
        assert dtype.real_dtype is dtype
    assert sl.complex64.real_dtype is sl.float32
    assert sl.complex128.real_dtype is sl.float64


def test_dtypes_have_unique_names():
    names = {sl.as_dtype(enum).name for enum in ENUMS.values()}
    assert len(names) == len(ENUMS)


KINDS = {
    # name: (is_integer, is_floating, is_complex, is_unsigned, is_bool)
    "int8": (True, False, False, False, False),
    "int16": (True, False, False, False, False),
    "int32": (True, False, False, False, False),
    "int64": (True, False, False, False, False),
    "uint8": (True, False, False, True, False),
    "uint16": (True, False, False, True, False),
    "complex64": (False, False, True, False, False),
    "complex128": (False, False, True, False, False),
    "float": (False, True, False, False, False),
    "double": (False, True, False, False, False),
    "float16": (False, True, False, False, False),
    "bfloat16": (False, True, False, False, False),
    "bool": (False, False, False, False, True),
}


@pytest.mark.parametrize("name", sorted(KINDS))
def test_is_integer_floating_complex_unsigned(name):
    dtype = sl.as_dtype(name)
    got = (dtype.is_integer, dtype.is_floating, dtype.is_complex, dtype.is_unsigned, dtype.is_bool)
    assert got == KINDS[name]
    assert dtype.is_quantized is False


def test_min_max():
    assert (sl.int8.min, sl.int8.max) == (-128, 127)
    assert (sl.int16.min, sl.int16.max) == (-32768, 32767)
    assert (sl.int32.min, sl.int32.max) == (-2147483648, 2147483647)
    assert (sl.int64.min, sl.int64.max) == (-9223372036854775808, 9223372036854775807)
    assert (sl.uint8.min, sl.uint8.max) == (0, 255)
    assert (sl.uint16.min, sl.uint16.max) == (0, 65535)
    assert (sl.uint32.min, sl.uint32.max) == (0, 4294967295)
    assert (sl.uint64.min, sl.uint64.max) == (0, 18446744073709551615)
    for np_type in (np.float16, np.float32, np.float64):
        dtype = sl.as_dtype(np_type)
        assert dtype.min == np.finfo(np_type).min
        assert dtype.max == np.finfo(np_type).max
    assert sl.bfloat16.min == float.fromhex("-0x1.FEp127")
    assert sl.bfloat16.max == float.fromhex("0x1.FEp127")
    for no_limits in (sl.bool, sl.complex64, sl.complex128):
        with pytest.raises(TypeError):
            _ = no_limits.min
        with pytest.raises(TypeError):
            _ = no_limits.max
    assert sl.bool.limits == (False, True)
    assert sl.uint8.limits == (0, 255)


def test_size():
    assert [d.size for d in (sl.int8, sl.float16, sl.float32, sl.float64, sl.complex128)] == [
        1,
        2,
        4,
        8,
        16,
    ]
    assert sl.bool.size == 1


def test_eq_with_non_tf_types():
    assert sl.int32 != int  # noqa: E721  (TF1: `as_dtype(int)` names no dtype)
    assert sl.float64 != 2.1
    assert sl.float32 != None  # noqa: E711
    assert sl.float32 == np.float32
    assert sl.float32 == np.dtype("float32")
    assert np.dtype("float32") == sl.float32
    assert sl.float32 == "float32"
    assert sl.float32 == "float"  # TF1's name, which NumPy reads as float64
    assert sl.float64 != "float"
    assert sl.float32 == 1  # the DataType enum number
    assert sl.float32 != sl.float64


def test_hash_mixes_with_numpy_dtypes():
    table = {np.dtype("float32"): "f", sl.int32: "i"}
    assert table[sl.float32] == "f"
    assert table[np.dtype("int32")] == "i"
    assert {sl.float32, np.dtype("float32")} == {sl.float32}


def test_python_types_conversion():
    assert sl.as_dtype(float) is sl.float32
    assert sl.as_dtype(bool) is sl.bool
    assert sl.as_dtype(np.array(2**32).dtype) is sl.int64


def test_reduce_copy_and_pickle():
    for dtype in (sl.float32, sl.int64, sl.bool, sl.bfloat16, sl.complex64):
        ctor, args = dtype.__reduce__()
        assert ctor is sl.as_dtype
        assert args == (dtype.name,)
        assert pickle.loads(pickle.dumps(dtype)) is dtype
        assert copy.deepcopy(dtype) is dtype


def test_is_compatible_with():
    assert sl.float32.is_compatible_with(sl.float32)
    assert sl.float32.is_compatible_with(np.float32)
    assert not sl.float32.is_compatible_with(sl.float64)


def test_repr_and_module():
    assert repr(sl.float32) == "sl.float32"
    assert sl.dtypes.float32 is sl.float32
    assert sl.dtypes.as_dtype is sl.as_dtype
    assert isinstance(sl.float32, sl.DType)


def test_tensor_dtypes_are_dtype_objects():
    x = sl.constant([1.0, 2.0])
    i = sl.constant([1, 2])
    v = sl.Variable(np.zeros(2, np.float64))
    assert x.dtype is sl.float32
    assert i.dtype is sl.int32
    assert v.dtype.base_dtype is sl.float64
    assert x.dtype.as_numpy_dtype is np.float32
    assert (x + 1.0).dtype.is_floating
    assert sl.cast(x, sl.int64).dtype is sl.int64
    assert sl.placeholder(sl.float16, [None]).dtype is sl.float16
    # the TF1 idiom: a constant of the input's dtype, a value of the numpy type
    y = sl.constant(x.dtype.as_numpy_dtype(3.0), dtype=x.dtype.base_dtype) * x
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        np.testing.assert_allclose(sess.run(y), [3.0, 6.0], rtol=1e-6)
        assert sess.run(y).dtype == x.dtype


def test_numpy_and_jax_accept_dtypes():
    import jax.numpy as jnp

    assert np.zeros(2, sl.float16).dtype == np.float16
    assert jnp.zeros(2, sl.bfloat16).dtype == sl.bfloat16
    assert np.array([1.5]).astype(sl.int32).dtype == np.int32
    assert np.finfo(sl.float32).max == sl.float32.max
