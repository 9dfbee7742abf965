"""nn_ops and loss_ops: activations, softmax, BiasAdd, cross-entropies, L2Loss, dropout."""

from functools import partial

import numpy as np
import pytest

import sluice as sl
from sluice.framework.ops.nn import loss_ops, nn_ops

RNG = np.random.default_rng(0)
TOL = {np.float32: (1e-5, 1e-6), np.float64: (1e-12, 1e-12), np.int32: (0, 0)}
SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


# -- NumPy references ---------------------------------------------------------------------------
def np_log_softmax(x, axis=-1):
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def np_softmax(x, axis=-1):
    return np.exp(np_log_softmax(x, axis))


def np_sparse_xent(labels, logits):
    log_p = np_log_softmax(logits)
    return -np.take_along_axis(log_p, labels[..., None].astype(np.int64), axis=-1)[..., 0]


def np_sigmoid_xent(labels, logits):
    log_sig = -np.logaddexp(0, -logits)
    log_one_minus_sig = -np.logaddexp(0, logits)
    return -labels * log_sig - (1 - labels) * log_one_minus_sig


def randn(*shape, dtype=np.float32, scale=2.0):
    return (RNG.standard_normal(shape) * scale).astype(dtype)


def distributions(*shape, dtype=np.float32):
    return np_softmax(randn(*shape, dtype=np.float64)).astype(dtype)


def int_labels(num_classes, *shape, dtype=np.int32):
    return RNG.integers(0, num_classes, shape).astype(dtype)


def xent(labels, logits):
    return loss_ops.softmax_cross_entropy_with_logits(labels=labels, logits=logits)


def sparse_xent(labels, logits):
    return loss_ops.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)


def sigmoid_xent(labels, logits):
    return loss_ops.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)


# -- the table: (fn over tensors, inputs, reference over float64 arrays) -----------------------
UNARY = [  # (name, fn, reference, input scale)
    ("relu", nn_ops.relu, lambda x: np.maximum(x, 0), 2.0),
    ("relu6", nn_ops.relu6, lambda x: np.clip(x, 0, 6), 6.0),
    ("elu", nn_ops.elu, lambda x: np.where(x > 0, x, np.expm1(x)), 2.0),
    ("selu", nn_ops.selu, lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(x)), 2.0),
    ("softplus", nn_ops.softplus, lambda x: np.logaddexp(0, x), 30.0),
    ("softsign", nn_ops.softsign, lambda x: x / (1 + np.abs(x)), 2.0),
    ("leaky_relu", lambda x: nn_ops.leaky_relu(x, 0.1), lambda x: np.where(x > 0, x, 0.1 * x), 2.0),
    ("softmax", nn_ops.softmax, np_softmax, 2.0),
    ("softmax_axis0", partial(nn_ops.softmax, axis=0), partial(np_softmax, axis=0), 2.0),
    ("log_softmax", nn_ops.log_softmax, np_log_softmax, 2.0),
    ("log_softmax_dim0", partial(nn_ops.log_softmax, dim=0), partial(np_log_softmax, axis=0), 2.0),
    ("l2_loss", loss_ops.l2_loss, lambda x: np.sum(x * x) / 2, 2.0),
]  # fmt: skip
CASES = [
    pytest.param(
        fn,
        [randn(*shape, dtype=dtype, scale=scale)],
        ref,
        id=f"{name}-{dtype.__name__}-{len(shape)}d",
    )
    for name, fn, ref, scale in UNARY
    for dtype in (np.float32, np.float64)
    for shape in ((7,), (3, 4, 5))
]
F64 = np.float64
CASES += [
    pytest.param(nn_ops.relu, [int_labels(7, 3, 4) - 3], partial(np.maximum, 0), id="relu-int32"),
    pytest.param(nn_ops.bias_add, [randn(2, 3), randn(3)], np.add, id="bias_add-2d"),
    pytest.param(nn_ops.bias_add, [randn(2, 4, 5, 3), randn(3)], np.add, id="bias_add-nhwc"),
    pytest.param(
        lambda v, b: nn_ops.bias_add(v, b, data_format="NCHW"),
        [randn(2, 3, 4, 5, dtype=F64), randn(3, dtype=F64)],
        lambda v, b: v + b[:, None, None],
        id="bias_add-nchw",
    ),
    pytest.param(
        xent,
        [distributions(5, 6), randn(5, 6)],
        lambda labels, logits: -np.sum(labels * np_log_softmax(logits), -1),
        id="softmax_xent",
    ),
    pytest.param(
        lambda labels, logits: loss_ops.softmax_cross_entropy_with_logits_v2(
            labels, logits, axis=0),
        [distributions(6, 2, 3, dtype=F64).transpose(2, 0, 1).copy(), randn(3, 6, 2, dtype=F64)],
        lambda labels, logits: -np.sum(labels * np_log_softmax(logits, 0), 0),
        id="softmax_xent_v2-axis0-rank3",
    ),
    pytest.param(
        xent,
        [np.eye(3, dtype=np.float32), np.float32([[1e4, 0, -1e4], [0, 0, 0], [-5e3, 5e3, 0]])],
        lambda labels, logits: np.array([0.0, np.log(3.0), 5e3]),
        id="softmax_xent-stable-large-logits",
    ),
    pytest.param(sparse_xent, [int_labels(6, 5), randn(5, 6)], np_sparse_xent, id="sparse_xent"),
    pytest.param(
        sparse_xent,
        [int_labels(4, 2, 3, dtype=np.int64), randn(2, 3, 4, dtype=F64)],
        np_sparse_xent,
        id="sparse_xent-int64-rank3",
    ),
    pytest.param(
        sigmoid_xent,
        [RNG.uniform(size=(4, 5)).astype(np.float32), randn(4, 5, scale=30.0)],
        np_sigmoid_xent,
        id="sigmoid_xent-large-logits",
    ),
]  # fmt: skip


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "unknown-dims"])
@pytest.mark.parametrize("fn, inputs, ref", CASES)
def test_against_numpy(fn, inputs, ref, dynamic):
    expected = ref(*[a.astype(np.float64) if a.dtype.kind == "f" else a for a in inputs])
    float_dtype = next((a.dtype for a in inputs if a.dtype.kind == "f"), inputs[0].dtype)
    phs = [sl.placeholder(a.dtype, [None] * a.ndim if dynamic else a.shape) for a in inputs]
    out = fn(*phs)
    with sl.Session() as s:
        got = s.run(out, feed_dict=dict(zip(phs, inputs)))
    assert out.dtype == got.dtype == float_dtype
    if dynamic:
        assert out.shape.is_compatible_with(got.shape), (out.shape, got.shape)
    else:
        assert out.shape.as_list() == list(got.shape)
    rtol, atol = TOL[float_dtype.type]
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


def test_softmax_cross_entropy_backprop_output():
    labels, logits = distributions(4, 3), randn(4, 3)
    op = loss_ops.softmax_cross_entropy_with_logits_v2(labels, logits).op
    sparse_labels = int_labels(3, 4)
    sparse_op = loss_ops.sparse_softmax_cross_entropy_with_logits(
        labels=sparse_labels, logits=logits
    ).op
    assert op.type == "SoftmaxCrossEntropyWithLogits"
    with sl.Session() as s:
        backprop, sparse_backprop = s.run([op.outputs[1], sparse_op.outputs[1]])
    assert op.outputs[1].shape.as_list() == [4, 3] == sparse_op.outputs[1].shape.as_list()
    np.testing.assert_allclose(backprop, np_softmax(logits) - labels, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        sparse_backprop, np_softmax(logits) - np.eye(3)[sparse_labels], rtol=1e-5, atol=1e-6
    )


@pytest.mark.parametrize("engine", ["compiled", "interpreted"])
def test_softmax_cross_entropy_takes_labels_as_tf1_flattens_them(engine):
    # TF1 flattens labels and logits to [rows, classes] and casts labels to the logits' dtype
    # (hunkim's lab-06-2 passes `labels=[one_hot]`, shape (1, ?, 7), with logits (?, 7))
    logits_value = randn(3, 7)
    labels_value = np.eye(7, dtype=np.float32)[[1, 2, 3]]
    logits = sl.placeholder(sl.float32, [None, 7])
    one_hot = sl.placeholder(sl.float32, [None, 7])
    wrapped = loss_ops.softmax_cross_entropy_with_logits_v2(labels=[one_hot], logits=logits)
    one_row = loss_ops.softmax_cross_entropy_with_logits_v2(
        labels=np.eye(7, dtype=np.float32)[:1], logits=logits
    )
    int_labels_ = loss_ops.softmax_cross_entropy_with_logits_v2(
        labels=sl.constant(np.eye(7, dtype=np.int32)[[0, 1, 2]]), logits=logits
    )
    (grad,) = sl.gradients(sl.reduce_sum(wrapped), logits)
    log_probs = np.log(np_softmax(logits_value))
    with sl.Session(config=sl.SessionConfig(engine=engine)) as s:
        got = s.run(
            [wrapped, one_row, int_labels_, grad], {logits: logits_value, one_hot: labels_value}
        )
    np.testing.assert_allclose(got[0], -(labels_value * log_probs).sum(1), rtol=1e-5)
    np.testing.assert_allclose(got[1], -log_probs[:, 0], rtol=1e-5)
    np.testing.assert_allclose(got[2], -log_probs[[0, 1, 2], [0, 1, 2]], rtol=1e-5)
    np.testing.assert_allclose(got[3], np_softmax(logits_value) - labels_value, atol=1e-6)
    with pytest.raises(ValueError, match="same shape"):  # other class counts stay an error
        loss_ops.softmax_cross_entropy_with_logits_v2(labels=ones(3, 6), logits=logits)


@pytest.mark.parametrize("engine", ["compiled", "interpreted"])
def test_sparse_cross_entropy_out_of_range_label_is_an_error(engine):
    # TF's CPU kernel raises (its GPU kernel gives NaN); constant labels fail when run, not built
    loss = loss_ops.sparse_softmax_cross_entropy_with_logits(labels=[0, 3, -1], logits=randn(3, 3))
    with sl.Session(config=sl.SessionConfig(engine=engine)) as s:
        with pytest.raises(sl.errors.InvalidArgumentError, match=r"label value of 3 .* \[0, 3\)"):
            s.run(loss)


def test_static_shapes_with_partly_known_inputs():
    x = sl.placeholder(sl.float32, [None, 5])
    bias_added = nn_ops.bias_add(sl.placeholder(sl.float32, [2, None]), np.ones(3, np.float32))
    assert bias_added.shape == [2, 3]
    logits = sl.placeholder(sl.float32, [None, None, 4])
    loss = loss_ops.sparse_softmax_cross_entropy_with_logits(
        labels=sl.placeholder(sl.int32, [8, None]), logits=logits
    )
    assert loss.shape == [8, None] and loss.op.outputs[1].shape == [8, None, 4]
    dense = loss_ops.softmax_cross_entropy_with_logits_v2(
        labels=x, logits=sl.placeholder(sl.float32, [3, None])
    )
    assert dense.shape == [3] and dense.op.outputs[1].shape == [3, 5]
    assert nn_ops.softmax(sl.placeholder(sl.float32, None)).shape.rank is None
    assert loss_ops.l2_loss(x).shape == []


def ones(*shape, dtype=np.float32):
    return np.ones(shape, dtype)


ERRORS = [  # (fn, args, kwargs, error, message)
    (nn_ops.bias_add, (ones(2, 3), ones(4)), {}, ValueError, "bias of shape"),
    (nn_ops.bias_add, (ones(2, 3), ones(1, 3)), {}, ValueError, "rank 1"),
    (nn_ops.bias_add, (ones(3), ones(3)), {}, ValueError, "rank >= 2"),
    (nn_ops.bias_add, (ones(2, 3), ones(3, dtype=np.float64)), {}, TypeError, "dtype"),
    (nn_ops.bias_add, (ones(2, 3), ones(3)), {"data_format": "NCWH"}, ValueError, "data_format"),
    (nn_ops.softmax, (ones(2, 3),), {"axis": 2}, ValueError, "out of range"),
    (nn_ops.softmax, (ones(2, 3, dtype=np.int32),), {}, TypeError, "floating"),
    (nn_ops.elu, (ones(2, dtype=np.int32),), {}, TypeError, "floating"),
    (nn_ops.relu, (ones(2, dtype=np.bool_),), {}, TypeError, "real-valued"),
    (xent, (ones(2, 4), ones(2, 3)), {}, ValueError, "same shape"),
    (sparse_xent, (ones(2, 1, dtype=np.int32), ones(2, 3)), {}, ValueError, "rank 1"),
    (sparse_xent, (ones(3, dtype=np.int32), ones(2, 3)), {}, ValueError, "do not match"),
    (sparse_xent, (ones(2), ones(2, 3)), {}, TypeError, "int32 or int64"),
    (loss_ops.sparse_softmax_cross_entropy_with_logits, ([0], ones(1, 3)), {}, ValueError,
     "labels="),
    (sigmoid_xent, (ones(2, 3), ones(3, 2)), {}, ValueError, "same shape"),
    (nn_ops.dropout, (ones(2),), {"keep_prob": 0.0}, ValueError, "keep_prob"),
    (nn_ops.dropout, (ones(2),), {"keep_prob": 1.5}, ValueError, "keep_prob"),
    (nn_ops.dropout, (ones(2),), {"rate": 1.0}, ValueError, "rate"),
    (nn_ops.dropout, (ones(2),), {}, ValueError, "exactly one"),
    (nn_ops.dropout, (ones(2, 3), 0.5), {"noise_shape": [2, 2]}, ValueError, "broadcast"),
]  # fmt: skip


@pytest.mark.parametrize("fn, args, kwargs, error, match", ERRORS)
def test_construction_errors(fn, args, kwargs, error, match):
    with pytest.raises(error, match=match):
        fn(*args, **kwargs)


# -- dropout ------------------------------------------------------------------------------------
def test_dropout_keeps_with_probability_keep_prob_and_scales():
    x = sl.constant(np.full([200, 100], 3.0, np.float32))
    y = nn_ops.dropout(x, keep_prob=0.8, seed=1)
    assert y.shape == [200, 100] and y.dtype == sl.float32
    with sl.Session() as s:
        first, second = s.run(y), s.run(y)
    assert set(np.unique(first)) == {0.0, np.float32(3.0 / np.float32(0.8))}
    assert abs(np.mean(first != 0) - 0.8) < 0.02
    assert (first != second).any(), "every run draws a new mask"


def test_dropout_is_reproducible_from_seeds():
    def run_once():
        with sl.Graph().as_default():
            sl.set_random_seed(42)
            y = nn_ops.dropout(sl.constant(np.ones([50], np.float32)), rate=0.5, seed=7)
            with sl.Session() as s:
                return s.run(y), s.run(y)

    a, b = run_once(), run_once()
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert (a[0] != a[1]).any()


def test_dropout_noise_shape_broadcasts_one_choice():
    x = sl.constant(np.ones([4, 6, 5], np.float32))
    y = nn_ops.dropout(x, keep_prob=0.5, noise_shape=[4, 1, None], seed=3)
    with sl.Session() as s:
        value = s.run(y)
    assert (value == value[:, :1, :]).all(), "one keep/drop choice per (batch, channel)"


def test_dropout_keep_prob_fed_at_run_time():
    keep_prob = sl.placeholder(sl.float32, [])
    y = nn_ops.dropout(sl.constant(np.ones([1000], np.float32)), keep_prob, seed=5)
    with sl.Session() as s:
        assert (s.run(y, {keep_prob: 1.0}) == 1.0).all()
        half = s.run(y, {keep_prob: 0.25})
    assert set(np.unique(half)) <= {0.0, 4.0} and abs(np.mean(half != 0) - 0.25) < 0.05


def test_dropout_keep_prob_one_returns_input():
    x = sl.placeholder(sl.float32, [None, 3])
    assert nn_ops.dropout(x, keep_prob=1.0) is x
    assert nn_ops.dropout(x, rate=0.0) is x


def test_dropout_of_unknown_shape():
    x = sl.placeholder(sl.float32, [None, 4])
    y = nn_ops.dropout(x, keep_prob=0.5, seed=2)
    per_row = nn_ops.dropout(x, keep_prob=0.5, noise_shape=[None, 1], seed=2)
    assert y.shape == [None, 4] and per_row.shape == [None, 4]
    with sl.Session() as s:
        value, rows = s.run([y, per_row], {x: np.ones([300, 4], np.float32)})
    assert value.shape == (300, 4) and abs(np.mean(value != 0) - 0.5) < 0.1
    assert (rows == rows[:, :1]).all() and 0 < rows.sum() < rows.size


def test_dropout_gradient_uses_the_same_mask():
    from sluice.framework.ir import registry

    x = sl.constant(np.full([6, 7], 2.0, np.float32))
    y = nn_ops.dropout(x, keep_prob=0.5, seed=4)
    upstream = sl.constant(np.arange(42, dtype=np.float32).reshape(6, 7))
    grads = registry.get_gradient("DropoutApply")(y.op, upstream)
    assert grads[1] is None and grads[0].shape == [6, 7]  # noise: none; keep_prob: yes
    with sl.Session() as s:
        value, grad = s.run([y, grads[0]])
    np.testing.assert_allclose(grad, np.arange(42).reshape(6, 7) * value / 2.0)
