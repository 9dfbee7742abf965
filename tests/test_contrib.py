"""sl.contrib: contrib.rnn names, legacy_seq2seq's decoder and losses, seq2seq.sequence_loss."""

import numpy as np
import pytest

import sluice as sl
from sluice import cells

B, T, V = 3, 4, 5
RNG = np.random.default_rng(0)
LOGITS = RNG.normal(size=[B, T, V])
TARGETS = RNG.integers(0, V, size=[B, T]).astype(np.int32)
WEIGHTS = np.array([[1.0, 1.0, 0.5, 0.0], [1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])


def numpy_xent(logits, targets):
    """Sparse softmax cross-entropy over the last axis."""
    shifted = logits - logits.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    return -np.take_along_axis(log_probs, targets[..., None], -1)[..., 0]


def numpy_seq2seq_loss(avg_time, avg_batch, sum_time, sum_batch):
    """TF1 contrib.seq2seq.sequence_loss, written out case by case."""
    loss = numpy_xent(LOGITS, TARGETS) * WEIGHTS
    nonzero = (WEIGHTS != 0).astype(float)
    if avg_time and avg_batch:
        return loss.sum() / (WEIGHTS.sum() + 1e-12)
    if sum_time and sum_batch:
        return loss.sum() / nonzero.sum() if nonzero.sum() else 0.0
    if avg_time or avg_batch:
        axis = 0 if avg_batch else 1
        return loss.sum(axis) / (WEIGHTS.sum(axis) + 1e-12)
    if sum_time or sum_batch:
        axis = 0 if sum_batch else 1
        count = nonzero.sum(axis)
        return np.where(count > 0, loss.sum(axis) / np.maximum(count, 1), 0.0)
    return loss


def _run(fetches, feed=None):
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        return sess.run(fetches, feed)


def test_contrib_rnn_names_the_same_cells_and_functions_as_nn():
    for name in (
        "BasicRNNCell",
        "BasicLSTMCell",
        "LSTMCell",
        "GRUCell",
        "MultiRNNCell",
        "DropoutWrapper",
        "ResidualWrapper",
        "DeviceWrapper",
        "LSTMStateTuple",
        "RNNCell",
    ):
        assert getattr(sl.contrib.rnn, name) is getattr(sl.nn.rnn_cell, name)
    for name in (
        "static_rnn",
        "static_bidirectional_rnn",
        "dynamic_rnn",
        "bidirectional_dynamic_rnn",
    ):
        assert getattr(sl.contrib.rnn, name) is getattr(sl.nn, name)
    state = sl.contrib.rnn.LSTMStateTuple(c=1, h=2)
    assert (state.c, state.h) == (1, 2)


FLAGS = [  # (average_across_timesteps, average_across_batch, sum_over_timesteps, sum_over_batch)
    (True, True, False, False),
    (True, False, False, False),
    (False, True, False, False),
    (False, False, False, False),
    (False, False, True, True),
    (False, False, True, False),
    (False, False, False, True),
    (True, False, False, True),
    (False, True, True, False),
]


@pytest.fixture(scope="module")
def seq2seq_losses():
    """Every reduction of one sequence_loss graph, run in one session."""
    g = sl.Graph()
    with g.as_default():
        logits, targets = sl.constant(LOGITS), sl.constant(TARGETS)
        weights = sl.placeholder(sl.float64, [B, None])
        losses = [
            sl.contrib.seq2seq.sequence_loss(logits, targets, weights, *flags) for flags in FLAGS
        ]
        mean_loss = losses[0]
        grad = sl.gradients(mean_loss, logits)[0]
        with sl.Session(graph=g) as sess:
            return sess.run((losses, grad), {weights: WEIGHTS})


@pytest.mark.parametrize("index", range(len(FLAGS)), ids=[str(f) for f in FLAGS])
def test_seq2seq_sequence_loss_matches_tf1_for_every_reduction(seq2seq_losses, index):
    got = seq2seq_losses[0][index]
    want = numpy_seq2seq_loss(*FLAGS[index])
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-12)


def test_seq2seq_sequence_loss_gradient_is_weighted_softmax_minus_one_hot(seq2seq_losses):
    probs = np.exp(LOGITS) / np.exp(LOGITS).sum(-1, keepdims=True)
    one_hot = np.eye(V)[TARGETS]
    want = (probs - one_hot) * WEIGHTS[..., None] / (WEIGHTS.sum() + 1e-12)
    np.testing.assert_allclose(seq2seq_losses[1], want, rtol=1e-6, atol=1e-12)


def test_seq2seq_sequence_loss_takes_a_custom_loss_function():
    seen = {}

    def loss_fn(labels, logits):
        seen["shapes"] = (labels.shape.as_list(), logits.shape.as_list())
        return sl.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits) * 2.0

    loss = sl.contrib.seq2seq.sequence_loss(
        sl.constant(LOGITS),
        sl.constant(TARGETS),
        sl.constant(WEIGHTS),
        softmax_loss_function=loss_fn,
    )
    assert seen["shapes"] == ([B * T], [B * T, V])
    np.testing.assert_allclose(
        _run(loss), 2 * numpy_seq2seq_loss(True, True, False, False), rtol=1e-6
    )


@pytest.mark.parametrize(
    "shapes, flags, match",
    [
        (([B, T], [B, T], [B, T]), {}, "Logits must be a"),
        (([B, T, V], [B, T, 1], [B, T]), {}, "Targets must be a"),
        (([B, T, V], [B, T], [B * T]), {}, "Weights must be a"),
        (([B, T, V], [B, T], [B, T]), {"sum_over_timesteps": True}, "average_across_timesteps"),
        (([B, T, V], [B, T], [B, T]), {"sum_over_batch": True}, "average_across_batch"),
    ],
    ids=["logits-rank", "targets-rank", "weights-rank", "time-flags", "batch-flags"],
)
def test_seq2seq_sequence_loss_rejects_bad_arguments(shapes, flags, match):
    logits, targets, weights = (sl.zeros(s) for s in shapes)
    with pytest.raises(ValueError, match=match):
        sl.contrib.seq2seq.sequence_loss(logits, sl.cast(targets, sl.int32), weights, **flags)


def _steps(array):
    return [sl.constant(array[:, t]) for t in range(T)]


@pytest.mark.parametrize("average_across_timesteps", [True, False])
def test_legacy_sequence_losses_match_numpy(average_across_timesteps):
    per_example = sl.contrib.legacy_seq2seq.sequence_loss_by_example(
        _steps(LOGITS), _steps(TARGETS), _steps(WEIGHTS), average_across_timesteps
    )
    scalars = [
        sl.contrib.legacy_seq2seq.sequence_loss(
            _steps(LOGITS), _steps(TARGETS), _steps(WEIGHTS), average_across_timesteps, over_batch
        )
        for over_batch in (True, False)
    ]
    got, (mean, total) = _run((per_example, scalars))
    want = (numpy_xent(LOGITS, TARGETS) * WEIGHTS).sum(1)
    if average_across_timesteps:
        want = want / (WEIGHTS.sum(1) + 1e-12)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(total, want.sum(), rtol=1e-6)
    np.testing.assert_allclose(mean, want.sum() / B, rtol=1e-6)


def test_legacy_sequence_loss_by_example_takes_a_loss_function_and_checks_lengths():
    def loss_fn(labels, logits):  # dense labels: the function gets them as given
        return sl.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)

    one_hot = np.eye(V)[TARGETS]
    loss = sl.contrib.legacy_seq2seq.sequence_loss_by_example(
        _steps(LOGITS), _steps(one_hot), _steps(WEIGHTS), softmax_loss_function=loss_fn
    )
    want = (numpy_xent(LOGITS, TARGETS) * WEIGHTS).sum(1) / (WEIGHTS.sum(1) + 1e-12)
    np.testing.assert_allclose(_run(loss), want, rtol=1e-6, atol=1e-12)
    with pytest.raises(ValueError, match="must be the same 4, 3, 4"):
        sl.contrib.legacy_seq2seq.sequence_loss_by_example(
            _steps(LOGITS), _steps(TARGETS), _steps(WEIGHTS)[:3]
        )


def test_rnn_decoder_feeds_its_own_outputs_back_through_loop_function():
    x0 = sl.constant(RNG.normal(size=[B, 2]))
    never_fed = sl.placeholder(sl.float64, [B, 2])  # read only when there is no loop_function
    cell = cells.BasicRNNCell(2)
    h0 = sl.constant(RNG.normal(size=[B, 2]))
    calls = []

    def loop_function(prev, i):
        calls.append(i)
        return prev * 2.0

    outputs, state = sl.contrib.legacy_seq2seq.rnn_decoder(
        [x0, never_fed, never_fed], h0, cell, loop_function=loop_function
    )
    assert calls == [1, 2]
    assert [v.op.name for v in sl.global_variables()] == [
        "rnn_decoder/basic_rnn_cell/kernel",
        "rnn_decoder/basic_rnn_cell/bias",
    ]
    by_hand, h, x = [], h0, x0
    for _ in range(3):
        out, h = cell(x, h)
        by_hand.append(out)
        x = out * 2.0
    got, got_state, want = _run((outputs, state, by_hand))
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(got_state, got[-1], rtol=1e-12)


def test_rnn_decoder_without_loop_function_is_static_rnn_from_the_initial_state():
    xs = [sl.constant(v) for v in RNG.normal(size=[T, B, 2])]
    cell = cells.GRUCell(3)
    h0 = sl.constant(RNG.normal(size=[B, 3]))
    outputs, state = sl.contrib.legacy_seq2seq.rnn_decoder(xs, h0, cell)
    static, static_state = sl.nn.static_rnn(cell, xs, initial_state=h0)
    got, got_state, want, want_state = _run((outputs, state, static, static_state))
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(got_state, want_state, rtol=1e-12)
    with pytest.raises(ValueError, match="must not be empty"):
        sl.contrib.legacy_seq2seq.rnn_decoder([], h0, cell)


# -- sl.nn.xw_plus_b and sl.nn.embedding_lookup, which programs of the contrib era use ---------


def test_xw_plus_b_is_matmul_plus_bias_with_its_gradient():
    x, w, b = RNG.normal(size=[B, 4]), RNG.normal(size=[4, 2]), RNG.normal(size=[2])
    xt, wt, bt = sl.constant(x), sl.constant(w), sl.constant(b)
    y = sl.nn.xw_plus_b(xt, wt, bt)
    grads = sl.gradients(sl.reduce_sum(y * y), [xt, wt, bt])
    got, (gx, gw, gb) = _run((y, grads))
    np.testing.assert_allclose(got, x @ w + b, rtol=1e-12)
    dy = 2 * (x @ w + b)
    np.testing.assert_allclose(gx, dy @ w.T, rtol=1e-12)
    np.testing.assert_allclose(gw, x.T @ dy, rtol=1e-12)
    np.testing.assert_allclose(gb, dy.sum(0), rtol=1e-12)
    with pytest.raises(ValueError, match="xw_plus_b: biases must have rank 1"):
        sl.nn.xw_plus_b(xt, wt, sl.constant(np.ones([1, 2])))


def test_embedding_lookup_gathers_rows_and_trains_only_the_rows_it_read():
    table = RNG.normal(size=[6, 3])
    params = sl.Variable(table)
    ids = [[4, 1], [4, 0]]
    rows = sl.nn.embedding_lookup([params], ids)  # a list of one partition is accepted
    assert rows.shape.as_list() == [2, 2, 3]
    step = sl.train.GradientDescentOptimizer(0.5).minimize(sl.reduce_sum(rows))
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        np.testing.assert_allclose(sess.run(rows), table[ids], rtol=1e-12)
        sess.run(step)
        after = sess.run(params)
    uses = np.bincount(np.ravel(ids), minlength=6)[:, None]
    np.testing.assert_allclose(after, table - 0.5 * uses, rtol=1e-12)


def test_embedding_lookup_rejects_what_it_does_not_support():
    # several partitions are tested in tests/partitioned/test_embedding_partitions.py
    params = sl.zeros([4, 2])
    with pytest.raises(ValueError, match="at least one"):
        sl.nn.embedding_lookup([], [0])
    with pytest.raises(ValueError, match="partition_strategy"):
        sl.nn.embedding_lookup(params, [0], partition_strategy="hash")
