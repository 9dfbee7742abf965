"""Proof: a TF1 program with a partitioned embedding trains, saves, and its checkpoint restores
into another partitioning and into a plain variable with the same predictions."""

import numpy as np
import pytest

import sluice as sl

VOCAB, DIM = 23, 4


def _model(partitioner):
    ids = sl.placeholder(sl.int32, [None, 3], name="ids")
    with sl.variable_scope("model"):
        emb = sl.get_variable(
            "embedding", [VOCAB, DIM], partitioner=partitioner,
            initializer=sl.random_uniform_initializer(-0.5, 0.5, seed=1),
        )  # fmt: skip
        w = sl.get_variable("w", [DIM, 1], initializer=sl.constant_initializer(0.3))
    features = sl.reduce_mean(sl.nn.embedding_lookup(emb, ids, partition_strategy="div"), 1)
    return ids, emb, w, sl.matmul(features, w)


def _data(n=16, seed=0):
    rng = np.random.RandomState(seed)
    ids = rng.randint(0, VOCAB, size=[n, 3]).astype(np.int32)
    return ids, (ids.sum(1, keepdims=True) % 5).astype(np.float32)


@pytest.mark.parametrize(
    "engine", [pytest.param("interpreted", marks=pytest.mark.slow), "compiled"]
)  # ~4-6 s of CPU each
def test_train_save_restore_into_other_partitionings(tmp_path, engine):
    config = sl.SessionConfig(engine=engine)
    ids_val, y_val = _data()
    with sl.Graph().as_default():
        ids, emb, w, pred = _model(sl.fixed_size_partitioner(3))
        y = sl.placeholder(sl.float32, [None, 1])
        loss = sl.reduce_mean(sl.square(pred - y))
        train = sl.train.AdagradOptimizer(0.5).minimize(loss)
        with sl.Session(config=config) as sess:
            sess.run(sl.global_variables_initializer())
            first = sess.run(loss, {ids: ids_val, y: y_val})
            for _ in range(8):
                sess.run(train, {ids: ids_val, y: y_val})
            last = sess.run(loss, {ids: ids_val, y: y_val})
            expected = sess.run(pred, {ids: ids_val})
            path = sl.train.Saver().save(sess, str(tmp_path / "model"), global_step=8)
    assert last < first
    with sl.Graph().as_default():  # the whole training state, into 2 parts
        ids, emb, w, pred = _model(sl.fixed_size_partitioner(2))
        y = sl.placeholder(sl.float32, [None, 1])
        opt = sl.train.AdagradOptimizer(0.5)
        opt.minimize(sl.reduce_mean(sl.square(pred - y)))
        slots = [opt.get_slot(v, "sum_of_squares") for v in emb]
        infos = [s._save_slice_info for s in slots]
        assert [i.full_name for i in infos] == ["Adagrad/model/embedding/sum_of_squares"] * 2
        with sl.Session(config=config) as sess:
            sl.train.Saver().restore(sess, path)
            np.testing.assert_allclose(sess.run(pred, {ids: ids_val}), expected, atol=1e-6)
            accumulated = np.concatenate(sess.run(slots))
        assert accumulated.shape == (VOCAB, DIM) and (accumulated > 0.1).any()
    for partitioner in (sl.fixed_size_partitioner(2), sl.fixed_size_partitioner(5), None):
        with sl.Graph().as_default():
            ids, emb, w, pred = _model(partitioner)
            # the model's own variables (the optimizer's slots belong to the training graph)
            saver = sl.train.Saver([emb, w])
            with sl.Session(config=config) as sess:
                saver.restore(sess, path)
                np.testing.assert_allclose(sess.run(pred, {ids: ids_val}), expected, atol=1e-6)
