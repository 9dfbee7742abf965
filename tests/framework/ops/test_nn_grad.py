"""Gradients of the nn, loss, conv and pool ops against float64 central differences."""

import re

import numpy as np
import pytest

import sluice as sl
from sluice.framework.autodiff.gradients import gradients
from sluice.framework.ir import registry
from sluice.framework.ops.core.core_ops import apply_op
from sluice.framework.ops.math import debug_ops
from sluice.framework.ops.nn import conv_ops, loss_ops, nn_ops, pool_ops
from sluice.framework.ops.random import random_ops
from sluice.testing import check_gradients

RNG = np.random.default_rng(0)


def randn(*shape, scale=1.0):
    return RNG.standard_normal(shape) * scale


def away_from(points, *shape, margin=0.1, scale=2.0):
    """Random values at least `margin` away from each of `points` (kinks of the function)."""
    x = randn(*shape, scale=scale)
    for p in points:
        near = np.abs(x - p) < margin
        x[near] = p + np.where(x[near] >= p, margin, -margin) * 2
    return x


def distinct(*shape):
    """A permutation of well separated values: no ties for max pooling."""
    return RNG.permutation(np.prod(shape)).reshape(shape) * 0.1 + randn(*shape, scale=0.01)


def distributions(*shape, axis=-1):
    e = np.exp(randn(*shape))
    return e / e.sum(axis=axis, keepdims=True)


def unknown(x, rank_known=True):
    """`x` with no static dims (or no static rank): the gradients must not need them."""
    x = sl.convert_to_tensor(x)
    return sl.placeholder_with_default(x, [None] * x.shape.rank if rank_known else None)


def conv(padding="SAME", strides=1, dilations=1, data_format="NHWC"):
    def build(x, w):
        return conv_ops.conv2d(x, w, strides, padding, data_format=data_format, dilations=dilations)

    return build


def pool(fn, ksize, strides, padding, data_format="NHWC"):
    return lambda x: fn(x, ksize, strides, padding, data_format=data_format)


CONV_ATTRS = {"strides": 2, "padding": "SAME"}
X, W = randn(1, 5, 5, 2), randn(3, 3, 2, 3)
DY = randn(1, 3, 3, 3)  # conv2d(X, W, **CONV_ATTRS)'s shape
POOL_X = distinct(1, 4, 4, 2)
MAX_POOL_ATTRS = {"ksize": [1, 3, 3, 1], "strides": [1, 1, 1, 1], "padding": "SAME",
                  "data_format": "NHWC"}  # fmt: skip
NOISE = np.array([[0.1, 0.9, 0.3], [0.8, 0.2, 0.7]])  # keep_prob 0.5: none near the threshold


def conv_pool_loop(x, w):
    """Conv and pooling in a while loop: their gradients' saved values and shapes go on stacks."""

    def body(i, h):
        h = nn_ops.softplus(conv_ops.conv2d(h, w, 1, "SAME"))
        return i + 1, pool_ops.avg_pool(h, 3, 1, "SAME") + pool_ops.max_pool(h, 3, 1, "SAME")

    h = sl.placeholder_with_default(x, [None, None, None, 2])
    return sl.while_loop(lambda i, h: i < 2, body, [0, h], maximum_iterations=2)[1]


def max_pool_grad(op_type):
    def build(g):
        x = sl.constant(POOL_X)
        y = pool_ops.max_pool(x, 3, 1, "SAME")
        return apply_op(op_type, [x, y, g], MAX_POOL_ATTRS).outputs[0]

    return build


def xent_outputs(op_type, attrs, *constants):
    """Both outputs of a softmax cross-entropy, so `backprop`'s own gradient is checked too."""

    def build(*inputs):
        op = apply_op(op_type, [*inputs, *map(sl.constant, constants)], attrs)
        return sl.concat([sl.expand_dims(op.outputs[0], -1), op.outputs[1]], axis=-1)

    return build


# (id, build, inputs): each row's gradient for every input is checked against central differences
GRAD_CASES = [
    # activations, away from their kinks; one row each with unknown static dims
    ("relu", nn_ops.relu, [away_from([0], 3, 4)]),
    ("relu_unknown_dims", lambda x: nn_ops.relu(unknown(x)), [away_from([0], 2, 3)]),
    ("relu6", nn_ops.relu6, [away_from([0, 6], 3, 4, scale=5)]),
    ("elu", nn_ops.elu, [away_from([0], 3, 4)]),
    ("selu", nn_ops.selu, [away_from([0], 3, 4)]),
    ("softplus", nn_ops.softplus, [randn(3, 4, scale=3)]),
    ("softsign", nn_ops.softsign, [away_from([0], 3, 4)]),
    ("leaky_relu", lambda x: nn_ops.leaky_relu(x, alpha=0.3), [away_from([0], 2, 5)]),
    ("elu_second_order", lambda x: gradients(nn_ops.elu(x) * x, x)[0], [away_from([0], 2, 3)]),
    # softmax along any axis
    ("softmax", nn_ops.softmax, [randn(3, 4)]),
    ("softmax_axis0", lambda x: nn_ops.softmax(x, axis=0), [randn(3, 4)]),
    ("softmax_unknown_rank", lambda x: nn_ops.softmax(unknown(x, False)), [randn(2, 3)]),
    ("log_softmax", nn_ops.log_softmax, [randn(2, 5)]),
    ("log_softmax_axis1", lambda x: nn_ops.log_softmax(x, axis=1), [randn(2, 3, 4)]),
    # BiasAdd: the bias gets the sum over all but the channel axis
    ("bias_add_nhwc", nn_ops.bias_add, [randn(2, 3, 4), randn(4)]),
    ("bias_add_nchw", lambda x, b: nn_ops.bias_add(x, b, "NCHW"), [randn(2, 3, 2, 2), randn(3)]),
    ("bias_add_nchw_rank2", lambda x, b: nn_ops.bias_add(x, b, "NCHW"), [randn(3, 2), randn(2)]),
    ("bias_add_unknown_rank", lambda x, b: nn_ops.bias_add(unknown(x, False), b, "NCHW"),
     [randn(2, 3, 2), randn(3)]),
    ("bias_add_grad", lambda dy: apply_op("BiasAddGrad", [dy], {"data_format": "NCHW"}).outputs[0],
     [randn(2, 3, 2, 2)]),
    ("dropout_apply",
     lambda x, kp: apply_op("DropoutApply", [x, sl.constant(NOISE), kp]).outputs[0],
     [randn(2, 3), np.array(0.5)]),
    # losses
    ("softmax_xent_v2", loss_ops.softmax_cross_entropy_with_logits_v2,
     [distributions(3, 4), randn(3, 4)]),
    ("softmax_xent_v2_axis0",
     lambda labels, logits: loss_ops.softmax_cross_entropy_with_logits_v2(labels, logits, axis=0),
     [distributions(4, 3, axis=0), randn(4, 3)]),
    ("softmax_xent_unknown_dims",
     lambda labels, logits: loss_ops.softmax_cross_entropy_with_logits_v2(labels, unknown(logits)),
     [distributions(2, 3), randn(2, 3)]),
    ("softmax_xent_both_outputs", xent_outputs("SoftmaxCrossEntropyWithLogits", {"axis": -1}),
     [randn(3, 4), distributions(3, 4)]),
    ("sparse_xent", lambda logits: loss_ops.sparse_softmax_cross_entropy_with_logits(
        labels=np.array([[0, 3], [2, 1]], np.int32), logits=logits), [randn(2, 2, 4)]),
    ("sparse_xent_both_outputs",
     xent_outputs("SparseSoftmaxCrossEntropyWithLogits", {}, np.array([1, 0, 2], np.int32)),
     [randn(3, 4)]),
    ("sigmoid_xent", lambda labels, logits: loss_ops.sigmoid_cross_entropy_with_logits(
        labels=labels, logits=logits), [RNG.uniform(size=(3, 4)), away_from([0], 3, 4)]),
    ("l2_loss", loss_ops.l2_loss, [randn(3, 4)]),
    # CheckNumerics passes values and gradients through
    ("check_numerics", lambda x: debug_ops.check_numerics(x * x, "x squared"), [randn(3, 4)]),
    # Conv2D: input and filter gradients
    ("conv_same", conv("SAME"), [X, W]),
    ("conv_valid", conv("VALID"), [X, W]),
    ("conv_stride2", conv("SAME", strides=2), [X, W]),
    ("conv_valid_stride2", conv("VALID", strides=2), [randn(1, 6, 6, 2), W]),
    ("conv_dilation2", conv("SAME", dilations=2), [X, W]),
    ("conv_valid_dilation2", conv("VALID", dilations=[1, 2]), [X, W]),
    ("conv_explicit", conv([[0, 0], [1, 0], [2, 1], [0, 0]], strides=[2, 1]), [X, W]),
    ("conv_nchw", conv("SAME", strides=2, data_format="NCHW"), [randn(1, 2, 5, 5), W]),
    ("conv_unknown_dims", lambda x, w: conv("SAME", strides=2)(unknown(x), w), [X, W]),
    ("conv_pool_in_while_loop", conv_pool_loop, [X * 0.5, randn(3, 3, 2, 2, scale=0.3)]),
    # Conv2D's backprops are differentiable too
    ("conv_backprop_input", lambda w, dy: conv_ops.conv2d_backprop_input(
        [1, 5, 5, 2], w, dy, **CONV_ATTRS), [W, DY]),
    ("conv_backprop_filter", lambda x, dy: conv_ops.conv2d_backprop_filter(
        x, [3, 3, 2, 3], dy, **CONV_ATTRS), [X, DY]),
    ("conv_transpose", lambda dy, w: conv_ops.conv2d_transpose(
        dy, w, [1, 6, 6, 2], strides=2, padding="VALID"), [randn(1, 2, 2, 3), W]),
    # pooling (distinct values: no ties)
    ("max_pool_2x2_s2", pool(pool_ops.max_pool, 2, 2, "VALID"), [POOL_X]),
    ("max_pool_3x3_s1_same", pool(pool_ops.max_pool, 3, 1, "SAME"), [POOL_X]),
    ("max_pool_nchw", pool(pool_ops.max_pool, 3, 2, "SAME", "NCHW"), [distinct(1, 2, 5, 4)]),
    ("max_pool_unknown_dims", lambda x: pool_ops.max_pool(unknown(x), 2, 2, "SAME"), [POOL_X]),
    ("avg_pool_2x2_s2", pool(pool_ops.avg_pool, 2, 2, "VALID"), [randn(1, 4, 4, 2)]),
    ("avg_pool_3x3_s1_same", pool(pool_ops.avg_pool, 3, 1, "SAME"), [randn(1, 4, 4, 2)]),
    ("avg_pool_nchw", pool(pool_ops.avg_pool, 3, 2, "SAME", "NCHW"), [randn(1, 2, 5, 4)]),
    ("avg_pool_unknown_dims", lambda x: pool_ops.avg_pool(unknown(x), 3, 2, "SAME"),
     [randn(1, 5, 4, 2)]),
    # the pooling gradient ops are differentiable too
    ("max_pool_grad", max_pool_grad("MaxPoolGrad"), [randn(1, 4, 4, 2)]),
    ("max_pool_grad_grad", max_pool_grad("MaxPoolGradGrad"), [randn(1, 4, 4, 2)]),
    ("avg_pool_grad", lambda g: apply_op("AvgPoolGrad", [sl.constant([1, 4, 4, 2]), g], {
        **MAX_POOL_ATTRS, "strides": [1, 2, 2, 1]}).outputs[0], [randn(1, 2, 2, 2)]),
]  # fmt: skip


@pytest.mark.parametrize(
    "build, inputs", [c[1:] for c in GRAD_CASES], ids=[c[0] for c in GRAD_CASES]
)
def test_gradient_matches_central_differences(build, inputs):
    check_gradients(build, inputs, rtol=1e-6, atol=1e-8)


def first_max_counts(shape, k, stride):
    """How often "SAME" max pooling picks each element when all values tie: each window picks
    its first element in row-major order (TF's CPU kernel and XLA's select-and-scatter)."""
    counts = np.zeros(shape)
    starts = []
    for size in shape[1:3]:
        out = -(-size // stride)
        before = max((out - 1) * stride + k - size, 0) // 2
        starts.append([max(o * stride - before, 0) for o in range(out)])
    for i in starts[0]:
        for j in starts[1]:
            counts[:, i, j, :] += 1
    return counts


@pytest.mark.parametrize("shape, k, stride", [((1, 2, 2, 1), 2, 2), ((1, 3, 4, 2), 3, 1)])
def test_max_pool_ties_go_to_the_first_maximum(shape, k, stride):
    x = sl.constant(np.ones(shape))
    (dx,) = gradients(pool_ops.max_pool(x, k, stride, "SAME"), x)
    with sl.Session() as sess:
        np.testing.assert_array_equal(sess.run(dx), first_max_counts(shape, k, stride))


def test_softmax_xent_v1_gives_labels_no_gradient():
    labels, logits = sl.constant(distributions(2, 3)), sl.constant(randn(2, 3))
    loss = loss_ops.softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    d_labels, d_logits = gradients(loss, [labels, logits])
    assert d_labels is None and d_logits is not None


def test_sparse_xent_labels_get_no_gradient():
    labels = sl.constant([0, 2], sl.int32)
    loss = loss_ops.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=randn(2, 3))
    assert gradients(loss, labels) == [None]


def test_gradient_dtype_and_shape_follow_the_input_float32():
    x = sl.placeholder(sl.float32, [None, 5, 5, 2])
    w = sl.constant(W.astype(np.float32))
    y = nn_ops.relu(conv_ops.conv2d(x, w, 2, "SAME"))
    y = pool_ops.avg_pool(pool_ops.max_pool(y, 2, 1, "SAME"), 2, 2, "VALID")
    dx, dw = gradients(loss_ops.l2_loss(y), [x, w])
    assert (dx.dtype, dw.dtype) == (sl.float32, sl.float32)
    assert dx.shape.as_list() == [None, 5, 5, 2] and dw.shape.as_list() == [3, 3, 2, 3]
    with sl.Session() as sess:
        dx_value = sess.run(dx, {x: X.astype(np.float32)})
    assert dx_value.dtype == np.float32 and dx_value.shape == (1, 5, 5, 2)


# (op builder, error, message): the backprop ops check their shapes when built
BACKPROP_ERRORS = [
    (lambda: conv_ops.conv2d_backprop_input([1, 5, 5], W, DY, **CONV_ATTRS), ValueError,
     "4 entries"),
    (lambda: conv_ops.conv2d_backprop_input([1, 5, 5, 3], W, DY, **CONV_ATTRS), ValueError,
     "3 channels but the filter"),
    (lambda: conv_ops.conv2d_backprop_input([1, 9, 9, 2], W, DY, **CONV_ATTRS), ValueError,
     "does not match the convolution's output shape"),
    (lambda: conv_ops.conv2d_backprop_filter(X, [3, 3, 2, 4], DY, **CONV_ATTRS), ValueError,
     "3 channels but the filter"),
    (lambda: conv_ops.conv2d_backprop_filter(X, [3, 3, 2, 3], DY[..., :2], **CONV_ATTRS),
     ValueError, "2 channels"),
    (lambda: conv_ops.conv2d_backprop_filter(X, [3.0, 3, 2, 3], DY, **CONV_ATTRS), TypeError,
     "integers"),
    (lambda: apply_op("AvgPoolGrad", [sl.constant([1, 4, 4, 2]), sl.constant(randn(1, 3, 3, 2))],
                      {**MAX_POOL_ATTRS, "strides": [1, 2, 2, 1]}),
     ValueError, "pooling the input"),
    (lambda: apply_op("MaxPoolGrad", [sl.constant(x) for x in (POOL_X, POOL_X[:, :2], POOL_X)],
                      MAX_POOL_ATTRS), ValueError,
     "orig_output has shape"),
    (lambda: apply_op("BiasAddGrad", [sl.constant(randn(3))], {"data_format": "NHWC"}), ValueError,
     "rank >= 2"),
]  # fmt: skip


@pytest.mark.parametrize("build, error, match", BACKPROP_ERRORS)
def test_backprop_op_construction_errors(build, error, match):
    with pytest.raises(error, match=match):
        build()


def test_backprop_ops_infer_shapes():
    sizes = sl.shape(sl.placeholder(sl.float64, [None, 5, 5, 2]))
    dx = conv_ops.conv2d_backprop_input(sizes, W, unknown(DY), **CONV_ATTRS)
    assert dx.shape.as_list() == [None, 5, 5, 2]
    dw = conv_ops.conv2d_backprop_filter(X, sl.placeholder(sl.int32, [4]), DY, **CONV_ATTRS)
    assert dw.shape.as_list() == [None, None, 2, 3]
    db = apply_op("BiasAddGrad", [unknown(DY)], {"data_format": "NCHW"}).outputs[0]
    assert db.shape.as_list() == [None]


OP_TYPES = {
    nn_ops: ["Relu", "Relu6", "Elu", "Selu", "Softplus", "Softsign", "LeakyRelu", "Softmax",
             "LogSoftmax", "BiasAdd", "BiasAddGrad", "DropoutApply"],
    loss_ops: ["SoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits",
               "SigmoidCrossEntropyWithLogits", "L2Loss"],
    conv_ops: ["Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter"],
    pool_ops: ["MaxPool", "MaxPoolGrad", "MaxPoolGradGrad", "AvgPool", "AvgPoolGrad"],
    random_ops: ["RandomStandardNormal", "TruncatedNormal", "RandomUniform", "RandomUniformInt",
                 "RandomShuffle", "Multinomial"],
}  # fmt: skip


@pytest.mark.parametrize("module", OP_TYPES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_every_op_has_a_gradient_or_a_mark(module):
    with open(module.__file__) as f:
        registered = re.findall(r'register_op\(\s*"(\w+)"', f.read())
    assert registered == OP_TYPES[module]
    for name in registered:
        entry = registry.get_gradient(name)
        if module is random_ops:  # random draws carry no gradient
            assert entry == registry.NOT_DIFFERENTIABLE, name
        else:
            assert callable(entry), name
