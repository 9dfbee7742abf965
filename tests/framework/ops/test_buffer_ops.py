"""WriteRow / ReadRow: values, shape errors, and gradients against central differences."""

import numpy as np
import pytest

import sluice as sl
from sluice.framework.ops.state import buffer_ops
from sluice.testing import check_gradients

RNG = np.random.default_rng(0)


def test_values_in_both_engines():
    buf = sl.constant(np.zeros([4, 2], np.float32))
    i = sl.placeholder(sl.int32, [])
    written = buffer_ops.write_row(buf, i, [1.0, 2.0])
    row = buffer_ops.read_row(written, i)
    for engine in ("interpreted", "compiled"):
        with sl.Session(config=sl.SessionConfig(engine=engine)) as s:
            w, r = s.run([written, row], {i: 2})
        np.testing.assert_array_equal(w[2], [1.0, 2.0])
        np.testing.assert_array_equal(r, [1.0, 2.0])
        assert w.sum() == 3.0


def test_shape_and_dtype_errors_at_construction():
    buf = sl.constant(np.zeros([4, 2], np.float32))
    with pytest.raises(ValueError, match="row"):
        buffer_ops.write_row(buf, 0, np.zeros([3], np.float32))
    with pytest.raises(TypeError, match="int32"):
        buffer_ops.read_row(buf, sl.constant(1.0))


def test_write_row_gradient():
    check_gradients(
        lambda b, v: buffer_ops.write_row(b, 1, v) * 2.0,
        [RNG.normal(size=[3, 2]), RNG.normal(size=[2])],
    )


def test_read_row_gradient():
    check_gradients(lambda b: buffer_ops.read_row(b, 2) ** 2, [RNG.normal(size=[4, 3])])


def test_write_once_rows_in_a_loop_match_the_general_gradient_for_values():
    def build(write_once):
        def f(xs):
            def body(t, buf):
                return t + 1, buffer_ops.write_row(
                    buf, t, sl.tanh(buffer_ops.read_row(xs, t)), write_once=write_once
                )

            zeros = sl.zeros([4, 3], sl.float64)
            _, buf = sl.while_loop(
                lambda t, b: t < 4, body, (sl.constant(0), zeros), maximum_iterations=4
            )
            return buf * buf

        return f

    xs = RNG.normal(size=[4, 3])
    check_gradients(build(False), [xs])
    check_gradients(build(True), [xs])
