"""TF1's `variable_scope_test.py` and `partitioned_variables_test.py` in graph mode, the
behaviours after test_variable_scope_rest_tf1.py: `variable_creator_scope` (order, keyword
arguments, nesting errors), `EagerVariableStore` in graph mode, control inputs as a list, and a
partitioned variable in a collection saved with a meta graph and found again by its name."""

import os

import numpy as np
import pytest

import sluice as sl
from sluice.python.ops import variable_scope


def test_innermost_creator_runs_first_and_may_change_the_arguments():
    names = []

    def creator_a(next_creator, **kwargs):
        names.append(kwargs.get("name", ""))
        return next_creator(**kwargs)

    def creator_b(next_creator, **kwargs):
        kwargs["name"] = "forced_name"
        return next_creator(**kwargs)

    with sl.variable_creator_scope(creator_a):
        with sl.variable_creator_scope(creator_b):
            v = sl.Variable(1.0, name="one_name")
    assert names == ["forced_name"]
    assert v.name == "forced_name:0"
    w = sl.Variable(2.0, name="after")  # no creator outside the scopes
    assert names == ["forced_name"] and w.name == "after:0"


def test_get_variable_passes_synchronization_and_aggregation_to_creators():
    seen = []

    def creator(next_creator, **kwargs):
        seen.append((kwargs["synchronization"], kwargs["aggregation"]))
        return next_creator(**kwargs)

    with sl.variable_creator_scope(creator):
        sl.get_variable(
            "v",
            [],
            synchronization=sl.VariableSynchronization.ON_WRITE,
            aggregation=sl.VariableAggregation.MEAN,
        )
        sl.Variable(1.0)
    assert seen == [
        (sl.VariableSynchronization.ON_WRITE, sl.VariableAggregation.MEAN),
        (sl.VariableSynchronization.AUTO, sl.VariableAggregation.NONE),
    ]


def test_a_creator_may_build_another_value():
    def doubled(next_creator, **kwargs):
        kwargs["initial_value"] = 2 * kwargs["initial_value"]
        return next_creator(**kwargs)

    with sl.variable_creator_scope(doubled):
        v = sl.Variable(np.float32(3.0))
    with sl.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(v) == 6.0


def test_leaving_creator_scopes_out_of_order_raises():
    def creator(next_creator, **kwargs):
        return next_creator(**kwargs)

    graph = sl.get_default_graph()
    old = graph._variable_creator_stack
    try:
        scope = sl.variable_creator_scope(creator)
        scope.__enter__()
        with sl.variable_creator_scope(creator):
            with pytest.raises(RuntimeError, match="without proper nesting"):
                scope.__exit__(None, None, None)
    finally:
        graph._variable_creator_stack = old
    assert graph.variable_creators() == []


def test_eager_variable_store_in_graph_mode_fills_collections():
    store = variable_scope.EagerVariableStore()
    with store.as_default():
        trainable = sl.get_variable("v1", [], trainable=True)
        not_trainable = sl.get_variable("v2", [], trainable=False)
        concat = sl.get_variable("v3", [], collections=[sl.GraphKeys.CONCATENATED_VARIABLES])
    assert sl.get_collection(sl.GraphKeys.GLOBAL_VARIABLES) == [trainable, not_trainable]
    assert sl.get_collection(sl.GraphKeys.TRAINABLE_VARIABLES) == [trainable, concat]
    assert sl.get_collection(sl.GraphKeys.CONCATENATED_VARIABLES) == [concat]
    assert store.variables() == [trainable, not_trainable, concat]
    assert store.trainable_variables() == [trainable, concat]
    assert store.non_trainable_variables() == [not_trainable]
    with store.as_default(), sl.variable_scope(sl.get_variable_scope(), reuse=True):
        assert sl.get_variable("v1", []) is trainable  # found again in the store


def test_control_inputs_are_a_list():
    c = sl.constant(1.0)
    with sl.control_dependencies([c]):
        d = sl.constant(2.0)
    assert d.op.control_inputs == [c.op]
    assert c.op.control_inputs == []


def test_partitioned_variable_in_a_collection_is_found_after_import_meta_graph(tmp_path):
    prefix = os.path.join(str(tmp_path), "ckpt")
    save_graph = sl.Graph()
    with save_graph.as_default(), sl.Session(graph=save_graph) as sess:
        partitioner = sl.fixed_size_partitioner(5, axis=0)
        with sl.variable_scope("root", partitioner=partitioner):
            v0 = sl.get_variable("v0", dtype=sl.float32, shape=(10, 10))
        sess.run(sl.global_variables_initializer())
        save_graph.get_collection_ref("partvar").append(v0)
        saver = sl.train.Saver()  # builds root/v0 (the concatenation) for the collection
        save_graph.finalize()
        with pytest.warns(UserWarning, match="PartitionedVariable cannot be kept"):
            path = saver.save(sess, prefix)  # the collection itself is left out, as TF1 does
        before = sess.run(save_graph.get_tensor_by_name("root/v0:0"))
    restore_graph = sl.Graph()
    with restore_graph.as_default(), sl.Session(graph=restore_graph) as sess:
        sl.train.import_meta_graph(path + ".meta").restore(sess, path)
        after = sess.run(restore_graph.get_tensor_by_name("root/v0:0"))
    assert before.shape == (10, 10)
    np.testing.assert_array_equal(after, before)
