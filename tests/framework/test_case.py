"""`sl.case`, as TF1's control_flow_ops tests check it: the first true predicate wins, the
default when none is, `exclusive=True` rejects two true predicates, `default=None` makes the
last pair the default, and gradients flow through the chosen branch only, in both engines."""

import numpy as np
import pytest

import sluice as sl

ENGINES = ["compiled", "interpreted"]


def session(engine):
    return sl.Session(config=sl.SessionConfig(engine=engine))


@pytest.fixture(scope="module")
def piecewise():
    """y = case(x < 0: -x^2, x < 2: 3x, default: x^3) and dy/dx, in their own graph."""
    g = sl.Graph()
    with g.as_default():
        x = sl.placeholder(sl.float64, [], name="x")
        y = sl.case(
            [(x < 0.0, lambda: -x * x), (x < 2.0, lambda: 3.0 * x)], default=lambda: x * x * x
        )
        (dy,) = sl.gradients(y, [x])
    return g, x, y, dy


@pytest.mark.parametrize("engine", ENGINES)
def test_first_true_predicate_wins_and_its_gradient_flows(engine, piecewise):
    g, x, y, dy = piecewise
    with g.as_default(), session(engine) as s:
        # x = -1 makes both predicates true: the first one wins (exclusive=False)
        for value, want, want_grad in [(-1.0, -1.0, 2.0), (1.5, 4.5, 3.0), (3.0, 27.0, 27.0)]:
            got, grad = s.run([y, dy], {x: value})
            np.testing.assert_allclose(got, want, rtol=1e-6)
            np.testing.assert_allclose(grad, want_grad, rtol=1e-6)


@pytest.mark.parametrize("engine", ENGINES)
def test_exclusive_rejects_two_true_predicates(engine):
    x = sl.placeholder(sl.int32, [])
    y = sl.case(
        {sl.equal(x, 1): lambda: sl.constant(10), x < 3: lambda: sl.constant(20)},
        default=lambda: sl.constant(0),
        exclusive=True,
    )
    with session(engine) as s:
        assert s.run(y, {x: 2}) == 20
        assert s.run(y, {x: 5}) == 0
        with pytest.raises(sl.errors.InvalidArgumentError) as info:
            s.run(y, {x: 1})
    assert info.value.message.startswith(
        "assertion failed: [Input error: exclusive=True: more than 1 conditions (Equal:0, "
    )
    assert info.value.message.endswith("evaluated as True:] [1 1]")


@pytest.mark.parametrize("engine", ENGINES)
def test_without_default_the_last_pair_is_the_default(engine):
    x = sl.placeholder(sl.float32, [])
    y, z = sl.case([(x > 1.0, lambda: (x + 1.0, x)), (x <= 1.0, lambda: (x - 1.0, -x))])
    with session(engine) as s:
        assert s.run([y, z], {x: 2.0}) == [3.0, 2.0]
        assert s.run([y, z], {x: 0.0}) == [-1.0, -0.0]
    never = sl.case([(x > 1.0, lambda: x + 1.0), (x > 5.0, lambda: x * 10.0)])
    with session("interpreted") as s:
        with pytest.raises(sl.errors.InvalidArgumentError) as info:
            s.run(never, {x: 0.0})
    assert info.value.message == (
        "assertion failed: [Input error: None of conditions evaluated as True:] [0 0]"
    )


def test_case_rejects_bad_arguments():
    x = sl.placeholder(sl.float32, [])
    with pytest.raises(TypeError, match="must be a list or dict"):
        sl.case(x > 0.0)
    with pytest.raises(TypeError, match="must be a 2-tuple"):
        sl.case([(x > 0.0, lambda: x, 1)])
    with pytest.raises(TypeError, match="pred 0 must be a Tensor of type bool"):
        sl.case([(x, lambda: x)], default=lambda: x)
    with pytest.raises(TypeError, match="must be callable"):
        sl.case([(x > 0.0, x)], default=lambda: x)
    with pytest.raises(ValueError, match="empty and there is no default"):
        sl.case([])
    assert sl.case([], default=lambda: x) is x
