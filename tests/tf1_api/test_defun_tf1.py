"""TF1's `function.Defun` and the functional ops on it (`If`, `While`, `For`, `Gradient`,
`partitioned_call`, `remote_call`), as TF 1.15's functional_ops_test.py and the Defun part of
gradients_test.py use them, names forwarded from `tf.` to `sl.`, in both engines: values at
1e-6, gradients against central differences, TF1's error types."""

import numpy as np
import pytest

import sluice as sl
from sluice.python.framework import function
from sluice.python.ops import functional_ops

ENGINES = ["compiled", "interpreted"]


@pytest.fixture(params=ENGINES)
def sess(request):
    with sl.Session(config=sl.SessionConfig(engine=request.param)) as session:
        yield session


def x_square_plus_b(x, b):
    return x * x + b


def x_square_plus_b_gradient(x, b, g):
    g *= 2.0  # perturbed, so the test sees that it was called
    return g * 2.0 * x, g


def python_gradient(op, grad):
    grad *= 3.0
    return grad * op.inputs[0] * 2.0, grad


def _numeric_gradient(sess, y, x, value, eps=1e-3):
    """Central differences of sum(y) by x at `value` (float64)."""
    flat = np.asarray(value, np.float64).ravel()
    out = np.zeros_like(flat)
    for i in range(flat.size):
        up, down = flat.copy(), flat.copy()
        up[i] += eps
        down[i] -= eps
        f_up = sess.run(y, {x: up.reshape(np.shape(value))}).sum()
        f_down = sess.run(y, {x: down.reshape(np.shape(value))}).sum()
        out[i] = (f_up - f_down) / (2 * eps)
    return out.reshape(np.shape(value))


def test_call_value_and_symbolic_gradient(sess):
    f = function.Defun(sl.float32, sl.float32)(x_square_plus_b)
    x, b = sl.constant([2.0], name="x"), sl.constant([1.0], name="b")
    y = f(x, b)
    assert y.op.name == "x_square_plus_b" and y.shape.as_list() == [1]
    value, gx, gb = sess.run([y] + sl.gradients(y, [x, b]))
    np.testing.assert_allclose(value, [5.0], atol=1e-6)
    np.testing.assert_allclose(gx, [4.0], atol=1e-6)
    np.testing.assert_allclose(gb, [1.0], atol=1e-6)


def test_composition_gradient(sess):
    f = function.Defun(sl.float32, sl.float32)(x_square_plus_b)
    x = sl.constant([2.0])
    b1, b2 = sl.constant([1.0]), sl.constant([1.0])
    gx, gb1 = sess.run(sl.gradients(f(f(x, b1), b2), [x, b1]))
    np.testing.assert_allclose(gx, [40.0], atol=1e-6)
    np.testing.assert_allclose(gb1, [10.0], atol=1e-6)


def test_gradient_against_central_differences(sess):
    @function.Defun(sl.float64)
    def smooth(x):
        return sl.tanh(x) * sl.exp(-x * x) + x * x * x

    x = sl.placeholder(sl.float64, [3])
    y = smooth(x)
    value = np.array([0.3, -0.7, 1.1])
    (grad,) = sess.run(sl.gradients(y, x), {x: value})
    np.testing.assert_allclose(grad, _numeric_gradient(sess, y, x, value), rtol=1e-6, atol=1e-6)


def test_grad_func_and_python_grad_func_replace_the_body_gradient(sess):
    grad_func = function.Defun(sl.float32, sl.float32, sl.float32)(x_square_plus_b_gradient)
    with_grad_func = function.Defun(sl.float32, sl.float32, grad_func=grad_func)(x_square_plus_b)
    with_python = function.Defun(sl.float32, sl.float32, python_grad_func=python_gradient)(
        x_square_plus_b
    )
    x, b = sl.constant([2.0]), sl.constant([1.0])
    got = sess.run(
        sl.gradients(with_grad_func(x, b), [x, b]) + sl.gradients(with_python(x, b), [x, b])
    )
    np.testing.assert_allclose(np.concatenate(got), [8.0, 2.0, 12.0, 3.0], atol=1e-6)


def test_gradient_defined_twice_is_a_value_error():
    grad_func = function.Defun(sl.float32, sl.float32, sl.float32)(x_square_plus_b_gradient)
    f = function.Defun(
        sl.float32, sl.float32, grad_func=grad_func, python_grad_func=python_gradient
    )(x_square_plus_b)
    with pytest.raises(ValueError, match="Gradient defined twice"):
        f.add_to_graph(sl.Graph())


def test_argument_count_and_dtype_errors():
    f = function.Defun(sl.float32, sl.float32)(x_square_plus_b)
    with pytest.raises(ValueError, match="Expected number of arguments: 2, received: 1"):
        f(sl.constant(1.0))
    with pytest.raises(TypeError, match="int32"):
        f(sl.constant(1), sl.constant(2.0))
    with pytest.raises(ValueError, match="input types"):
        function.Defun(sl.float32)(x_square_plus_b)

    @function.Defun(sl.float32)
    def returns_none_inside(x):
        return x, None

    with pytest.raises(ValueError, match="can not return None"):
        returns_none_inside(sl.constant(1.0))


def test_name_hash_signature_and_shape_func():
    f = function.Defun(sl.float32, sl.float32, out_names=["y"])(x_square_plus_b)
    g = function.Defun(sl.float32, sl.float32)(x_square_plus_b)
    assert f.name.startswith("x_square_plus_b_") and f.name == g.name  # equal bodies
    sig = f.definition.signature
    assert [(a.name, a.type) for a in sig.input_arg] == [("x", sl.float32), ("b", sl.float32)]
    assert [(a.name, a.type) for a in sig.output_arg] == [("y", sl.float32)]
    shaped = function.Defun(
        sl.float32, sl.float32, func_name="Shaped", shape_func=lambda op: [[3]]
    )(x_square_plus_b)
    y = shaped(sl.placeholder(sl.float32), sl.placeholder(sl.float32))
    assert shaped.name == "Shaped" and y.shape.as_list() == [3]


def test_gradient_of_a_captured_tensor(sess):
    x = sl.constant(1.0, name="x")
    y = sl.multiply(x, 2.0, name="y")

    @function.Defun()
    def foo():
        return sl.gradients(y, x)[0]

    assert sess.run(foo()) == 2.0


def test_nested_defun_and_overloaded(sess):
    @function.Defun(sl.float32)
    def inner(x):
        return x * 3.0

    @function.Defun(sl.float32)
    def outer(x):
        return inner(x) + inner(x * x)

    @function.Defun()
    def overloaded(a, b):
        return a + b

    x = sl.constant(2.0)
    got = sess.run([outer(x), sl.gradients(outer(x), x)[0], overloaded(1, 2), overloaded(x, x)])
    np.testing.assert_allclose(got, [18.0, 15.0, 3, 4.0], atol=1e-6)


def test_if(sess):
    twice = function.Defun(sl.float32)(lambda x: x * 2)
    thrice = function.Defun(sl.float32)(lambda x: x * 3 + 1)
    x = sl.placeholder(sl.float32)
    (ret,) = functional_ops.If(sl.greater(x, 0), [x], twice, thrice)
    assert [sess.run(ret, {x: v}) for v in (9.0, -8.0, 0.0)] == [18.0, -23.0, 1.0]


def test_while_fetch_by_name_and_gradient(sess):
    @function.Defun(sl.float32, sl.float32)
    def cond(n, unused_x):
        return n > 0

    @function.Defun(sl.float32, sl.float32)
    def body(n, x):
        return n - 1, x + n * n

    n = sl.placeholder(sl.float32, [])
    _, total = functional_ops.While([n, 0.0], cond, body, name="my_while")
    assert sess.run(total, {n: 20.0}) == 2870.0
    assert sess.run("my_while:1", {n: 4.0}) == 30.0
    # d/dn of n^2 + (n-1)^2 + ...: the loop differentiates (an unbounded loop with a gradient
    # runs interpreted: the compiled engine cannot size its stacks)
    (dn,) = sl.gradients(total, n)
    with sl.Session(config=sl.SessionConfig(engine="interpreted")) as interpreted:
        assert interpreted.run(dn, {n: 4.0}) == 2.0 * (4 + 3 + 2 + 1)


def test_while_errors():
    @function.Defun(sl.float32, sl.float32)
    def cond(n, unused_x):
        return n > 0

    @function.Defun(sl.float32, sl.float32)
    def two_results(n, x):
        return n > 0, x

    @function.Defun(sl.float32, sl.float32)
    def three_results(n, x):
        return n - 1, x + n, x

    with pytest.raises(sl.errors.InvalidArgumentError, match="single scalar.*got 2 tensors"):
        functional_ops.While([5.0, 0.0], two_results, three_results)
    with pytest.raises(sl.errors.InvalidArgumentError, match="returned 3 arguments. Expected: 2"):
        functional_ops.While([5.0, 0.0], cond, three_results)
    v = sl.Variable(1.0)
    capturing = function.Defun(sl.float32, sl.float32)(lambda n, x: n + v < 10)
    with pytest.raises(ValueError, match="implicitly captured"):
        functional_ops.While([1.0, 0.0], capturing, three_results)


def test_for_sums_captures_and_mlp(sess):
    @function.Defun(sl.int32, sl.float32)
    def add_index(n, x):
        return x + sl.cast(n, sl.float32)

    v = sl.Variable(1.0)

    @function.Defun(sl.int32, sl.float32, sl.float32)
    def binary(n, x, x2):
        return x + sl.cast(n, sl.float32) + v, x2 + v

    @function.Defun(sl.int32, sl.float64, sl.float64)
    def layer(i, a, ws):
        return sl.tanh(sl.matmul(a, ws[i, :])), ws

    rng = np.random.RandomState(0)
    xval, wsval = rng.normal(size=(2, 3)), rng.normal(size=(4, 3, 3))
    expected = xval
    for w in wsval:
        expected = np.tanh(expected @ w)
    up = functional_ops.For(1, 21, 1, [0.0], add_index)[0]
    down = functional_ops.For(100, 0, -1, [0.0], add_index, rewrite_with_while=True)[0]
    pair = functional_ops.For(1, 10, 1, [0.0, 0.0], binary)
    mlp = functional_ops.For(0, 4, 1, [xval, wsval], layer)[0]
    sess.run(sl.global_variables_initializer())
    got = sess.run([up, down, pair, mlp])
    assert got[:3] == [210.0, 5050.0, [54.0, 9.0]]
    np.testing.assert_allclose(got[3], expected, atol=1e-6)


def test_for_errors():
    @function.Defun(sl.int32, sl.float32)
    def add_index(i, v):
        return sl.cast(i, sl.float32) + v

    @function.Defun(sl.int32, sl.float32)
    def two_results(unused_i, v):
        return v, v

    with pytest.raises(sl.errors.InvalidArgumentError, match="must be a scalar"):
        functional_ops.For([0], 10, 1, [0.0], add_index)
    with pytest.raises(sl.errors.InvalidArgumentError, match="Invalid start/limit/delta"):
        functional_ops.For(0, 10, -1, [0.0], add_index)
    with pytest.raises(sl.errors.InvalidArgumentError, match="returned 2 arguments. Expected: 1"):
        functional_ops.For(0, 10, 1, [0.0], two_results)
    limit = sl.placeholder(sl.int32, [])
    (total,) = functional_ops.For(0, limit, -1, [0.0], add_index)
    with pytest.raises(sl.errors.InvalidArgumentError, match="Invalid start/limit/delta"):
        sl.Session().run(total, {limit: 10})


def test_symbolic_gradient(sess):
    @function.Defun(sl.float32)
    def poly(x):
        return 2 * x * x * x + 3 * x * x + 4 * x + 8

    @function.Defun(sl.float32)
    def grad(x):
        return functional_ops.Gradient([x, 1.0], poly)[0]

    a, b = sl.constant(0.0), sl.constant(1.0)
    assert sess.run([poly(a), grad(a), poly(b), grad(b)]) == [8.0, 4.0, 17.0, 16.0]


def test_calls_run_the_stateful_body(sess):
    v = sl.Variable(1.0)

    @function.Defun()
    def assign_add():
        v.assign_add(1.0)

    op = functional_ops.partitioned_call(args=assign_add.captured_inputs, f=assign_add)
    assert isinstance(op, sl.Operation) and len(assign_add.captured_inputs) == 1
    sess.run(sl.global_variables_initializer())
    sess.run(op)
    assert sess.run(v) == 2.0


def test_partitioned_and_remote_call(sess):
    @function.Defun(sl.float32, sl.float32)
    def body(x, y):
        with sl.device("/cpu:0"):
            return (x + x) + (y + y)

    @function.Defun(sl.int32, sl.int32)
    def mul(a, b):
        return a * b

    (out,) = functional_ops.partitioned_call(args=[sl.constant(1.0), sl.constant(2.0)], f=body)
    remote = functional_ops.remote_call(
        args=[sl.constant(2), sl.constant(3)], Tout=[sl.int32], f=mul, target="/cpu:0"
    )
    assert sess.run([out, remote]) == [6.0, [6]]
    with pytest.raises(ValueError, match="NON_EXISTENT_EXECUTOR"):
        functional_ops.partitioned_call(
            args=[1.0, 2.0], f=body, executor_type="NON_EXISTENT_EXECUTOR"
        )


@pytest.mark.parametrize("index, x, expected", [(0, 1.0, 2.0), (1, 7.0, 21.0), (7, -4.0, -16.0)])
def test_case_takes_the_last_branch_out_of_range(sess, index, x, expected):
    from sluice.python.ops import gen_functional_ops

    def branch(k):
        return function.Defun(sl.float32)(lambda x: (k - 1, x * (k + 2)))

    branches = [branch(k) for k in range(3)]
    outputs = gen_functional_ops.case(
        sl.constant(index), input=[x], Tout=[sl.int32, sl.float32], branches=branches, name="c"
    )
    assert sess.run("c:1") == expected and sess.run(outputs[0]) == min(index, 2) - 1


def test_set_attr_annotation_is_kept_apart_from_kernel_attrs(sess):
    cond = function.Defun(sl.float32, sl.float32)(lambda n, x: n > 0)
    body = function.Defun(sl.float32, sl.float32)(lambda n, x: (n - 1, x + n))
    outputs = functional_ops.While([20.0, 0.0], cond, body, name="my_while")
    outputs[0].op._set_attr("_lower_using_switch_merge", True)
    assert outputs[0].op.get_attr("_lower_using_switch_merge") is True
    assert sess.run("my_while:1") == 210.0
