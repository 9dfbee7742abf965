"""TF1's `tf.nn` functions added for issue 16, as TF1's nn tests check them: float64 values
against NumPy transcriptions of TF1's maths at 1e-6 or tighter, central-difference gradients,
both engines, TF's error types at graph construction, and the structure of returned values."""

import numpy as np
import pytest

import sluice as sl
from sluice.testing import check_gradients

RNG = np.random.default_rng(16)
ENGINES = ["interpreted", "compiled"]


def randn(*shape):
    return RNG.standard_normal(shape)


def run(fetches, engine="compiled", feed_dict=None):
    with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
        return sess.run(fetches, feed_dict)


def close(got, want, tol=1e-6):
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


# -- NumPy references ---------------------------------------------------------------------------
def np_conv2d(x, w, strides=(1, 1), padding="VALID", dilations=(1, 1)):
    """NHWC cross-correlation with TF's SAME padding (the extra pad after)."""
    kh, kw = [(k - 1) * d + 1 for k, d in zip(w.shape[:2], dilations)]
    pads = []
    for size, k, s in zip(x.shape[1:3], (kh, kw), strides):
        if padding == "SAME":
            out = -(-size // s)
            total = max((out - 1) * s + k - size, 0)
            pads.append((total // 2, total - total // 2))
        else:
            pads.append((0, 0))
    x = np.pad(x, [(0, 0), *pads, (0, 0)])
    rows = (x.shape[1] - kh) // strides[0] + 1
    cols = (x.shape[2] - kw) // strides[1] + 1
    y = np.zeros((x.shape[0], rows, cols, w.shape[3]))
    for i in range(rows):
        for j in range(cols):
            r, c = i * strides[0], j * strides[1]
            patch = x[:, r : r + kh : dilations[0], c : c + kw : dilations[1], :]
            y[:, i, j, :] = np.einsum("bhwc,hwco->bo", patch, w)
    return y


def np_depthwise(x, w, strides=(1, 1), padding="VALID", dilations=(1, 1)):
    channels, multiplier = w.shape[2:]
    outs = [
        np_conv2d(x[..., c : c + 1], w[:, :, c : c + 1, :], strides, padding, dilations)
        for c in range(channels)
    ]
    return np.concatenate(outs, axis=-1)  # channel c's filters at c * multiplier + m


def np_lrn(x, depth_radius, bias, alpha, beta):
    sq = np.zeros_like(x)
    for d in range(x.shape[-1]):
        lo, hi = max(0, d - depth_radius), min(x.shape[-1], d + depth_radius + 1)
        sq[..., d] = np.sum(x[..., lo:hi] ** 2, axis=-1)
    return x / (bias + alpha * sq) ** beta


def np_softmax_xent(labels, logits):
    shifted = logits - logits.max(-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    return -(labels * log_p).sum(-1)


def np_sigmoid_xent(labels, logits):
    return np.maximum(logits, 0) - logits * labels + np.log1p(np.exp(-np.abs(logits)))


def np_sampled_logits(w, b, labels, x, sampled, true_count, sampled_count, remove_hits):
    true_logits = np.einsum("bd,btd->bt", x, w[labels]) + b[labels]
    sampled_logits = x @ w[sampled].T + b[sampled]
    if remove_hits:
        hits = (labels[:, :, None] == sampled[None, None, :]).any(1)
        sampled_logits = sampled_logits + np.where(hits, -np.finfo(np.float32).max, 0.0)
    true_logits = true_logits - np.log(true_count)
    sampled_logits = sampled_logits - np.log(sampled_count)
    num_true = labels.shape[1]
    logits = np.concatenate([true_logits, sampled_logits], 1)
    targets = np.concatenate(
        [np.full(true_logits.shape, 1.0 / num_true), np.zeros(sampled_logits.shape)], 1
    )
    return logits, targets


# == every forward value, built in one graph and run once per engine ============================
X4, W_DEPTH, W_POINT = randn(2, 6, 5, 3), randn(3, 2, 3, 2), randn(1, 1, 6, 2)
X3, W1 = randn(2, 9, 3), randn(3, 3, 4)
W2 = randn(3, 2, 3, 2)
BN = {
    "x": randn(2, 3, 2, 4),
    "mean": randn(4),
    "var": randn(4) ** 2,
    "offset": randn(4),
    "scale": randn(4),
}
LOGITS, TARGETS = randn(3, 4) * 5, RNG.uniform(size=(3, 4))
POISSON_TARGETS, LOG_INPUT = np.array([0.0, 0.5, 1.0, 3.0, 10.0]), randn(5)
SOFTMAX = {
    "w": randn(8, 3),
    "b": randn(8),
    "x": randn(4, 3),
    "labels": np.array([[1, 2], [5, 0], [7, 7], [3, 4]]),
    "sampled": (np.array([2, 6, 0, 4, 7]), RNG.uniform(0.1, 0.9, (4, 2)), RNG.uniform(0.1, 0.9, 5)),
}
NCE = {
    "w": randn(7, 3),
    "b": randn(7),
    "x": randn(3, 3),
    "labels": np.array([[1], [4], [6]]),
    "sampled": (np.array([0, 4, 5]), RNG.uniform(0.1, 0.9, (3, 1)), RNG.uniform(0.1, 0.9, 3)),
}


def _as_sampled_values(sampled):
    ids, true_count, sampled_count = sampled
    return ids.astype(np.int64), true_count.astype(np.float32), sampled_count.astype(np.float32)


EXTENDED = {  # variants checked in the slow run only (each one compiles more kernels)
    "moments_kept",
    "batch_normalization_plain",
    "l2_dim",
    "l2_axes",
    "l2_all",
    "l2_zeros",
    "weighted_xent_1",
    "poisson",
    "lrn_defaults",
    "conv1d_ncw",
    "conv1d_kwargs",
    "depthwise_rate",
    "depthwise_nchw",
    "convolution_strided",
    "convolution_dilated",
    "convolution_1d",
    "sampled_softmax_False",
}


def _forward_graph(extended):
    """Every op under test on fixed inputs, keyed by what the tests compare; the EXTENDED
    variants only when `extended`."""
    nn, x4 = sl.nn, sl.constant(X4)
    bn = {k: sl.constant(v) for k, v in BN.items()}
    nchw = sl.transpose(bn["x"], [0, 3, 1, 2])
    out = {
        "moments": nn.moments(sl.constant(X3), axes=[0, 2]),
        "moments_kept": nn.moments(sl.constant(X3), [1], keep_dims=True),
        "batch_normalization": nn.batch_normalization(
            bn["x"], bn["mean"], bn["var"], bn["offset"], bn["scale"], 1e-3
        ),
        "batch_normalization_plain": nn.batch_normalization(
            bn["x"], bn["mean"], bn["var"], None, None, 1e-3
        ),
        "fused_training": nn.fused_batch_norm(bn["x"], bn["scale"], bn["offset"], epsilon=1e-3),
        "fused_inference_nchw": nn.fused_batch_norm(
            nchw,
            bn["scale"],
            bn["offset"],
            bn["mean"],
            bn["var"],
            epsilon=0.0,
            data_format="NCHW",
            is_training=False,
        ),
        "l2_axis": nn.l2_normalize(LOGITS, 1),
        "l2_dim": nn.l2_normalize(LOGITS, dim=0),
        "l2_axes": nn.l2_normalize(LOGITS, [0, 1]),
        "l2_all": nn.l2_normalize(LOGITS),
        "l2_zeros": nn.l2_normalize(np.zeros(3), 0),
        "weighted_xent": nn.weighted_cross_entropy_with_logits(TARGETS, LOGITS, 2.5),
        "weighted_xent_1": nn.weighted_cross_entropy_with_logits(
            labels=TARGETS, logits=LOGITS, pos_weight=1.0
        ),
        "poisson": nn.log_poisson_loss(POISSON_TARGETS, LOG_INPUT),
        "poisson_full": nn.log_poisson_loss(POISSON_TARGETS, LOG_INPUT, compute_full_loss=True),
        "zero_fraction": nn.zero_fraction(np.array([[0, 1, 0], [2, 0, 3]], np.int32)),
        "lrn": nn.lrn(x4, depth_radius=2, bias=1.5, alpha=0.3, beta=0.75),
        "lrn_defaults": nn.local_response_normalization(x4),
        "conv1d_same": nn.conv1d(X3, W1, stride=2, padding="SAME"),
        "conv1d_ncw": nn.conv1d(
            np.transpose(X3, (0, 2, 1)), W1, 1, "VALID", data_format="NCW", dilations=2
        ),
        "conv1d_kwargs": nn.conv1d(value=X3, filters=W1, stride=[1, 1, 1], padding="VALID"),
        "depthwise": nn.depthwise_conv2d(x4, W_DEPTH, [1, 2, 2, 1], "SAME"),
        "depthwise_rate": nn.depthwise_conv2d(x4, W_DEPTH, [1, 1, 1, 1], "VALID", rate=[2, 1]),
        "depthwise_nchw": nn.depthwise_conv2d(
            sl.transpose(x4, [0, 3, 1, 2]), W_DEPTH, [1, 1, 1, 1], "VALID", data_format="NCHW"
        ),
        "separable": nn.separable_conv2d(x4, W_DEPTH, W_POINT, [1, 1, 1, 1], "SAME"),
        "atrous": nn.atrous_conv2d(x4, W2, 2, "SAME"),
        "convolution_strided": nn.convolution(x4, W2, "VALID", strides=[2, 1]),
        "convolution_dilated": nn.convolution(x4, W2, "SAME", dilation_rate=[1, 2]),
        "convolution_1d": nn.convolution(X3, W1, "VALID", dilation_rate=[2]),
    }
    for remove_hits in (True, False):
        s = SOFTMAX
        out[f"sampled_softmax_{remove_hits}"] = nn.sampled_softmax_loss(
            s["w"],
            s["b"],
            s["labels"],
            s["x"],
            5,
            8,
            num_true=2,
            sampled_values=_as_sampled_values(s["sampled"]),
            remove_accidental_hits=remove_hits,
        )
    out["nce"] = nn.nce_loss(
        NCE["w"],
        NCE["b"],
        NCE["labels"],
        NCE["x"],
        3,
        7,
        sampled_values=_as_sampled_values(NCE["sampled"]),
    )
    return out if extended else {k: v for k, v in out.items() if k not in EXTENDED}


def _run_forward(engine, extended):
    g = sl.Graph()
    with g.as_default():
        tensors = _forward_graph(extended)
        # unused variants are pruned from the step, so build them only where they are run
        return tensors, run(tensors, engine)


# the interpreted run of the whole table costs ~8 s: slow; the engines are compared on these
# ops by the tests below that take `engine`
@pytest.fixture(
    scope="module", params=[pytest.param("interpreted", marks=pytest.mark.slow), "compiled"]
)
def forward(request):
    return _run_forward(request.param, extended=False)


@pytest.fixture(scope="module", params=ENGINES)
def forward_all(request):
    return _run_forward(request.param, extended=True)


# == item 1: moments, batch norms, normalizers, losses ===========================================
def test_moments(forward):
    tensors, got = forward
    assert isinstance(tensors["moments"], tuple) and len(tensors["moments"]) == 2
    assert tensors["moments"][0].shape == sl.TensorShape([9])
    close(got["moments"][0], X3.mean((0, 2)), 1e-12)
    close(got["moments"][1], X3.var((0, 2)), 1e-12)


def test_moments_float16():
    mean, var = sl.nn.moments(sl.constant(np.array([1.0, 2.0, 4.0], np.float16)), [0])
    assert mean.dtype == sl.float16 and var.dtype == sl.float16
    close(run(var), np.var([1.0, 2.0, 4.0]), 1e-3)


# Gradients of functions composed of ops whose gradients are checked elsewhere run in the slow
# suite; those of new ops (LRN, DepthwiseConv2dNative) and of fused_batch_norm's gradient
# contract run in the default one.
@pytest.mark.slow
def test_moments_gradient():
    check_gradients(lambda x: sl.add_n(list(sl.nn.moments(x, [0]))), [randn(4, 3)])


def test_batch_normalization(forward):
    _, got = forward
    x, mean, var, offset, scale = (BN[k] for k in ("x", "mean", "var", "offset", "scale"))
    close(got["batch_normalization"], (x - mean) / np.sqrt(var + 1e-3) * scale + offset, 1e-12)


@pytest.mark.slow
def test_batch_normalization_gradient():
    check_gradients(
        lambda *a: sl.nn.batch_normalization(*a, variance_epsilon=1e-3),
        [randn(3, 2), randn(2), randn(2) ** 2 + 0.5, randn(2), randn(2)],
    )


def test_fused_batch_norm_training(forward):
    tensors, got = forward
    assert isinstance(tensors["fused_training"], tuple) and len(tensors["fused_training"]) == 3
    x, scale, offset = BN["x"], BN["scale"], BN["offset"]
    y, batch_mean, batch_var = got["fused_training"]
    mean, var = x.mean((0, 1, 2)), x.var((0, 1, 2))
    close(y, (x - mean) / np.sqrt(var + 1e-3) * scale + offset, 1e-12)
    close(batch_mean, mean, 1e-12)
    close(batch_var, x.var((0, 1, 2), ddof=1), 1e-12)  # TF1 returns the Bessel-corrected one


def test_fused_batch_norm_nchw_inference_and_epsilon_floor(forward):
    _, got = forward
    y, m, v = got["fused_inference_nchw"]
    view = (1, 4, 1, 1)
    x = np.transpose(BN["x"], (0, 3, 1, 2))
    want = (x - BN["mean"].reshape(view)) / np.sqrt(BN["var"].reshape(view) + 1.001e-5) * BN[
        "scale"
    ].reshape(view) + BN["offset"].reshape(view)
    close(y, want, 1e-12)
    close(m, BN["mean"], 0)
    close(v, BN["var"], 0)


def test_fused_batch_norm_gradient_and_errors():
    check_gradients(
        lambda x, s, o: sl.nn.fused_batch_norm(x, s, o)[0], [randn(2, 2, 2, 3), randn(3), randn(3)]
    )
    x = sl.constant(randn(2, 2, 2, 3))
    with pytest.raises(ValueError, match="'mean' and 'variance'"):
        sl.nn.fused_batch_norm(x, [1.0] * 3, [0.0] * 3, is_training=False)
    with pytest.raises(ValueError, match="4-dimensional"):
        sl.nn.fused_batch_norm(sl.constant(randn(2, 3)), [1.0] * 3, [0.0] * 3)
    with pytest.raises(ValueError, match="scale must be a 1-D tensor of 3"):
        sl.nn.fused_batch_norm(x, [1.0] * 2, [0.0] * 3)


def test_l2_normalize(forward):
    _, got = forward
    x = LOGITS
    close(got["l2_axis"], x / np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


@pytest.mark.slow
def test_l2_normalize_gradient():
    check_gradients(lambda t: sl.nn.l2_normalize(t, 1), [randn(2, 3)])


def test_weighted_cross_entropy_with_logits(forward):
    _, got = forward
    z, x, q = TARGETS, LOGITS, 2.5
    want = (1 - z) * x + (1 + (q - 1) * z) * (np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0))
    close(got["weighted_xent"], want, 1e-12)


@pytest.mark.slow
def test_weighted_cross_entropy_gradient():
    z = RNG.uniform(size=(2, 3))
    check_gradients(lambda t: sl.nn.weighted_cross_entropy_with_logits(z, t, 2.5), [randn(2, 3)])


def test_weighted_cross_entropy_errors():
    with pytest.raises(ValueError, match="same shape"):
        sl.nn.weighted_cross_entropy_with_logits(np.zeros(3), np.zeros(4), 2.0)
    with pytest.raises(ValueError, match="exactly one of targets and labels"):
        sl.nn.weighted_cross_entropy_with_logits(logits=np.zeros(3), pos_weight=2.0)


def test_log_poisson_loss(forward):
    _, got = forward
    targets, log_input = POISSON_TARGETS, LOG_INPUT
    plain = np.exp(log_input) - log_input * targets
    safe = np.where(targets > 0, targets, 1)
    stirling = targets * np.log(safe) - targets + 0.5 * np.log(2 * np.pi * safe)
    close(got["poisson_full"], plain + np.where(targets > 1, stirling, 0), 1e-12)


@pytest.mark.slow
def test_log_poisson_loss_gradient():
    targets = np.array([0.0, 2.0, 5.0])
    check_gradients(
        lambda t: sl.nn.log_poisson_loss(targets, t, compute_full_loss=True), [randn(3)]
    )


def test_log_poisson_loss_error():
    with pytest.raises(ValueError, match="same shape"):
        sl.nn.log_poisson_loss(np.zeros(3), np.zeros(2))


def test_zero_fraction(forward):
    tensors, got = forward
    assert tensors["zero_fraction"].dtype == sl.float32
    assert tensors["zero_fraction"].shape == sl.TensorShape([])
    assert got["zero_fraction"] == 0.5


def test_lrn(forward):
    _, got = forward
    close(got["lrn"], np_lrn(X4, 2, 1.5, 0.3, 0.75), 1e-12)


def test_lrn_gradient_and_errors():
    check_gradients(lambda t: sl.nn.lrn(t, 1, 2.0, 0.5, 0.6), [randn(1, 2, 2, 4)])
    with pytest.raises(ValueError, match="rank 4|4-D"):
        sl.nn.lrn(randn(3, 4))
    with pytest.raises(ValueError, match="depth_radius"):
        sl.nn.lrn(randn(1, 1, 1, 3), depth_radius=-1)


# -- candidate samplers and sampled losses ------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_log_uniform_sampler_unique(engine):
    true = np.array([[0], [3], [7]])
    out = sl.nn.log_uniform_candidate_sampler(true, 1, 6, True, 10, seed=3)
    assert isinstance(out, tuple) and len(out) == 3
    assert out.sampled_candidates.dtype == sl.int64 and out.true_expected_count.dtype == sl.float32
    sampled, true_count, sampled_count = run(list(out), engine)
    assert sampled.shape == (6,) and len(set(sampled.tolist())) == 6
    assert sampled.min() >= 0 and sampled.max() < 10
    p = lambda k: np.log((k + 2.0) / (k + 1.0)) / np.log(11.0)  # noqa: E731
    # every expected count is -expm1(tries * log1p(-p)) for the same number of tries
    tries = np.log1p(-sampled_count) / np.log1p(-p(sampled))
    assert tries.min() >= 6 - 1e-3 and np.ptp(tries) < 1e-3 * tries.max()
    close(true_count[:, 0], -np.expm1(tries[0] * np.log1p(-p(true[:, 0]))), 1e-5)
    again = run(list(out), "interpreted" if engine == "compiled" else "compiled")[0]
    np.testing.assert_array_equal(again, sampled)  # the same draw in the other engine


@pytest.mark.slow
def test_samplers_with_repeats_follow_their_distribution():
    true = np.array([[1]])
    log_uniform = sl.nn.log_uniform_candidate_sampler(true, 1, 20000, False, 5, seed=1)
    uniform = sl.nn.uniform_candidate_sampler(true, 1, 20000, False, 5, seed=2)
    (s1, t1, c1), (s2, t2, c2) = run([list(log_uniform), list(uniform)])
    p = np.log((np.arange(5) + 2.0) / (np.arange(5) + 1.0)) / np.log(6.0)
    np.testing.assert_allclose(np.bincount(s1, minlength=5) / 20000, p, atol=0.015)
    np.testing.assert_allclose(np.bincount(s2, minlength=5) / 20000, 0.2, atol=0.015)
    close(c1, p[s1] * 20000, 1e-3)
    close(t1, [[p[1] * 20000]], 1e-3)
    close(c2, np.full(20000, 4000.0), 1e-3)


def test_sampler_errors():
    with pytest.raises(ValueError, match="must be <= range_max"):
        sl.nn.log_uniform_candidate_sampler([[1]], 1, 6, True, 5)
    with pytest.raises(ValueError, match="num_true=2"):
        sl.nn.uniform_candidate_sampler([[1]], 2, 2, True, 5)
    with pytest.raises(TypeError, match="int64"):
        sl.nn.uniform_candidate_sampler(sl.constant([[1]], dtype=sl.int32), 1, 2, True, 5)


def _np_sampled(case, remove_hits):
    ids, true_count, sampled_count = (
        np.asarray(v, np.float64) if i else v
        for i, v in enumerate(_as_sampled_values(case["sampled"]))
    )
    return np_sampled_logits(
        case["w"], case["b"], case["labels"], case["x"], ids, true_count, sampled_count, remove_hits
    )


def test_sampled_softmax_loss_against_numpy(forward):
    tensors, got = forward
    assert tensors["sampled_softmax_True"].shape == sl.TensorShape([4])
    logits, targets = _np_sampled(SOFTMAX, True)
    close(got["sampled_softmax_True"], np_softmax_xent(targets, logits), 1e-6)


def test_nce_loss_against_numpy(forward):
    _, got = forward
    logits, targets = _np_sampled(NCE, False)
    close(got["nce"], np_sigmoid_xent(targets, logits).sum(1), 1e-6)


@pytest.mark.slow
def test_sampled_softmax_over_every_class_is_the_full_softmax():
    w, b, x, labels = randn(6, 3), randn(6), randn(5, 3), np.array([[0], [5], [2], [2], [1]])
    every = (np.arange(6), np.ones((5, 1), np.float32), np.ones(6, np.float32))
    loss = sl.nn.sampled_softmax_loss(w, b, labels, x, 6, 6, sampled_values=every)
    full = sl.nn.sparse_softmax_cross_entropy_with_logits(labels=labels[:, 0], logits=x @ w.T + b)
    close(*run([loss, full]), 1e-10)


@pytest.mark.parametrize(
    "loss_fn", [pytest.param("sampled_softmax_loss", marks=pytest.mark.slow), "nce_loss"]
)
def test_sampled_losses_gradients(loss_fn):
    labels = np.array([[1], [4]])
    sampled = _as_sampled_values(
        (np.array([0, 3, 4]), RNG.uniform(0.1, 0.9, (2, 1)), RNG.uniform(0.1, 0.9, 3))
    )
    loss_fn = getattr(sl.nn, loss_fn)
    check_gradients(
        lambda w, b, x: loss_fn(w, b, labels, x, 3, 5, sampled_values=sampled),
        [randn(5, 2), randn(5), randn(2, 2)],
    )


@pytest.mark.slow
def test_sampled_softmax_with_the_default_sampler():
    labels = np.array([[1], [4]])
    w = sl.Variable(randn(20, 3), name="w")
    loss = sl.reduce_mean(sl.nn.sampled_softmax_loss(w, np.zeros(20), labels, randn(2, 3), 4, 20))
    grad = sl.gradients(loss, [w])[0]
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        value, g = sess.run([loss, sl.convert_to_tensor(grad)])
    assert np.isfinite(value) and np.count_nonzero(np.abs(g).sum(1)) <= 2 + 4


# == item 2: convolutions ========================================================================
def test_conv1d(forward):
    tensors, got = forward
    assert tensors["conv1d_same"].shape == sl.TensorShape([2, 5, 4])
    close(got["conv1d_same"], np_conv2d(X3[:, None], W1[None], (1, 2), "SAME")[:, 0], 1e-12)


@pytest.mark.slow
def test_conv1d_gradient():
    check_gradients(lambda a, f: sl.nn.conv1d(a, f, 2, "SAME"), [randn(1, 5, 2), randn(2, 2, 3)])


def test_conv1d_errors():
    with pytest.raises(ValueError, match="3-D"):
        sl.nn.conv1d(randn(2, 3), randn(2, 3, 4), 1, "VALID")
    with pytest.raises(ValueError, match="channels"):
        sl.nn.conv1d(randn(1, 5, 3), randn(2, 2, 4), 1, "VALID")


def test_depthwise_conv2d(forward):
    tensors, got = forward
    assert tensors["depthwise"].shape == sl.TensorShape([2, 3, 3, 6])
    close(got["depthwise"], np_depthwise(X4, W_DEPTH, (2, 2), "SAME"), 1e-12)


def test_depthwise_gradients_and_errors():
    check_gradients(
        lambda a, f: sl.nn.depthwise_conv2d(a, f, [1, 2, 2, 1], "SAME"),
        [randn(1, 4, 5, 2), randn(2, 3, 2, 2)],
    )
    with pytest.raises(ValueError, match="channels"):
        sl.nn.depthwise_conv2d(randn(1, 4, 4, 3), randn(2, 2, 2, 1), [1, 1, 1, 1], "VALID")
    with pytest.raises(ValueError, match="strides > 1 are not supported with rate > 1"):
        sl.nn.depthwise_conv2d(randn(1, 4, 4, 2), randn(2, 2, 2, 1), [1, 2, 2, 1], "VALID", rate=2)


@pytest.mark.slow
def test_depthwise_second_order_gradients():
    check_gradients(  # the backprop ops are differentiable too
        lambda a, f: sl.gradients(
            sl.reduce_sum(sl.square(sl.nn.depthwise_conv2d(a, f, [1, 1, 1, 1], "VALID"))), [f]
        )[0],
        [randn(1, 3, 3, 2), randn(2, 2, 2, 1)],
    )


def test_separable_conv2d(forward):
    _, got = forward
    close(got["separable"], np_conv2d(np_depthwise(X4, W_DEPTH, padding="SAME"), W_POINT), 1e-12)


@pytest.mark.slow
def test_separable_conv2d_gradient():
    check_gradients(
        lambda a, d, p: sl.nn.separable_conv2d(a, d, p, [1, 1, 1, 1], "VALID"),
        [randn(1, 3, 3, 2), randn(2, 2, 2, 1), randn(1, 1, 2, 2)],
    )


def test_separable_conv2d_error():
    with pytest.raises(ValueError, match="in_channels \\* channel_multiplier = 6"):
        sl.nn.separable_conv2d(X4, W_DEPTH, randn(1, 1, 3, 3), [1, 1, 1, 1], "SAME")


def test_atrous_conv2d(forward):
    _, got = forward
    close(got["atrous"], np_conv2d(X4, W2, padding="SAME", dilations=(2, 2)), 1e-12)


def test_convolution_errors():
    x, w = randn(1, 5, 5, 2), randn(2, 2, 2, 2)
    with pytest.raises(ValueError, match="rate 0 cannot be less than one"):
        sl.nn.atrous_conv2d(x, w, 0, "SAME")
    with pytest.raises(ValueError, match="in conjunction with"):
        sl.nn.convolution(x, w, "SAME", strides=[2, 2], dilation_rate=[2, 2])
    with pytest.raises(ValueError, match="padding"):
        sl.nn.convolution(x, w, "FULL")
    with pytest.raises(NotImplementedError, match="3 spatial"):
        sl.nn.convolution(randn(1, 3, 3, 3, 1), randn(1, 1, 1, 1, 1), "SAME")


# == the EXTENDED variants (slow run) ============================================================
@pytest.mark.slow
def test_extended_variants(forward_all):
    tensors, got = forward_all
    assert isinstance(tensors["moments_kept"], tuple)
    assert tensors["moments_kept"][0].shape == sl.TensorShape([2, 1, 3])
    close(got["moments_kept"][0], X3.mean(1, keepdims=True), 1e-12)
    close(got["moments_kept"][1], X3.var(1, keepdims=True), 1e-12)
    x, mean, var = BN["x"], BN["mean"], BN["var"]
    close(got["batch_normalization_plain"], (x - mean) / np.sqrt(var + 1e-3), 1e-12)
    close(got["l2_dim"], LOGITS / np.linalg.norm(LOGITS, axis=0, keepdims=True), 1e-12)
    close(got["l2_axes"], LOGITS / np.linalg.norm(LOGITS), 1e-12)
    close(got["l2_all"], LOGITS / np.linalg.norm(LOGITS), 1e-12)  # axis None: every axis
    close(got["l2_zeros"], np.zeros(3), 0)  # the epsilon keeps zeros finite
    close(got["weighted_xent_1"], np_sigmoid_xent(TARGETS, LOGITS), 1e-12)  # pos_weight 1
    close(got["poisson"], np.exp(LOG_INPUT) - LOG_INPUT * POISSON_TARGETS, 1e-12)
    close(got["lrn_defaults"], np_lrn(X4, 5, 1.0, 1.0, 0.5), 1e-12)
    ncw = np_conv2d(X3[:, None], W1[None], dilations=(1, 2))[:, 0]
    close(got["conv1d_ncw"], np.transpose(ncw, (0, 2, 1)), 1e-12)
    close(got["conv1d_kwargs"], np_conv2d(X3[:, None], W1[None])[:, 0], 1e-12)
    close(got["depthwise_rate"], np_depthwise(X4, W_DEPTH, dilations=(2, 1)), 1e-12)
    close(got["depthwise_nchw"], np.transpose(np_depthwise(X4, W_DEPTH), (0, 3, 1, 2)), 1e-12)
    close(got["convolution_strided"], np_conv2d(X4, W2, (2, 1)), 1e-12)
    close(got["convolution_dilated"], np_conv2d(X4, W2, padding="SAME", dilations=(1, 2)), 1e-12)
    close(got["convolution_1d"], np_conv2d(X3[:, None], W1[None], dilations=(1, 2))[:, 0], 1e-12)
    logits, targets = _np_sampled(SOFTMAX, False)
    close(got["sampled_softmax_False"], np_softmax_xent(targets, logits), 1e-6)
