"""The gradient helpers of TF 1.15's gradients_test.py under their TF1 module paths:
`prevent_gradient`, `_as_indexed_slices`, `_hessian_vector_product`, `grad_pass_through`,
`recompute_grad` and `get_dependent_variables` (differentiable paths, trainable variables)."""

import numpy as np
import pytest

import sluice as sl
from sluice.python.ops import array_ops, custom_gradient, gradients_impl, math_ops


def test_prevent_gradient_raises_lookup_error():
    inp = sl.constant(1.0, shape=[4, 3])
    out = array_ops.prevent_gradient(inp, message="no gradient here")
    assert sl.Session().run(out).shape == (4, 3)
    with pytest.raises(LookupError, match="explicitly disabled. Reason: no gradient here"):
        sl.gradients(out, inp)


def test_as_indexed_slices_is_every_row():
    value = np.random.RandomState(0).rand(4, 3, 2).astype(np.float32)
    sliced = math_ops._as_indexed_slices(sl.constant(value))
    assert math_ops._as_indexed_slices(sliced) is sliced
    with sl.Session() as sess:
        fetches = [sliced.dense_shape, sliced.indices, sl.multiply(sliced, 1.0)]
        shape, indices, dense = sess.run(fetches)
    assert shape.tolist() == [4, 3, 2] and indices.tolist() == [0, 1, 2, 3]
    np.testing.assert_allclose(dense, value, atol=1e-6)
    with pytest.raises(TypeError, match="Not a Tensor or IndexedSlices"):
        math_ops._as_indexed_slices(value)


def test_hessian_vector_product_is_the_hessian_times_v():
    rng = np.random.RandomState(1)
    mat, v, x = rng.randn(4, 4), rng.randn(4, 1), rng.randn(4, 1)
    xt = sl.constant(x)
    x_mat_x = sl.matmul(sl.transpose(xt), sl.matmul(sl.constant(mat), xt))
    (hv,) = gradients_impl._hessian_vector_product(x_mat_x, [xt], [sl.constant(v)])
    np.testing.assert_allclose(sl.Session().run(hv), (mat + mat.T) @ v, atol=1e-6)


def test_grad_pass_through():
    x = sl.get_variable("x", shape=(), initializer=sl.constant_initializer(1.0), use_resource=True)
    z = sl.get_variable("z", shape=(), initializer=sl.constant_initializer(3.0), use_resource=True)
    assert sl.gradients(sl.assign(x, z**2), z) == [None]
    y = custom_gradient.grad_pass_through(lambda v: sl.assign(x, v))(z**2)
    (dz,) = sl.gradients(y, z)
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        assert sess.run(dz) == 6.0
    # the variables the wrapped function reads get no gradient
    assert sl.gradients(custom_gradient.grad_pass_through(lambda v: x * v)(z), x) == [None]


def test_recompute_grad_equals_the_gradient():
    w = sl.get_variable("w", initializer=sl.constant([0.5, -1.0, 2.0]))
    inp = sl.constant(np.arange(6, dtype=np.float32).reshape(2, 3))

    def f(t, v):
        return sl.tanh(t * v)

    wanted = sl.gradients(f(inp, w), [inp, w])
    got = sl.gradients(custom_gradient.recompute_grad(f)(inp, w), [inp, w])
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        for a, b in zip(sess.run(wanted), sess.run(got)):
            np.testing.assert_allclose(a, b, atol=1e-6)


def test_get_dependent_variables_walks_differentiable_paths_to_trainable_variables():
    var = sl.Variable(sl.constant(100.0, shape=(5,)))
    frozen = sl.Variable(sl.constant(1.0, shape=(5,)), trainable=False)
    x = sl.constant(2.0)
    through_ones_like = sl.identity(x) + 5.0 + sl.ones_like(var)
    assert custom_gradient.get_dependent_variables([x], [through_ones_like]) == []
    both = sl.identity(x) + var + frozen
    assert custom_gradient.get_dependent_variables([x], [both]) == [var]


def test_complex_ys_need_grad_ys():
    x = sl.constant(7 + 3j, dtype=sl.complex64)
    with pytest.raises(TypeError, match=r"complex tensors must set grad_ys \(y\.dtype = tf\.c"):
        sl.gradients(sl.square(x), x)


def test_gradient_ops_record_their_forward_op():
    inp, w = sl.constant(1.0, shape=[3, 4]), sl.constant(1.0, shape=[4, 2])
    xw = sl.matmul(inp, w, name="xw")
    (w_grad,) = sl.gradients(xw, w)
    assert w_grad.op.type == "MatMul" and w_grad.op._original_op is xw.op
    assert w_grad.op.get_attr("transpose_a") and xw.op._original_op is None


@pytest.mark.parametrize("multi_device", [False, True])
def test_colocated_aggregation_as_tf1(multi_device):
    g = sl.Graph()
    with g.as_default():
        with g.device("/device:GPU:1"):
            w = sl.constant(1.0, shape=[1, 1])
        x, y = sl.constant(1.0, shape=[1, 2]), sl.constant(1.0, shape=[1, 2])
        with g.device("/task:1" if multi_device else None):
            wx = sl.matmul(w, x)
        with g.device("/task:2" if multi_device else None):
            wy = sl.matmul(w, y)
        (gw,) = sl.gradients(wx + wy, [w], colocate_gradients_with_ops=True)
        # one device: the sum joins its first part (wx's gradient); several: the op's group
        wanted = w if multi_device else wx
        assert gw.op.colocation_groups() == wanted.op.colocation_groups()
        (plain,) = sl.gradients(wx + wy, [w])
        assert plain.op.colocation_groups() != wanted.op.colocation_groups()
