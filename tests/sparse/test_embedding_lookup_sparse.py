"""embedding_lookup_sparse and safe_embedding_lookup_sparse, as the embedding_lookup_sparse and
safe_embedding_lookup_sparse parts of TF1's embedding_ops_test.py: every combiner, with and
without weights, against NumPy; the gradient with respect to the table as IndexedSlices and
against central differences."""

import numpy as np
import pytest

import sluice as sl
from sluice.testing import check_gradients
from tests.sparse.conftest import session

VOCAB, DIM = 7, 3
TABLE = np.arange(VOCAB * DIM, dtype=np.float64).reshape(VOCAB, DIM) / 10.0
# rows 0 and 2 have ids, row 1 is empty, row 3 is past the last row with ids
IND = np.array([[0, 0], [0, 1], [0, 2], [2, 0], [2, 1]], np.int64)
IDS = np.array([1, 4, 1, 6, 0], np.int64)
WEIGHTS = np.array([2.0, 0.5, 1.0, 3.0, 1.5])


def expected(combiner, weights):
    rows = IND[:, 0].max() + 1
    w = np.ones(len(IDS)) if weights is None else weights
    out = np.zeros([rows, DIM])
    norm = np.zeros(rows)
    for (r, _), i, wi in zip(IND, IDS, w):
        out[r] += wi * TABLE[i]
        norm[r] += wi if combiner == "mean" else wi**2
    if combiner == "sum":
        return out
    norm = norm if combiner == "mean" else np.sqrt(norm)
    with np.errstate(invalid="ignore", divide="ignore"):
        if weights is None:
            return out / np.maximum(norm, 1)[:, None]
        return out / norm[:, None]


def test_combiners_match_numpy(engine):
    ids = sl.SparseTensor(IND, IDS, [4, 3])
    cases = [(c, w) for c in ("sum", "mean", "sqrtn") for w in (False, True)]
    outs = [
        sl.nn.embedding_lookup_sparse(
            sl.constant(TABLE),
            ids,
            sl.SparseTensor(IND, WEIGHTS, [4, 3]) if weighted else None,
            combiner=combiner,
        )
        for combiner, weighted in cases
    ]
    with session(engine) as sess:
        values = sess.run(outs)
    for (combiner, weighted), out in zip(cases, values):
        np.testing.assert_allclose(
            out,
            expected(combiner, WEIGHTS if weighted else None),
            atol=1e-6,
            err_msg=f"{combiner}, weighted={weighted}",
        )


def test_fed_ids_and_gradient_as_indexed_slices(engine):
    table = sl.Variable(TABLE)
    ids = sl.sparse_placeholder(sl.int64)
    weights = sl.sparse_placeholder(sl.float64)
    out = sl.nn.embedding_lookup_sparse(table, ids, weights, combiner="mean")
    (grad,) = sl.gradients(sl.reduce_sum(out), [table])
    assert isinstance(grad, sl.IndexedSlices)
    feed = {ids: (IND, IDS, [4, 3]), weights: (IND, WEIGHTS, [4, 3])}
    with session(engine, fallback=True) as sess:
        sess.run(sl.global_variables_initializer())
        value, g = sess.run([out, grad], feed)
    np.testing.assert_allclose(value, expected("mean", WEIGHTS), atol=1e-6)
    dense = np.zeros_like(TABLE)
    np.add.at(dense, g.indices, g.values)
    w_sum = {0: 3.5, 2: 4.5}
    manual = np.zeros_like(TABLE)
    for (r, _), i, wi in zip(IND, IDS, WEIGHTS):
        manual[i] += wi / w_sum[r]
    np.testing.assert_allclose(dense, manual, atol=1e-6)
    assert sorted(g.indices.tolist()) == sorted(set(IDS.tolist()))  # the distinct ids, as TF1


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
def test_gradients_against_central_differences(combiner):
    ind = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], np.int64)  # no empty row: no 0/0

    def build(table, weights):
        ids = sl.SparseTensor(ind, np.array([1, 3, 1, 0], np.int64), [2, 2])
        return sl.nn.embedding_lookup_sparse(
            table, ids, sl.SparseTensor(ind, weights, [2, 2]), combiner=combiner
        )

    check_gradients(build, [TABLE[:4, :2], WEIGHTS[:4]])


def test_errors():
    ids = sl.SparseTensor(IND, IDS, [4, 3])
    with pytest.raises(ValueError, match='combiner must be one of "mean", "sqrtn" or "sum"'):
        sl.nn.embedding_lookup_sparse(TABLE, ids, None, combiner="max")
    with pytest.raises(TypeError, match="sp_ids must be SparseTensor"):
        sl.nn.embedding_lookup_sparse(TABLE, IDS, None, combiner="sum")
    with pytest.raises(TypeError, match="sp_weights must be either None or SparseTensor"):
        sl.nn.embedding_lookup_sparse(TABLE, ids, WEIGHTS, combiner="sum")
    with pytest.raises(ValueError, match="Missing embedding_weights"):
        sl.nn.safe_embedding_lookup_sparse([], ids)


def test_params_in_a_list_of_one():
    ids = sl.SparseTensor(IND, IDS, [4, 3])
    out_t = sl.nn.embedding_lookup_sparse([sl.constant(TABLE)], ids, None, combiner="sum")
    with sl.Session() as sess:
        np.testing.assert_allclose(sess.run(out_t), expected("sum", None), atol=1e-6)


@pytest.mark.parametrize("default_id", [None, 3])
def test_safe_lookup_fills_rows_and_drops_invalid(engine, default_id):
    ind = np.array([[0, 0], [0, 1], [2, 0], [3, 0], [3, 1]], np.int64)
    ids = np.array([1, -1, 2, 5, 4], np.int64)
    weights = np.array([1.0, 4.0, 0.0, 2.0, 1.0])
    out_t = sl.nn.safe_embedding_lookup_sparse(
        sl.constant(TABLE),
        sl.SparseTensor(ind, ids, [5, 2]),
        sl.SparseTensor(ind, weights, [5, 2]),
        combiner="mean",
        default_id=default_id,
    )
    with session(engine, fallback=True) as sess:
        out = sess.run(out_t)
    fill = np.zeros(DIM) if default_id is None else TABLE[default_id]
    # row 0: id -1 dropped; row 2: weight 0 dropped (empty); rows 1 and 4 empty
    rows = [TABLE[1], fill, fill, (2 * TABLE[5] + TABLE[4]) / 3, fill]
    np.testing.assert_allclose(out, np.array(rows), atol=1e-6)


def test_safe_lookup_keeps_higher_rank_shape(engine):
    ind = np.array([[0, 0, 0], [0, 1, 0], [1, 1, 1]], np.int64)
    ids = sl.SparseTensor(ind, np.array([1, 2, 3], np.int64), [2, 2, 2])
    out_t = sl.nn.safe_embedding_lookup_sparse(sl.constant(TABLE), ids, combiner="sum")
    assert out_t.shape.as_list() == [2, 2, DIM]
    with session(engine, fallback=True) as sess:
        out = sess.run(out_t)
    expected_rows = np.array([[TABLE[1], TABLE[2]], [np.zeros(DIM), TABLE[3]]])
    np.testing.assert_allclose(out, expected_rows, atol=1e-6)
