"""The proof: a sparse logistic regression fed SparseTensorValues, trained with plain gradient
descent, through `sparse_tensor_dense_matmul` and through `embedding_lookup_sparse`; its loss
falls, and every step's loss and the final weights match the same model computed densely in
NumPy."""

import numpy as np
import pytest

import sluice as sl
from tests.sparse.conftest import session

BATCH, VOCAB, STEPS, LR = 6, 10, 12, 1.0


def batches(seed=0):
    """Per step a batch of sparse binary features and labels from a fixed linear rule: two
    batches (with different numbers of non-zeros) in turn."""
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=VOCAB)
    out = []
    for _ in range(2):
        dense = (rng.random([BATCH, VOCAB]) < 0.3).astype(np.float32)
        dense[np.arange(BATCH), rng.integers(0, VOCAB, BATCH)] = 1.0  # no empty example
        ind = np.argwhere(dense)
        labels = (dense @ truth > 0).astype(np.float32)[:, None]
        out.append((sl.SparseTensorValue(ind, dense[dense != 0], [BATCH, VOCAB]), dense, labels))
    return [out[i % 2] for i in range(STEPS)]


def numpy_losses(data):
    w, b = np.zeros([VOCAB, 1]), 0.0
    losses = []
    for _, x, y in data:
        z = x @ w + b
        p = 1 / (1 + np.exp(-z))
        losses.append(np.mean(np.maximum(z, 0) - z * y + np.log1p(np.exp(-np.abs(z)))))
        grad_z = (p - y) / BATCH
        w, b = w - LR * x.T @ grad_z, b - LR * grad_z.sum()
    return np.array(losses), w


def train(engine, logits_of, fallback, shape=(BATCH, VOCAB)):
    data = batches()
    sp = sl.sparse_placeholder(sl.float32, shape=shape)
    y = sl.placeholder(sl.float32, [None, 1])
    w = sl.Variable(np.zeros([VOCAB, 1], np.float32))
    b = sl.Variable(0.0)
    logits = logits_of(sp, w) + b
    loss = sl.reduce_mean(sl.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits))
    step = sl.train.GradientDescentOptimizer(LR).minimize(loss)
    losses = []
    with session(engine, fallback) as sess:
        sess.run(sl.global_variables_initializer())
        for value, _, labels in data:
            losses.append(sess.run([loss, step], {sp: value, y: labels})[0])
        weights = sess.run(w)
    return np.array(losses), weights, data


def by_matmul(sp, w):
    return sl.sparse_tensor_dense_matmul(sp, w)


def by_embedding(sp, w):
    ids = sl.SparseTensor(sp.indices, sp.indices[:, 1], sp.dense_shape)
    return sl.nn.embedding_lookup_sparse(w, ids, sp, combiner="sum")


@pytest.mark.slow  # 12 training steps per engine and path; the quick check is the test below
@pytest.mark.parametrize(
    "logits_of, fallback", [(by_matmul, False), (by_embedding, True)], ids=["matmul", "embedding"]
)
def test_sparse_logistic_regression_trains_like_numpy(engine, logits_of, fallback):
    losses, weights, data = train(engine, logits_of, fallback)
    expected, expected_w = numpy_losses(data)
    assert losses[-2:].mean() < 0.5 * losses[:2].mean(), losses
    np.testing.assert_allclose(losses, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(weights, expected_w, rtol=1e-5, atol=1e-6)


def test_unknown_dense_shape_runs_in_both_engines(engine, caplog):
    """A sparse_placeholder without a shape feeds its dense shape: the compiled engine cannot
    size the product before the run and runs the step interpreted, saying so."""
    losses, _, data = train(engine, by_matmul, fallback=True, shape=None)
    np.testing.assert_allclose(losses, numpy_losses(data)[0], rtol=1e-5, atol=1e-6)
