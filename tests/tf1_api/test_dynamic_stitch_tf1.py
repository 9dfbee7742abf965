"""TF1's `dynamic_stitch_op_test.py` (DynamicStitch and ParallelDynamicStitch), names forwarded
from `tf.` to `sl.`, in both engines (constant indices: the compiled engine reads them before the
step), plus indices only known when the step runs."""

import numpy as np
import pytest

import sluice as sl

ENGINES = ["compiled", "interpreted"]
STITCH = [sl.dynamic_stitch, sl.parallel_dynamic_stitch]


@pytest.fixture(params=ENGINES)
def sess(request):
    with sl.Session(config=sl.SessionConfig(engine=request.param)) as session:
        yield session


@pytest.mark.parametrize("stitch", STITCH)
def test_scalar(sess, stitch):
    indices = [sl.constant(0), sl.constant(1)]
    data = [sl.constant(40), sl.constant(60)]
    stitched_t = stitch(indices, data)
    assert stitched_t.get_shape().as_list() == [2]
    assert sess.run(stitched_t).tolist() == [40, 60]


@pytest.mark.parametrize("stitch", STITCH)
def test_shape_inference_for_scalar_with_non_constant_indices(stitch):
    indices = [sl.placeholder(sl.int32, shape=[]), sl.constant(1)]
    data = [sl.constant(40), sl.constant(60)]
    stitched_t = stitch(indices, data)
    # Dimension 0 is max(flatten(indices))+1, but the first indices input is not a constant
    assert stitched_t.get_shape().as_list() == [None]


@pytest.mark.parametrize("stitch", STITCH)
def test_simple_one_dimensional(sess, stitch):
    indices = [sl.constant([0, 4, 7]), sl.constant([1, 6, 2, 3, 5])]
    data = [sl.constant([0, 40, 70]), sl.constant([10, 60, 20, 30, 50])]
    stitched_t = stitch(indices, data)
    assert sess.run(stitched_t).tolist() == [0, 10, 20, 30, 40, 50, 60, 70]
    assert stitched_t.get_shape().as_list() == [8]


@pytest.mark.parametrize("stitch", STITCH)
def test_one_list_one_dimensional(sess, stitch):
    indices = [sl.constant([1, 6, 2, 3, 5, 0, 4, 7])]
    data = [sl.constant([10, 60, 20, 30, 50, 0, 40, 70])]
    stitched_t = stitch(indices, data)
    assert sess.run(stitched_t).tolist() == [0, 10, 20, 30, 40, 50, 60, 70]
    assert stitched_t.get_shape().as_list() == [8]


@pytest.mark.parametrize("stitch", STITCH)
def test_simple_two_dimensional(sess, stitch):
    indices = [sl.constant([0, 4, 7]), sl.constant([1, 6]), sl.constant([2, 3, 5])]
    data = [
        sl.constant([[0, 1], [40, 41], [70, 71]]),
        sl.constant([[10, 11], [60, 61]]),
        sl.constant([[20, 21], [30, 31], [50, 51]]),
    ]
    stitched_t = stitch(indices, data)
    expected = [[0, 1], [10, 11], [20, 21], [30, 31], [40, 41], [50, 51], [60, 61], [70, 71]]
    assert sess.run(stitched_t).tolist() == expected
    assert stitched_t.get_shape().as_list() == [8, 2]


@pytest.mark.parametrize("stitch", STITCH)
def test_zero_size_tensor(sess, stitch):
    indices = [
        sl.constant([0, 4, 7]),
        sl.constant([1, 6]),
        sl.constant([2, 3, 5]),
        sl.zeros([0], dtype=sl.int32),
    ]
    data = [
        sl.constant([[0, 1], [40, 41], [70, 71]]),
        sl.constant([[10, 11], [60, 61]]),
        sl.constant([[20, 21], [30, 31], [50, 51]]),
        sl.zeros([0, 2], dtype=sl.int32),
    ]
    stitched_t = stitch(indices, data)
    expected = [[0, 1], [10, 11], [20, 21], [30, 31], [40, 41], [50, 51], [60, 61], [70, 71]]
    assert sess.run(stitched_t).tolist() == expected
    assert stitched_t.get_shape().as_list() == [8, 2]


@pytest.mark.parametrize("stitch", STITCH)
def test_higher_rank_and_gradient(sess, stitch):
    indices = [sl.constant(6), sl.constant([4, 1]), sl.constant([[5, 2], [0, 3]])]
    data = [
        sl.constant([61.0, 62.0]),
        sl.constant([[41.0, 42.0], [11.0, 12.0]]),
        sl.constant([[[51.0, 52.0], [21.0, 22.0]], [[1.0, 2.0], [31.0, 32.0]]]),
    ]
    stitched_t = stitch(indices, data)
    stitched_val = sess.run(stitched_t)
    correct = 10.0 * np.arange(7)[:, None] + [1.0, 2.0]
    np.testing.assert_allclose(stitched_val, correct, rtol=1e-6)
    assert stitched_t.get_shape().as_list() == [7, 2]
    # Test gradients
    stitched_grad = 7.0 * stitched_val
    grads = sl.gradients(stitched_t, indices + data, stitched_grad)
    assert grads[:3] == [None] * 3  # Indices have no gradients
    for datum, grad in zip(data, sess.run(grads[3:])):
        np.testing.assert_allclose(7.0 * sess.run(datum), grad, rtol=1e-6)


@pytest.mark.parametrize("stitch", STITCH)
def test_errors(stitch):
    # indices multi-dimensional where the data is not
    with pytest.raises(ValueError):
        stitch(
            [sl.constant([0, 4, 7]), sl.constant([[1, 6, 2, 3, 5]])],
            [sl.constant([0, 40, 70]), sl.constant([10, 60, 20, 30, 50])],
        )
    # data num dims mismatch
    with pytest.raises(ValueError):
        stitch(
            [sl.constant([0, 4, 7]), sl.constant([1, 6, 2, 3, 5])],
            [sl.constant([0, 40, 70]), sl.constant([[10, 60, 20, 30, 50]])],
        )
    # data dim size mismatch
    with pytest.raises(ValueError):
        stitch(
            [sl.constant([0, 4, 5]), sl.constant([1, 6, 2, 3])],
            [sl.constant([[0], [40], [70]]), sl.constant([[10, 11], [60, 61], [20, 21], [30, 31]])],
        )
    # data and indices size mismatch
    with pytest.raises(ValueError):
        stitch(
            [sl.constant([0]), sl.constant([1, 6, 2, 3, 5])],
            [sl.constant([0, 40, 70]), sl.constant([10, 60, 20, 30, 50])],
        )
    with pytest.raises(TypeError):
        stitch([sl.constant([0.5])], [sl.constant([1.0])])


def test_duplicates_keep_the_later_slice(sess):
    stitched = sl.dynamic_stitch([[0, 1], [1]], [[1.0, 2.0], [3.0]])
    assert sess.run(stitched).tolist() == [1.0, 3.0]


def test_indices_known_when_the_step_runs():
    # the mixture-of-experts idiom: partition rows by a fed index, transform, stitch back
    p = sl.placeholder(sl.int32, [None])
    x = sl.constant([[1.0], [2.0], [3.0], [4.0]])
    merged = sl.dynamic_stitch([p, [0, 2]], [sl.gather(x, [1, 3]) * 10.0, sl.gather(x, [0, 2])])
    grad = sl.convert_to_tensor(sl.gradients(sl.reduce_sum(merged), x)[0])  # IndexedSlices
    with sl.Session(config=sl.SessionConfig(engine="interpreted")) as sess:
        out, g = sess.run([merged, grad], {p: [1, 3]})
    np.testing.assert_allclose(out, [[1.0], [20.0], [3.0], [40.0]], rtol=1e-6)
    np.testing.assert_allclose(g, [[1.0], [10.0], [1.0], [10.0]], rtol=1e-6)
    with sl.Session(config=sl.SessionConfig(engine="compiled")) as sess:
        with pytest.raises(sl.errors.UnimplementedError, match="DynamicStitch"):
            sess.run(merged, {p: [1, 3]})
