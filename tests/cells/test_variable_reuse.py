"""`variable_scope(reuse=...)`, `scope.reuse_variables()` and `get_variable` sharing, as TF1."""

import numpy as np
import pytest

import sluice as sl


def test_reuse_true_returns_the_existing_variable():
    with sl.variable_scope("layer"):
        v = sl.get_variable("w", [2, 3])
    with sl.variable_scope("layer", reuse=True):
        assert sl.get_variable("w", [2, 3]) is v
        assert sl.get_variable("w") is v  # no shape needed to reuse


def test_reuse_is_inherited_by_inner_scopes():
    with sl.variable_scope("outer"):
        with sl.variable_scope("inner"):
            v = sl.get_variable("w", [4])
    with sl.variable_scope("outer", reuse=True):
        with sl.variable_scope("inner", reuse=False):  # False cannot undo an outer reuse
            assert sl.get_variable("w", [4]) is v


def test_reuse_variables_in_the_block_and_not_after_it():
    with sl.variable_scope(sl.get_variable_scope()):
        v = sl.get_variable("w", [3])
        sl.get_variable_scope().reuse_variables()
        assert sl.get_variable("w", [3]) is v
    assert not sl.get_variable_scope().reuse  # re-entering a scope object enters a copy
    with pytest.raises(ValueError, match="already exists"):
        sl.get_variable("w", [3])


def test_auto_reuse_creates_then_reuses():
    for _ in range(2):
        with sl.variable_scope("shared", reuse=sl.AUTO_REUSE):
            v = sl.get_variable("w", [2], initializer=sl.zeros_initializer())
    assert [x.name for x in sl.global_variables()] == ["shared/w:0"]
    assert v.name == "shared/w:0"


@pytest.mark.parametrize(
    "reuse, shape, message",
    [
        (True, [2], "does not exist"),
        (None, [2], "already exists"),
        (True, [3], "specified shape"),
    ],
)
def test_sharing_errors_say_what_is_wrong(reuse, shape, message):
    with sl.variable_scope("s"):
        sl.get_variable("w", [2])
        with sl.variable_scope("t"):
            pass
    scope = "t" if message == "does not exist" else "s"
    with pytest.raises(ValueError, match=message):
        with sl.variable_scope(scope, reuse=reuse):
            sl.get_variable("w", shape)


def test_a_reused_variable_is_the_same_state():
    with sl.variable_scope("m"):
        v = sl.get_variable("w", [2], initializer=sl.constant_initializer(1.5))
    with sl.variable_scope("m", reuse=True):
        inc = sl.get_variable("w").assign_add([1.0, 2.0])
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        sess.run(inc)
        np.testing.assert_allclose(sess.run(v), [2.5, 3.5])
