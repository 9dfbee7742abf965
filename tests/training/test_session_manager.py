"""SessionManager (prepare, recover, wait) and Scaffold (defaults from collections,
copy_from_scaffold, init_fn), as TF 1.15."""

import numpy as np
import pytest

import sluice as sl
from tests.training.linear_model import build, reference_w


def trained_checkpoint(tmp_path, steps=2):
    m = build()
    with m.graph.as_default():
        saver = sl.train.Saver()
        with sl.Session() as sess:
            sess.run(sl.global_variables_initializer())
            for _ in range(steps):
                sess.run(m.train_op)
            return saver.save(sess, str(tmp_path / "model.ckpt"), global_step=m.global_step)


def test_prepare_session_restores_the_latest_checkpoint_or_initializes(tmp_path):
    trained_checkpoint(tmp_path)
    m = build()
    with m.graph.as_default():
        saver = sl.train.Saver()
        manager = sl.train.SessionManager(ready_op=sl.report_uninitialized_variables())
        init = sl.global_variables_initializer()
        sess = manager.prepare_session("", init_op=init, saver=saver, checkpoint_dir=str(tmp_path))
        assert sess.run(m.global_step) == 2
        np.testing.assert_allclose(sess.run(m.w), reference_w(2), rtol=1e-6, atol=1e-6)
        calls = []
        fresh = manager.prepare_session(
            "",
            init_op=init,
            saver=saver,
            checkpoint_dir=str(tmp_path / "empty"),
            init_fn=calls.append,
        )
        assert fresh.run(m.global_step) == 0 and calls == [fresh]
        with pytest.raises(RuntimeError, match="no init_op or init_fn or local_init_op"):
            manager.prepare_session("", saver=saver)
        with pytest.raises(RuntimeError, match="Variables not initialized: w, global_step"):
            manager.prepare_session("", init_op=sl.no_op())
        with pytest.raises(ValueError, match="must also pass a ready_op"):
            sl.train.SessionManager(ready_for_local_init_op=sl.report_uninitialized_variables())


def test_recover_session_and_wait_for_session(tmp_path):
    path = trained_checkpoint(tmp_path)
    m = build()
    with m.graph.as_default():
        local = sl.get_local_variable("seen", initializer=np.float32(5.0))
        manager = sl.train.SessionManager(
            ready_op=sl.report_uninitialized_variables(),
            local_init_op=local.initializer,
            ready_for_local_init_op=sl.report_uninitialized_variables(sl.global_variables()),
            recovery_wait_secs=0.01,
        )
        saver = sl.train.Saver(sl.global_variables())
        sess, restored = manager.recover_session("", saver=saver, checkpoint_dir=str(tmp_path))
        assert restored and sess.run(m.global_step) == 2 and sess.run(local) == 5.0
        sess, restored = manager.recover_session(
            "", saver=saver, checkpoint_filename_with_path=path
        )
        assert restored
        sess, restored = manager.recover_session(
            "", saver=saver, checkpoint_dir=str(tmp_path / "none")
        )
        assert not restored
        with pytest.raises(sl.errors.FailedPreconditionError, match="uninitialized value w"):
            sess.run(m.w)  # nothing restored, nothing initialized
        with pytest.raises(sl.errors.DeadlineExceededError, match="not ready after waiting"):
            manager.wait_for_session("", max_wait_secs=0.03)


def test_scaffold_builds_its_defaults_once_and_picks_them_from_collections():
    m = build()
    with m.graph.as_default():
        scaffold = sl.train.Scaffold().finalize()
        assert m.graph.finalized
        for key, op in [
            ("init_op", scaffold.init_op),
            ("ready_op", scaffold.ready_op),
            ("local_init_op", scaffold.local_init_op),
            ("ready_for_local_init_op", scaffold.ready_for_local_init_op),
        ]:
            assert m.graph.get_collection(key) == [op]
        assert m.graph.get_collection("savers") == [scaffold.saver]
        assert scaffold.summary_op is None  # no summaries in this graph
        again = sl.train.Scaffold().finalize()
        assert again.init_op is scaffold.init_op and again.saver is scaffold.saver
    m = build()
    with m.graph.as_default():
        sl.add_to_collection("init_op", sl.no_op())
        sl.add_to_collection("init_op", sl.no_op())
        with pytest.raises(
            RuntimeError,
            match='More than one item in the collection "init_op"'
            ".*Scaffold\\(init_op=item to use\\)",
        ):
            sl.train.Scaffold().finalize()


def test_scaffold_init_fn_and_copy_from_scaffold():
    m = build()
    with m.graph.as_default():
        load = sl.assign(m.w, np.ones((2, 1), np.float32))
        calls = []

        def init_fn(scaffold, session):
            calls.append(scaffold)
            session.run(load)

        base = sl.train.Scaffold(init_fn=init_fn, init_feed_dict={})
        copy = sl.train.Scaffold(copy_from_scaffold=base, summary_op=sl.constant(1.0))
        assert copy.init_feed_dict == {} and copy.summary_op is not None
        with sl.train.SingularMonitoredSession(scaffold=copy) as sess:
            np.testing.assert_array_equal(sess.run(m.w), np.ones((2, 1)))
        assert calls == [copy]  # bound to the scaffold that runs it
        with pytest.raises(TypeError, match="copy_from_scaffold is not a Scaffold"):
            sl.train.Scaffold(copy_from_scaffold=object())
