"""TF1's `tf.contrib.framework.arg_scope` (arg_scope_test.py in graph mode, names forwarded from
`tf.` to `sl.`): scoped defaults, nesting, re-entering a scope, and TF1's errors."""

import numpy as np
import pytest

import sluice as tf

arg_scope = tf.contrib.framework.arg_scope
add_arg_scope = tf.contrib.framework.add_arg_scope
layers = tf.contrib.layers


@add_arg_scope
def func1(*args, **kwargs):
    return (args, kwargs)


@add_arg_scope
def func2(*args, **kwargs):
    return (args, kwargs)


def test_scoped_defaults_nest_and_the_calls_own_arguments_win():
    with arg_scope([func1], a=1, b=None, c=[1]):
        assert func1(0) == ((0,), {"a": 1, "b": None, "c": [1]})
        with arg_scope([func1, func2], b=2, d=[2]):
            assert func1(0) == ((0,), {"a": 1, "b": 2, "c": [1], "d": [2]})
            assert func2(0, d=3) == ((0,), {"b": 2, "d": 3})
        assert func1(0, a=5) == ((0,), {"a": 5, "b": None, "c": [1]})
    assert func1(0) == ((0,), {}) and tf.contrib.framework.current_arg_scope() == {}


def test_a_yielded_scope_can_be_reentered():
    with arg_scope([func1], a=1) as scope:
        pass
    with arg_scope([func2], b=2):
        with arg_scope(scope):
            assert func1() == ((), {"a": 1}) and func2() == ((), {})
    with pytest.raises(ValueError, match="kwargs must be empty"):
        with arg_scope(scope, a=2):
            pass


def test_errors():
    def plain(**kwargs):
        return kwargs

    with pytest.raises(ValueError, match="not decorated with @add_arg_scope"):
        with arg_scope([plain], a=1):
            pass
    with pytest.raises(TypeError, match="list/tuple or reused scope"):
        with arg_scope(func1, a=1):
            pass
    assert tf.contrib.framework.has_arg_scope(func1) and not tf.contrib.framework.has_arg_scope(
        plain
    )


def test_contrib_layers_take_scoped_arguments():
    x = tf.ones([2, 3])
    with arg_scope(
        [layers.fully_connected],
        activation_fn=None,
        weights_initializer=tf.constant_initializer(-1.0),
    ):
        linear = layers.fully_connected(x, 2)
        relu = layers.fully_connected(x, 2, activation_fn=tf.nn.relu)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got_linear, got_relu = sess.run([linear, relu])
    np.testing.assert_array_equal(got_linear, np.full([2, 2], -3.0))
    np.testing.assert_array_equal(got_relu, np.zeros([2, 2]))
    assert "inputs" in tf.contrib.framework.arg_scoped_arguments(layers.conv2d)
