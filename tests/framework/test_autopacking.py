"""TF1's auto-packing: a (nested) list holding Tensors converts to one Tensor (issue 25)."""

import numpy as np
import pytest

import sluice as sl


def test_list_of_tensors_packs_with_plain_entries_and_variables():
    a = sl.constant([1.0, 2.0])
    b = sl.placeholder(sl.float32, [2])
    v = sl.Variable(3.0)
    packed = sl.convert_to_tensor([a, b])
    nested = sl.convert_to_tensor([[a[0], 1.0], [2.0, b[1]]])
    with_var = sl.convert_to_tensor([v, 2.0])
    total = sl.reduce_sum([a, [3.0, 4.0]])  # any op argument packs too
    assert packed.shape.as_list() == [2, 2] and nested.shape.as_list() == [2, 2]
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        got = sess.run([packed, nested, with_var, total], {b: [5.0, 6.0]})
    np.testing.assert_array_equal(got[0], [[1, 2], [5, 6]])
    np.testing.assert_array_equal(got[1], [[1, 1], [2, 6]])
    np.testing.assert_array_equal(got[2], [3, 2])
    assert got[3] == 10.0 and got[0].dtype == np.float32


def test_packing_tensors_of_different_dtypes_is_refused():
    with pytest.raises(TypeError, match="int32"):
        sl.convert_to_tensor([sl.constant([1.0]), sl.constant([1])])


def test_values_numpy_only_holds_as_objects_are_refused():
    with pytest.raises(TypeError, match="Failed to convert object of type"):
        sl.convert_to_tensor(object())


def test_none_is_refused_as_tf1_refuses_it_even_with_a_dtype():
    # a None gradient multiplied into a loss became a NaN constant
    x = sl.constant([1.0, 2.0])
    for build in (
        lambda: sl.convert_to_tensor(None),
        lambda: x * None,
        lambda: sl.constant(None, dtype=sl.float32),
        lambda: sl.stack([x[0], None]),
    ):
        with pytest.raises(ValueError, match="None values not supported"):
            build()
    with pytest.raises(TypeError, match="got None"):
        sl.constant([1.0, None], dtype=sl.float32)


def test_a_requested_dtype_casts_the_packed_tensors():
    # TF1's _cast_nested_seqs_to_dtype: tf.add(x64, [x32, 2.0]) packs a float64 tensor
    x = sl.constant(1.0)
    packed = sl.convert_to_tensor([[x, 2.0], [3.0, x]], dtype=sl.float64)
    assert packed.dtype == sl.float64
    with sl.Session() as sess:
        np.testing.assert_array_equal(sess.run(packed), [[1, 2], [3, 1]])


def test_shape_arguments_pack_nested_lists_of_tensors():
    # TF1's usual padding to a run-time length: tf.pad(x, [[0, 0], [0, n - tf.shape(x)[1]]])
    x = sl.placeholder(sl.float32, [None, None])
    n = sl.placeholder(sl.int32, [])
    padded = sl.pad(x, [[0, 0], [0, n - sl.shape(x)[1]]], constant_values=-1.0)
    with sl.Session() as sess:
        got = sess.run(padded, {x: [[1.0, 2.0]], n: 4})
    np.testing.assert_array_equal(got, [[1, 2, -1, -1]])


def test_a_tensor_array_is_not_a_tensor():
    with pytest.raises(TypeError, match="TensorArray"):
        sl.convert_to_tensor(sl.TensorArray(sl.float32, 3))
