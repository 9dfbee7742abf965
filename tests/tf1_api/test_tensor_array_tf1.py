"""sl.TensorArray against TF 1.15's graph-mode tensor_array_ops_test, behaviour by behaviour.

Each test names the TF1 test it follows (our own code, the same behaviour): values at 1e-6,
error types and messages, static shapes, gradients. Graphs that matter for both engines run in
both, and the two must agree.

The whole file is marked slow (about 85 small graphs, each compiled or interpreted on its own:
minutes in all); tests/framework/test_tensor_array.py covers the same features in the default
run. Run it with `pytest -m slow tests/tf1_api/test_tensor_array_tf1.py`.
"""

import numpy as np
import pytest

import sluice as sl

pytestmark = pytest.mark.slow

ENGINES = ["interpreted", "compiled"]
InvalidArgumentError = sl.errors.InvalidArgumentError


def session(engine="compiled"):
    return sl.Session(config=sl.SessionConfig(engine=engine))


@pytest.fixture(params=ENGINES)
def engine(request):
    return request.param


def close(a, b):
    np.testing.assert_allclose(a, b, atol=1e-6, rtol=1e-6)


def ragged(size=3, **kw):
    return sl.TensorArray(sl.float32, size=size, tensor_array_name="foo", infer_shape=False, **kw)


# -- writes and reads -----------------------------------------------------------------------------
def test_write_read_elements_of_different_shapes(engine):  # testTensorArrayWriteRead
    w = ragged().write(0, [[4.0, 5.0]]).write(1, [[1.0]]).write(2, -3.0)
    with session(engine) as s:
        d0, d1, d2 = s.run([w.read(0), w.read(1), w.read(2)])
    close(d0, [[4.0, 5.0]])
    close(d1, [[1.0]])
    close(d2, -3.0)


@pytest.mark.parametrize("dtype", [sl.float32, sl.float64, sl.int32, sl.int64, sl.complex64])
def test_write_then_stack(dtype):  # testTensorArrayWritePack
    ta = sl.TensorArray(dtype, size=3, tensor_array_name="foo")
    rows = [np.array([[4.0, 5.0]]), np.array([[6.0, 7.0]]), np.array([[8.0, 9.0]])]
    rows = [r.astype(dtype.as_numpy_dtype) for r in rows]
    w = ta.write(0, rows[0]).write(1, rows[1]).write(2, rows[2])
    with session() as s:
        np.testing.assert_array_equal(s.run(w.stack()), np.stack(rows))


def test_stack_of_empty_elements():  # testEmptyTensorArrayPack
    ta = sl.TensorArray(sl.float32, size=3, tensor_array_name="foo")
    empty = np.zeros((0, 1), np.float32)
    with session() as s:
        assert s.run(ta.write(0, empty).write(1, empty).write(2, empty).stack()).shape == (3, 0, 1)


@pytest.mark.parametrize("dtype", [sl.float32, sl.int64, sl.complex128])
def test_concat_of_different_first_dimensions(dtype, engine):  # testTensorArrayWriteConcat
    ta = sl.TensorArray(dtype, size=3, tensor_array_name="foo", infer_shape=False)
    np_dtype = dtype.as_numpy_dtype
    parts = [
        np.array([[4.0, 5.0], [104.0, 105.0], [204.0, 205.0]], np_dtype),
        np.array([[6.0, 7.0], [106.0, 107.0]], np_dtype),
        np.array([[8.0, 9.0]], np_dtype),
    ]
    w = ta.write(0, parts[0]).write(1, parts[1]).write(2, parts[2])
    with session(engine) as s:
        np.testing.assert_array_equal(s.run(w.concat()), np.concatenate(parts))


def test_unwritten_elements_are_zeros_when_their_shape_is_known():
    # testTensorArrayReadOrPackNotAllValuesAvailableFillsZeros and ...InferShapeFillsZeros
    shaped = sl.TensorArray(sl.float32, size=3, element_shape=[1, 2], tensor_array_name="foo")
    inferred = sl.TensorArray(sl.float32, size=3, tensor_array_name="foo")
    with session() as s:
        close(s.run(shaped.read(0)), [[0.0, 0.0]])
        for ta in (shaped, inferred):
            w = ta.write(1, [[4.0, 5.0]])
            close(s.run(w.read(0)), [[0.0, 0.0]])
            close(s.run(w.stack()), [[[0.0, 0.0]], [[4.0, 5.0]], [[0.0, 0.0]]])
            close(s.run(w.concat()), [[0.0, 0.0], [4.0, 5.0], [0.0, 0.0]])


def test_unwritten_element_is_zeros_after_a_fed_write():
    # testSkipEagerTensorArrayReadUninitializedInferShapeFillsZeros
    ta = sl.TensorArray(sl.float32, size=3, tensor_array_name="foo")
    val = sl.placeholder(sl.float32)
    with session("interpreted") as s:
        close(s.run(ta.write(1, val).read(0), {val: [[4.0, 5.0]]}), [[0.0, 0.0]])


def test_unstack_scalars_vectors_and_empty_rows_into_one_array():  # testTensorArrayUnpackRead
    ta = ragged()
    with session() as s:
        w0 = ta.unstack(np.array([1.0, 2.0, 3.0], np.float32))
        close(s.run([w0.read(0), w0.read(1), w0.read(2)]), [1.0, 2.0, 3.0])
        m = np.array([[1.0, 1.1], [2.0, 2.1], [3.0, 3.1]], np.float32)
        w1 = ta.unstack(m)
        close(s.run([w1.read(0), w1.read(1), w1.read(2)]), m)
        w2 = ta.unstack(np.zeros((3, 0), np.float32))
        assert [x.shape for x in s.run([w2.read(0), w2.read(1), w2.read(2)])] == [(0,)] * 3


def test_split_into_unequal_lengths(engine):  # testTensorArraySplitRead
    ta = ragged()
    empty = ta.split(np.zeros([0], np.float32), sl.constant([0, 0, 0]))
    vector = ta.split(np.array([1.0, 2.0, 3.0], np.float32), sl.constant([2, 0, 1]))
    m = np.array([[1.0, 101.0], [2.0, 201.0], [3.0, 301.0]], np.float32)
    matrix = ta.split(m, sl.constant([2, 0, 1]))
    with session(engine) as s:
        got = s.run([[w.read(k) for k in range(3)] for w in (empty, vector, matrix)])
    assert [x.shape for x in got[0]] == [(0,)] * 3
    close(got[1][0], [1.0, 2.0])
    assert got[1][1].shape == (0,)
    close(got[1][2], [3.0])
    close(got[2][0], m[:2])
    assert got[2][1].shape == (0, 2)
    close(got[2][2], m[2:])


def test_multiple_arrays_in_one_graph():  # testMultiTensorArray
    r1 = sl.TensorArray(sl.float32, size=1, tensor_array_name="foo").write(0, 4.0).read(0)
    r2 = sl.TensorArray(sl.float32, size=1, tensor_array_name="bar").write(0, 5.0).read(0)
    with session() as s:
        close(s.run(r1 + r2), 9.0)


def test_close_and_size():  # testCloseTensorArray, testSizeTensorArray, testWriteCloseTensorArray
    ta = sl.TensorArray(sl.float32, size=3, tensor_array_name="foo")
    w = ragged().write(0, [[4.0, 5.0]]).write(1, [3.0])
    with session() as s:
        s.run(ta.close())
        assert s.run(ta.size()) == 3
        s.run(w.close())


# -- errors ---------------------------------------------------------------------------------------
def test_write_of_a_wrong_dtype_or_index_fails():  # testTensorArrayWriteWrongIndexOrDataTypeFails
    ta = ragged()
    with pytest.raises(
        TypeError, match="Expected float32, got 'wrong_type_scalar' of type 'str' instead."
    ):
        ta.write(0, "wrong_type_scalar")
    with session() as s:
        with pytest.raises(InvalidArgumentError, match="index -1"):
            s.run(ta.write(-1, 3.0).flow)
        with pytest.raises(
            InvalidArgumentError,
            match="Tried to write to index 3 but array is not resizeable and size is: 3",
        ):
            s.run(ta.write(3, 3.0).flow)


def test_read_of_a_wrong_index_fails():  # testTensorArrayReadWrongIndexOrDataTypeFails
    ta = ragged()
    with session() as s:
        with pytest.raises(InvalidArgumentError, match="index -1"):
            s.run(ta.write(0, [[4.0, 5.0]]).read(-1))
        with pytest.raises(
            InvalidArgumentError, match="Tried to read from index 3 but array size is: 3"
        ):
            s.run(ta.write(0, [[4.0, 5.0]]).read(3))


def test_raw_read_of_another_dtype_and_unwritten_out_of_range_reads_fail(engine):
    # testTensorArrayReadWrongIndexOrDataTypeFails: the raw read with a dtype of its own, and
    # reads out of range of an array with nothing written (the range error comes first)
    from sluice.python.ops import gen_data_flow_ops

    ta = ragged()
    w0 = ta.write(0, [[4.0, 5.0]])
    bad = gen_data_flow_ops.tensor_array_read_v3(w0.handle, 0, w0.flow, dtype=sl.float64)
    good = gen_data_flow_ops.tensor_array_read_v3(w0.handle, 0, w0.flow, dtype=sl.float32)
    assert bad.dtype == sl.float64
    with session(engine) as s:
        close(s.run(good), [[4.0, 5.0]])
        with pytest.raises(
            InvalidArgumentError, match="TensorArray dtype is float but Op requested dtype double"
        ):
            s.run(bad)
        with pytest.raises(InvalidArgumentError, match="index -1"):
            s.run(ta.read(-1))
        with pytest.raises(InvalidArgumentError, match="read from index 3 but array size is: 3"):
            s.run(ta.read(3))


def test_a_second_write_to_one_index_fails_when_it_runs(engine):
    # testSkipEagerTensorArrayWriteMultipleFails
    ta = sl.TensorArray(sl.float32, size=3, tensor_array_name="foo")
    twice = ta.write(2, 3.0).write(2, 3.0)  # building it is fine, as in TF1
    with session(engine) as s:
        with pytest.raises(
            InvalidArgumentError,
            match="Could not write to TensorArray index 2 because it has already been written to.",
        ):
            s.run(twice.flow)


def test_concat_of_scalars_or_of_other_ranks_fails():
    # testTensorArrayConcatIncompatibleShapesFails
    scalars = ragged().write(0, 3.0).write(1, 4.0).write(2, [3.0])
    with pytest.raises(
        InvalidArgumentError,
        match="Concat saw a scalar shape at index 0 but requires at least vectors",
    ):
        scalars.concat()
    ranks = ragged().write(0, [3.0]).write(1, [4.0]).write(2, [[3.0]])
    with pytest.raises(InvalidArgumentError, match="shape"):
        ranks.concat()


def test_split_errors():  # testTensorArraySplitIncompatibleShapesFails
    ta = ragged()
    lengths = sl.placeholder(sl.int64)
    with session("interpreted") as s:
        with pytest.raises(
            InvalidArgumentError, match=r"Expected lengths to be a vector, received shape: \[\]"
        ):
            s.run(ta.split([1.0, 2.0, 3.0], lengths).flow, {lengths: 1})
    cases = [
        (
            ta.split([1.0, 2.0, 3.0], [1]),
            r"Expected sum of lengths to be equal to values.shape\[0\], but sum of lengths is 1 "
            r"and value's shape is: \[3\]",
        ),
        (
            ragged(1).split(1.0, [1]),
            r"Expected value to be at least a vector, but received shape: \[\]",
        ),
        (
            ragged(2).split([1.0], [1]),
            r"TensorArray's size is not equal to the size of lengths \(2 vs. 1\), and the "
            "TensorArray is not marked as dynamically resizeable",
        ),
    ]
    with session() as s:
        for split, message in cases:  # built without error: TF1 raises when the split runs
            with pytest.raises(InvalidArgumentError, match=message):
                s.run(split.flow)


def test_read_twice_fails_unless_clear_after_read_is_false(engine):  # testTensorArrayReadTwice
    value = np.array([[1.0, -1.0], [10.0, -10.0]], np.float32)
    once = sl.TensorArray(sl.float32, size=2, tensor_array_name="foo").unstack(value)
    r0 = once.read(0)
    with sl.control_dependencies([r0]):
        again = once.read(0)
    twice = sl.TensorArray(sl.float32, size=2, clear_after_read=False).unstack(value)
    t0 = twice.read(0)
    with sl.control_dependencies([t0]):
        t1 = twice.read(0)
    with session(engine) as s:
        with pytest.raises(
            InvalidArgumentError,
            match=r"Could not read index 0 twice because it was cleared after a previous read "
            r"\(perhaps try setting clear_after_read = false\?\)",
        ):
            s.run(again)
        close(s.run(t1), [1.0, -1.0])
        close(s.run(once.read(1)), [10.0, -10.0])  # another index reads fine


# -- gradient arrays (ta.grad) --------------------------------------------------------------------
def test_gradient_array_write_read():  # testSkipEagerTensorGradArrayWriteRead
    ta = ragged()
    g_ta = ta.grad("grad")
    w = ta.write(0, [[4.0, 5.0]]).write(1, [[1.0]]).write(2, -3.0)
    g = g_ta.write(0, [[5.0, 6.0]]).write(1, [[2.0]]).write(2, -2.0)
    with session() as s:
        got = s.run([w.read(0), w.read(1), w.read(2), g.read(0), g.read(1), g.read(2)])
    for a, b in zip(got, [[[4.0, 5.0]], [[1.0]], -3.0, [[5.0, 6.0]], [[2.0]], -2.0]):
        close(a, b)


def test_gradient_array_of_a_dynamic_array():  # testSkipEagerTensorGradArrayDynamicWriteRead
    ta = sl.TensorArray(sl.float32, size=0, dynamic_size=True, infer_shape=False)
    w = ta.write(0, [[4.0, 5.0]]).write(1, [[1.0]]).write(2, -3.0)
    g_ta = w.grad("grad")
    g = g_ta.write(0, [[5.0, 6.0]]).write(1, [[2.0]]).write(2, -2.0)
    with session() as s:
        got = s.run([w.read(0), w.read(1), w.read(2), g.read(0), g.read(1), g.read(2)])
        assert s.run([w.size(), g_ta.size()]) == [3, 3]
    for a, b in zip(got, [[[4.0, 5.0]], [[1.0]], -3.0, [[5.0, 6.0]], [[2.0]], -2.0]):
        close(a, b)


@pytest.mark.parametrize("dtype", [sl.int32, sl.float32, sl.complex64])
def test_gradient_array_adds_its_writes(
    dtype,
):  # testSkipEagerTensorArrayWriteGradientAddMultipleAdds
    ta = sl.TensorArray(dtype, size=3, tensor_array_name="foo", infer_shape=False)
    ta_grad = ta.grad("grad")
    c = dtype.as_numpy_dtype
    w1 = ta.write(2, c(3.0)).write(2, c(4.0))
    g = ta_grad.write(2, c(3.0)).write(2, c(4.0)).write(2, c(5.0))
    bad = ta_grad.write(1, c(1.0)).write(1, np.array([1.0], c))
    with session() as s:
        np.testing.assert_array_equal(s.run(g.read(2)), c(12.0))
        with pytest.raises(
            InvalidArgumentError,
            match=r"TensorArray foo_.*: Could not write to TensorArray index 2 because it has "
            "already been written to.",
        ):
            s.run(w1.flow)
        with pytest.raises(
            InvalidArgumentError,
            match=r"Could not aggregate to TensorArray index 1 because the existing shape is "
            r"\[\] but the new input shape is \[1\]",
        ):
            s.run(bad.flow)


def test_grad_twice_gives_one_array_whose_writes_later_reads_see(engine):
    # testSkipEagerTensorGradAccessTwiceReceiveSameObject
    ta = sl.TensorArray(sl.float32, tensor_array_name="foo", size=3)
    g_ta_0 = ta.grad("grad")
    g_ta_1 = ta.grad("grad")
    assert g_ta_1.handle is g_ta_0.handle and ta.grad("other").handle is not g_ta_0.handle
    with sl.control_dependencies([g_ta_0.write(0, [[4.0, 5.0]]).flow]):
        r1_0 = g_ta_1.read(0)  # read with the other copy, after the write
    unordered = g_ta_1.write(1, [[1.0, 2.0]]).read(1)  # a write not ordered before: not seen
    with session(engine) as s:
        t0, t1, d_r1_0, d_other = s.run([g_ta_0.handle.op, g_ta_1.handle.op, r1_0, unordered])
    assert t0 is None and t1 is None
    close(d_r1_0, [[4.0, 5.0]])
    close(d_other, [[1.0, 2.0]])


def _grad_with_shape(element_shape):
    from sluice.python.ops import gen_data_flow_ops

    ta = sl.TensorArray(size=3, dtype=sl.float32, element_shape=element_shape)
    handle, flow = gen_data_flow_ops.tensor_array_grad_with_shape(
        handle=ta.handle, flow_in=ta.flow, shape_to_prepend=sl.TensorShape([4, 5]), source="s"
    )
    value = sl.placeholder(sl.float32)
    read = sl.TensorArray(sl.float32, handle=handle, flow=flow).write(0, value).read(0)
    return value, read


def test_grad_with_shape_of_a_known_element_shape(engine):
    # testSkipEagerTensorArrayGradWithShapeKnownElementShape
    value, read = _grad_with_shape(sl.TensorShape([2, 3]))
    assert read.shape.as_list() == [None, None, 2, 3]  # the prepended dims: known when run
    fed = np.random.RandomState(0).random_sample([4, 5, 2, 3])
    with session(engine) as s:
        with pytest.raises(InvalidArgumentError, match="Could not write to TensorArray"):
            s.run(read, feed_dict={value: np.zeros([2, 3])})
        close(s.run(read, feed_dict={value: fed}), fed)


def test_grad_with_shape_of_an_unknown_element_shape(engine):
    # testSkipEagerTensorArrayGradWithShapeUnknownElementShape
    value, read = _grad_with_shape(None)
    assert read.shape.rank is None
    fed = np.random.RandomState(1).random_sample([4, 5, 7])
    with session(engine) as s:
        close(s.run(read, feed_dict={value: fed}), fed)


# -- gradients through sl.gradients ---------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gradients_of_reads_add_up(dtype, engine):  # testSkipEagerTensorArrayGradientWriteRead
    ta = sl.TensorArray(sl.as_dtype(dtype), size=3, tensor_array_name="foo", infer_shape=False)
    value_0 = sl.constant(np.array([[4.0, 5.0]], dtype))
    value_1 = sl.constant(np.array(3.0, dtype))
    w = ta.write(0, value_0).write(1, value_1)
    r0, r1, r0_2 = w.read(0), w.read(1), w.read(0)
    c = lambda x: np.array(x, dtype)  # noqa: E731
    just_r0 = sl.gradients([r0], [value_0], [c([[2.0, 3.0]])])
    both_r0 = sl.gradients([r0, r0_2], [value_0], [c([[2.0, 3.0]]), c([[1.0, -1.0]])])
    just_r1 = sl.gradients([r1], [value_1], [c(-2.0)])
    combined = sl.gradients(
        [r0, r0_2, r1], [value_0, value_1], [c([[2.0, 3.0]]), c([[1.0, -1.0]]), c(-2.0)]
    )
    with session(engine) as s:
        close(s.run(just_r0)[0], [[2.0, 3.0]])
        close(s.run(both_r0)[0], [[3.0, 2.0]])
        close(s.run(just_r1)[0], -2.0)
        got = s.run(combined)
    assert len(got) == 2
    close(got[0], [[3.0, 2.0]])
    close(got[1], -2.0)


def test_gradients_of_stack_concat_and_read_add_up(engine):
    # testSkipEagerTensorArrayGradientWritePackConcatAndRead
    ta = sl.TensorArray(sl.float32, size=2, tensor_array_name="foo", clear_after_read=False)
    value_0, value_1 = sl.constant([-1.0, 1.0]), sl.constant([-10.0, 10.0])
    w = ta.write(0, value_0).write(1, value_1)
    p0, r0, s0 = w.stack(), w.read(0), w.concat()
    grads = sl.gradients(
        [p0, r0, s0],
        [value_0, value_1],
        [[[2.0, 3.0], [4.0, 5.0]], [-0.5, 1.5], [20.0, 30.0, 40.0, 50.0]],
    )
    with session(engine) as s:
        g0, g1 = s.run(grads)
    close(g0, [2.0 - 0.5 + 20.0, 3.0 + 1.5 + 30.0])
    close(g1, [4.0 + 40.0, 5.0 + 50.0])


def test_gradient_of_unstack_with_two_reads_of_one_index(engine):
    # testSkipEagerTensorArrayGradientUnpackRead
    ta = sl.TensorArray(sl.float32, size=2, clear_after_read=False)
    value = sl.constant([[1.0, -1.0], [10.0, -10.0]])
    w = ta.unstack(value)
    grads = sl.gradients(
        [w.read(0), w.read(0), w.read(1)], [value], [[2.0, 3.0], [-1.5, 1.5], [4.0, 5.0]]
    )
    with session(engine) as s:
        (g,) = s.run(grads)
    close(g, [[2.0 - 1.5, 3.0 + 1.5], [4.0, 5.0]])


def test_gradient_of_unequal_split_then_concat(
    engine,
):  # testSkipEagerTensorArrayGradientSplitConcat
    ta = ragged(2)
    value = sl.constant([[1.0, -1.0], [10.0, -10.0], [100.0, -100.0]])
    r = ta.split(value, [2, 1]).concat()
    dy = [[2.0, -2.0], [20.0, -20.0], [200.0, -200.0]]
    (grad,) = sl.gradients([r], [value], [dy])
    with session(engine) as s:
        got_r, got_g = s.run([r, grad])
    close(got_r, [[1.0, -1.0], [10.0, -10.0], [100.0, -100.0]])
    close(got_g, dy)


def test_gradient_of_a_dynamic_unstack(engine):  # testSkipEagerTensorArrayGradientDynamicUnpackRead
    ta = sl.TensorArray(sl.float32, size=0, dynamic_size=True)
    value = sl.constant([[1.0, -1.0], [10.0, -10.0]])
    w = ta.unstack(value)
    grads = sl.gradients([w.read(0), w.read(1)], [value], [[2.0, 3.0], [4.0, 5.0]])
    with session(engine) as s:
        close(s.run(grads)[0], [[2.0, 3.0], [4.0, 5.0]])


def _while_loop_write_stack(dynamic_size):
    v0 = sl.identity(np.arange(15, dtype=np.float32).reshape(3, 5))
    state0 = sl.identity(np.ones(5, np.float32))
    var = sl.Variable(np.arange(100, 105, dtype=np.float32), name="var")
    ta = sl.TensorArray(sl.float32, size=0 if dynamic_size else 3, dynamic_size=dynamic_size)

    def body(time, ta_t, state):
        sliced = sl.gather(v0, time)  # TF1 slices the row
        out = sliced + var + state
        return time + 1, ta_t.write(time, out), state + sliced

    _, h_final, _ = sl.while_loop(
        lambda time, *_: time < 3,
        body,
        (sl.identity(0), ta, state0),
        shape_invariants=(sl.TensorShape([]), sl.TensorShape(None), sl.TensorShape(None)),
        parallel_iterations=3,
    )
    vout = h_final.stack()
    dy = -np.arange(15, dtype=np.float32).reshape(3, 5)
    grads = [sl.gradients([vout], [x], [dy])[0] for x in (v0, state0, var)]
    return (v0, state0, var, vout), grads, dy


@pytest.mark.parametrize("dynamic_size", [False, True])
def test_while_loop_write_stack_gradients(dynamic_size, engine):
    # testWhileLoopWritePackGradients, testSkipEagerWhileLoopDynamicWritePackGradients
    (v0, state0, var, vout), grads, dy = _while_loop_write_stack(dynamic_size)
    with session(engine) as s:
        s.run(sl.global_variables_initializer())
        v0_t, state0_t, var_t, vout_t, g_v0, g_state0, g_var = s.run(
            [v0, state0, var, vout] + grads
        )
    states = np.array([state0_t, state0_t + v0_t[0], state0_t + v0_t[0] + v0_t[1]])
    close(vout_t, v0_t + var_t + states)
    close(g_v0, np.array([dy[0] + dy[1] + dy[2], dy[1] + dy[2], dy[2]]))
    close(g_var, dy.sum(axis=0))
    close(g_state0, dy.sum(axis=0))


@pytest.mark.parametrize("engine", ["interpreted", "auto"])
def test_gradient_through_two_loops_in_series(engine):  # testGradSerialTwoLoops
    # The second loop counts from the first one's end to 100 with no maximum_iterations: the
    # compiled engine cannot size its gradient stacks, so "auto" runs the graph interpreted.
    x = sl.constant(2.0, name="x")
    acc = sl.TensorArray(sl.float32, size=100, clear_after_read=False, element_shape=[])

    def first(i, acc):
        x1 = sl.cond(sl.equal(i, 0), lambda: x, lambda: acc.read(i - 1) * 2.0)
        return i + 1, acc.write(i, x1)

    i1, acc1 = sl.while_loop(lambda i, acc: i < 5, first, [sl.constant(0), acc])
    zero = sl.constant(0.0)
    _, acc2 = sl.while_loop(
        lambda i, acc: i < 100, lambda i, acc: (i + 1, acc.write(i, zero)), [i1, acc1]
    )
    (grad,) = sl.gradients(acc2.stack(), [x])
    with session(engine) as s:
        close(s.run(grad), 31.0)


def test_shape_after_a_while_loop():  # testShapeAfterWhileLoop
    ta = sl.TensorArray(sl.float32, size=10)
    _, ta = sl.while_loop(
        lambda i, _: i < 10,
        lambda i, ta: (i + 1, ta.write(i, [[0.0]])),
        [0, ta],
        parallel_iterations=1,
    )
    assert ta.element_shape.dims is not None


def test_gradients_of_two_reads_each_alone_and_together():
    # testSkipEagerSumOfTwoReadVariablesWithoutRepeatGrad
    a = sl.identity(np.arange(15, dtype=np.float32).reshape(3, 5) + 1)
    b = sl.identity(np.arange(15, dtype=np.float32).reshape(3, 5) + 16)
    ta = sl.TensorArray(sl.float32, size=2).write(0, a, name="write_a").write(1, b, name="write_b")
    c = ta.read(0, name="read_a_0") + ta.read(1, name="read_b_0")
    g0 = -(np.arange(15, dtype=np.float32).reshape(3, 5) + 1)
    grad_a = sl.gradients([c], [a], [g0])[0]
    grad_b = sl.gradients([c], [b], [g0])[0]
    with session() as s:
        close(s.run(grad_a), g0)
        close(s.run(grad_b), g0)
        ga, gb = s.run([grad_a, grad_b])
    close(ga, g0)
    close(gb, g0)


def test_gradient_when_not_all_elements_are_read(engine):
    # testSkipEagerGradientWhenNotAllComponentsRead, testSkipEagerWriteButNotAllComponentsReadGrad
    x = sl.constant([2.0, 3.0])
    r0 = sl.TensorArray(sl.float32, size=2).unstack(x).read(0)
    x0, x1 = sl.constant(5.0), sl.constant(10.0)
    q0 = sl.TensorArray(sl.float32, size=2).write(0, x0).write(1, x1).read(0)
    with session(engine) as s:
        close(s.run(sl.gradients([r0], [x], [1.0])[0]), [1.0, 0.0])
        close(s.run(sl.gradients([q0], [x0, x1], [1.0])), [1.0, 0.0])


def test_dynamic_unstack_and_split_then_write_past_the_end(engine):
    # testSkipEagerTensorArrayUnpackDynamic, testSkipEagerTensorArraySplitDynamic
    x = sl.constant([1.0, 2.0, 3.0])
    r = sl.TensorArray(sl.float32, size=3, dynamic_size=True).unstack(x).write(3, 4.0).stack()
    c = sl.TensorArray(sl.float32, size=3, dynamic_size=True).split(x, [1, 1, 1]).write(3, [4.0])
    c = c.concat()
    with session(engine) as s:
        close(s.run(r), [1.0, 2.0, 3.0, 4.0])
        close(s.run(sl.gradients([r], [x])[0]), [1.0, 1.0, 1.0])
        close(s.run(c), [1.0, 2.0, 3.0, 4.0])
        close(s.run(sl.gradients([c], [x])[0]), [1.0, 1.0, 1.0])


def test_scatter_reads_and_gradients(engine):
    # testSkipEagerTensorArrayScatterReadAndGradients, ...ScatterPartialReadAndGradients
    value = sl.constant([[1.0, -1.0], [10.0, -10.0]])
    w = sl.TensorArray(sl.float32, size=0, dynamic_size=True).scatter(sl.constant([1, 8]), value)
    r0, r1 = w.read(1), w.read(8)
    grad = sl.gradients([r0, r1], [value], [[2.0, 3.0], [4.0, 5.0]])
    w2 = sl.TensorArray(sl.float32, size=0, dynamic_size=True).scatter(sl.constant([1, 8]), value)
    q0 = w2.read(1)
    partial = sl.gradients([q0], [value], [[2.0, 3.0]])[0]
    with session(engine) as s:
        reads, g = s.run([[r0, r1], grad])
        q, pg = s.run([q0, partial])
    close(reads, [[1.0, -1.0], [10.0, -10.0]])
    close(g[0], [[2.0, 3.0], [4.0, 5.0]])
    close(q, [1.0, -1.0])
    close(pg, [[2.0, 3.0], [0.0, 0.0]])


def test_scatter_into_an_existing_array():  # testScatterIntoExistingList
    ta = sl.TensorArray(sl.float32, size=5, tensor_array_name="foo")
    ta = ta.scatter(indices=[3, 4], value=sl.ones([2]))
    with session() as s:
        close(s.run(ta.stack()), [0.0, 0.0, 0.0, 1.0, 1.0])
        ta = ta.scatter(indices=[1], value=sl.ones([1]))
        close(s.run(ta.stack()), [0.0, 1.0, 0.0, 1.0, 1.0])
        ta = ta.scatter(indices=[0, 2], value=[5.0, 6.0])
        close(s.run(ta.stack()), [5.0, 1.0, 6.0, 1.0, 1.0])


def test_gather_and_its_gradient(engine):  # testTensorArrayWriteGatherAndGradients
    values = sl.constant([[1.0 * x, -1.0 * x] for x in range(10)])
    g = (
        sl.TensorArray(sl.float32, size=0, dynamic_size=True)
        .unstack(values)
        .gather(sl.constant([1, 8]))
    )
    grad = sl.gradients([g], [values], [[[2.0, 3.0], [4.0, 5.0]]])
    expected = np.zeros((10, 2))
    expected[1], expected[8] = [2.0, 3.0], [4.0, 5.0]
    with session(engine) as s:
        got, gv = s.run([g, grad])
    close(got, [[1.0, -1.0], [8.0, -8.0]])
    close(gv[0], expected)


# -- static shapes --------------------------------------------------------------------------------
def test_write_shape():  # testSkipEagerWriteShape
    ta = sl.TensorArray(sl.float32, size=3, tensor_array_name="foo")
    c0 = sl.constant([4.0, 5.0])
    w0 = ta.write(0, c0)
    assert w0.read(0).shape == c0.shape
    c1 = sl.constant([6.0, 7.0])
    w1 = w0.write(1, c1)
    assert w1.read(0).shape == c0.shape and w1.read(1).shape == c1.shape
    with pytest.raises(ValueError):
        w0.write(0, sl.constant([4.0, 5.0, 6.0]))


def test_partly_unknown_shapes_merge():  # testSkipEagerPartlyUnknownShape
    ta = sl.TensorArray(sl.float32, size=6, tensor_array_name="foo")
    w0 = ta.write(0, sl.placeholder(sl.float32, [None, None, None, 3]))
    assert w0.read(0).shape.as_list() == [None, None, None, 3]
    w1 = w0.write(1, sl.placeholder(sl.float32, [None, None, None, 3]))
    assert w1.read(0).shape.as_list() == [None, None, None, 3]
    w2 = w1.write(2, sl.placeholder(sl.float32, [None, None, None, None]))
    assert w2.read(0).shape.as_list() == [None, None, None, 3]
    w3 = w2.write(3, sl.placeholder(sl.float32, [None, None, 2, None]))
    assert w3.read(0).shape.as_list() == [None, None, 2, 3]
    w4 = w3.scatter([4, 5], sl.placeholder(sl.float32, [2, None, 4, 2, 3]))
    assert w4.read(0).shape.as_list() == [None, 4, 2, 3]
    w5 = w4.split(sl.placeholder(sl.float32, [10, 4, 2, 3]), sl.constant([5, 5]))
    assert w5.read(0).shape.as_list() == [5, 4, 2, 3]


def test_unstack_shape_and_a_read_after_clearing():  # testUnpackShape
    ta = sl.TensorArray(
        sl.float32, size=0, dynamic_size=True, infer_shape=True, tensor_array_name="foo"
    )
    w0 = ta.unstack(sl.constant([[1.0, -1.0], [10.0, -10.0], [100.0, -100.0]]))
    r0 = w0.read(0)
    assert r0.shape.as_list() == [2]
    c1 = sl.constant([4.0, 5.0])
    w1 = w0.write(3, c1)
    with sl.control_dependencies([r0]):
        again = w1.read(0)
    with session("interpreted") as s:
        with pytest.raises(InvalidArgumentError, match="Could not read index 0 twice"):
            s.run(again)
    assert w1.read(1).shape == c1.shape
    with pytest.raises(ValueError):
        w1.write(4, sl.constant([4.0, 5.0, 6.0]))


def test_split_shape():  # testSplitShape
    value = sl.constant([[1.0, -1.0], [2.0, -2.0], [3.0, -3.0]])
    ta = sl.TensorArray(sl.float32, size=0, dynamic_size=True, infer_shape=True)
    assert ta.split(value, [1, 1, 1]).read(0).shape.as_list() == [1, 2]
    ta1 = sl.TensorArray(sl.float32, size=0, dynamic_size=True, infer_shape=True)
    w = ta1.split(value, [1, 2])
    assert w.read(0).shape.rank is None
    assert sl.TensorShape(ta1.handle.op.get_attr("element_shape")).rank is None
    with session() as s:
        close(s.run(w.read(1)), [[2.0, -2.0], [3.0, -3.0]])


def test_write_of_an_unknown_shape():  # testSkipEagerWriteUnknownShape
    ta = sl.TensorArray(sl.float32, size=3, infer_shape=True)
    assert ta.write(0, sl.placeholder(sl.float32)).read(0).shape.rank is None


def test_stacking_an_empty_array():
    # testSkipEagerTensorArrayEvalEmpty, testSkipEagerTensorArrayEvalEmptyWithDefault
    unknown = sl.TensorArray(sl.float32, size=0, dynamic_size=False, infer_shape=False)
    with session("interpreted") as s:
        with pytest.raises(
            InvalidArgumentError,
            match="TensorArray has size zero, but element shape <unknown> is not fully defined",
        ):
            s.run(unknown.stack())
    ta = sl.TensorArray(sl.float32, size=0, dynamic_size=False, infer_shape=True)
    with session() as s:
        assert s.run(ta.size()) == 0
        ta.unstack(sl.zeros([0, 3, 5])).mark_used()  # tells the element shape
        assert s.run(ta.stack()).shape == (0, 3, 5)
        assert s.run(ta.concat()).shape == (0, 5)


def test_identity_keeps_the_array_and_runs_control_inputs():  # testTensorArrayIdentity
    ta0 = sl.TensorArray(sl.float32, size=2, infer_shape=False).write(0, 0.0)
    ta1 = sl.TensorArray(sl.int32, size=4, infer_shape=True).write(0, 1)
    v0 = sl.Variable(0.0, name="v0")
    v1 = sl.Variable(0.0, name="v1")
    with sl.control_dependencies([v0.assign_add(1)]):
        ta0 = ta0.identity()
    with sl.control_dependencies([v1.assign_add(1)]):
        ta1 = ta1.identity()
    read0, read1 = ta0.read(0), ta1.read(0)
    assert ta0.dtype == sl.float32 and ta1.dtype == sl.int32
    assert read0.shape.rank is None  # infer_shape=False: the element shape given (none)
    assert read1.shape == sl.TensorShape([])
    with session() as s:
        s.run(sl.global_variables_initializer())
        r0, r1, s0, s1 = s.run([read0, read1, ta0.size(), ta1.size()])
        assert s.run(v0) == 1 and s.run(v1) == 1
    assert (r0, r1, s0, s1) == (0, 1, 2, 4)


def test_gradient_of_a_stack_with_grad_ys_from_outside():
    # testSkipEagerTensorArrayGradYsInCorrectScope
    x = sl.constant([[1.42]])
    dy = sl.constant([[2.42]])
    ta = sl.TensorArray(sl.float32, size=1, element_shape=[1]).write(0, x[0])
    (dx,) = sl.gradients([ta.stack()], [x], [dy])
    with session() as s:
        vdx, vdy = s.run([dx, dy])
    close(vdx, vdy)


def test_infer_shape_false_with_a_partial_element_shape(engine):
    # testInferShapeFalseValid, testInferShapeFalseInvalid, testInferShapeTrue
    ta = sl.TensorArray(sl.float32, size=3, infer_shape=False, element_shape=[None, 10, 20])
    ta = ta.write(0, sl.ones([50, 10, 20])).write(1, sl.ones([50, 10, 20]))
    out = ta.write(2, sl.ones([1, 10, 20])).concat()
    with session(engine) as s:
        close(s.run(out), np.ones([101, 10, 20]))
    bad = sl.TensorArray(sl.float32, size=2, infer_shape=False, element_shape=[None, 10, 20])
    bad = bad.write(0, sl.ones([50, 10, 20]))
    with pytest.raises(ValueError):
        bad.write(1, sl.ones([1, 20, 20]))
    inferred = sl.TensorArray(sl.float32, size=3, infer_shape=True, element_shape=[None, 10, 20])
    assert inferred.element_shape.as_list() == [None, 10, 20]
    inferred = inferred.write(0, sl.ones([50, 10, 20]))
    assert inferred.element_shape.as_list() == [50, 10, 20]
    inferred = inferred.write(1, sl.ones([50, 10, 20]))
    with pytest.raises(ValueError):
        inferred.write(2, sl.ones([1, 10, 20]))


@pytest.mark.parametrize(
    "name, source",
    [
        ("gradients", "gradients:0"),
        ("gradients_0", "gradients_0:0"),
        ("gradients/foo", "gradients"),
        ("gradients_0/foo/bar", "gradients_0"),
        ("foo/gradients", "foo/gradients:0"),
        ("foo/bar/gradients_0/baz", "foo/bar/gradients_0"),
        ("foo/gradients/bar/gradients_0/baz", "foo/gradients/bar/gradients_0"),
    ],
)
def test_grad_source_is_the_innermost_gradients_scope(name, source):
    # testSkipEagerGetGradSource_NoEnclosingScope, _EnclosingScope, _NestedUsesInnermost
    from sluice.python.ops import tensor_array_grad

    assert tensor_array_grad._GetGradSource(sl.constant(0, name=name)) == source


@pytest.mark.parametrize("name", ["", "foo", "foo/bar"])
def test_grad_source_needs_a_gradients_scope(name):  # testSkipEagerGetGradSource_Invalid
    from sluice.python.ops import tensor_array_grad

    with pytest.raises(ValueError):
        tensor_array_grad._GetGradSource(sl.constant(0, name=name))


# -- where sluice draws the line: a list cannot cross a loop ---------------------------------------
def test_a_list_kept_array_cannot_be_a_loop_variable():
    w = ragged().write(0, [1.0]).write(1, [1.0, 2.0])
    with pytest.raises(ValueError, match="different shapes"):
        sl.while_loop(lambda i, t: i < 2, lambda i, t: (i + 1, t), (0, w))


def test_a_write_of_another_shape_at_a_run_time_index_names_the_array():
    ta = sl.TensorArray(sl.float32, size=3, infer_shape=False, tensor_array_name="bar")

    def body(i, t):
        return i + 1, t.write(i, sl.ones([2])).write(i + 1, sl.ones([3]))

    with pytest.raises(ValueError, match="TensorArray bar: a write at index"):
        sl.while_loop(lambda i, t: i < 1, body, (0, ta))
