"""TF1's `variable_scope_test.py` in graph mode, the behaviours after those in
test_variable_scope_tf1.py: re-entered scopes and their name scopes, `default_name`,
`auxiliary_name_scope`, `get_local_variable`, a scope's collections, synchronization and
`trainable`, initializer checks, custom getters (nested, with reuse, with keyword arguments),
caching devices, scopes in threads, and `get_dependent_variables`. Names forwarded from `tf.`
to `sl.`; our own tests of the same behaviours.

Left out: eager-only tests, string variables and TF's private `_VariableStore`/`_PartitionInfo`
objects; `variable_creator_scope` and `EagerVariableStore` are in test_variable_creator_tf1.py."""

import threading

import numpy as np
import pytest

import sluice as sl


def _name(var_name, shape=()):
    return sl.get_variable(var_name, list(shape)).name


def _name_scope(name="s2"):
    with sl.name_scope(name) as scope:
        return scope


def test_default_name_numbering_continues_after_reentry():
    with sl.variable_scope("default") as default:
        with sl.variable_scope(None, "layer"):
            assert _name("w") == "default/layer/w:0"
        with sl.variable_scope(None, "layer"):
            assert _name("w") == "default/layer_1/w:0"
        with sl.variable_scope(default):
            pass
        with sl.variable_scope(None, "layer"):
            assert _name("w") == "default/layer_2/w:0"


def test_reentered_outer_scope_with_reuse_gets_a_new_name_scope():
    with sl.variable_scope("outer") as outer:
        with sl.variable_scope("tower", "default", []):
            assert _name("w") == "outer/tower/w:0"
            assert _name_scope() == "outer/tower/s2/"
        with sl.variable_scope(None, "default", []):
            assert _name("w") == "outer/default/w:0"
            assert _name_scope() == "outer/default/s2/"
    with sl.variable_scope(outer, reuse=True):
        with sl.variable_scope("tower", "default", []):
            assert _name("w") == "outer/tower/w:0"
            assert _name_scope() == "outer_1/tower/s2/"
        with sl.variable_scope(None, "default", []):
            assert _name("w") == "outer/default/w:0"
            assert _name_scope() == "outer_1/default/s2/"


def test_get_var_reuse_errors_name_shape_and_dtype():
    with sl.variable_scope("root"):
        with sl.variable_scope("towerA") as tower_a:
            va = sl.get_variable("v", [1])
        assert va.name == "root/towerA/v:0"
        with sl.variable_scope(tower_a, reuse=True):
            assert sl.get_variable("v", [1]) is va
        with pytest.raises(ValueError, match="already exists"):
            with sl.variable_scope("towerA"):
                sl.get_variable("v", [1])
        with sl.variable_scope("towerA", reuse=True):
            assert sl.get_variable("v", [1]) is va
        with sl.variable_scope("foo"), sl.variable_scope("bar"):
            assert _name("v", [1]) == "root/foo/bar/v:0"
            with sl.variable_scope(tower_a, reuse=True):
                assert sl.get_variable("v", [1]) is va
        with pytest.raises(ValueError, match="does not exist"):
            with sl.variable_scope(tower_a, reuse=True), sl.variable_scope("baz"):
                sl.get_variable("v", [1])
        with pytest.raises(ValueError, match="shape"):
            with sl.variable_scope(tower_a, reuse=True):
                sl.get_variable("v", [2])
        with pytest.raises(ValueError, match="dtype"):
            with sl.variable_scope(tower_a, reuse=True):
                sl.get_variable("v", [1], dtype=sl.int32)


@pytest.mark.parametrize("op_scope", [False, True])
def test_outer_scope_reentered_at_top_level(op_scope):
    extra = ("default", []) if op_scope else ()
    with sl.variable_scope("outer") as outer:
        pass
    with sl.variable_scope(outer, *extra):
        assert _name("w") == "outer/w:0"
        assert _name_scope() == "outer_1/s2/"
        with sl.variable_scope("default") if not op_scope else sl.variable_scope(None, "default"):
            assert _name("w") == "outer/default/w:0"
            assert _name_scope() == "outer_1/default/s2/"
    with sl.variable_scope(outer, *extra[:1], reuse=True):
        assert _name("w") == "outer/w:0"
        assert _name_scope() == "outer_2/s2/"


def test_outer_scope_reentered_inside_itself():
    with sl.variable_scope("outer") as outer:
        with sl.variable_scope(outer):
            assert _name("w") == "outer/w:0"
            assert _name_scope() == "outer/outer/s2/"
        with sl.variable_scope("default"):
            assert _name("w") == "outer/default/w:0"
        with sl.variable_scope(outer, reuse=True):
            assert _name("w") == "outer/w:0"
            assert _name_scope() == "outer/outer_1/s2/"
        with sl.variable_scope("default", reuse=True):
            assert _name("w") == "outer/default/w:0"
            assert _name_scope() == "outer/default_1/s2/"


def test_reuse_param_and_reuse_variables_inherit():
    with sl.variable_scope("outer") as outer:
        with sl.variable_scope("tower", "default", []):
            sl.get_variable("w", [])
        with sl.variable_scope(None, "default", []):
            sl.get_variable("w", [])
    with sl.variable_scope(outer) as outer:
        with sl.variable_scope("tower", "default", reuse=True):
            assert _name("w") == "outer/tower/w:0"
        outer.reuse_variables()
        with sl.variable_scope(None, "default", []) as inner:
            assert inner.reuse
            assert _name("w") == "outer/default/w:0"
            assert _name_scope() == "outer_1/default/s2/"
    # a scope with only a default name cannot reuse: there is nothing to find
    with pytest.raises(ValueError):
        with sl.variable_scope(None, "default", reuse=True):
            sl.get_variable("w", [])


def test_auxiliary_name_scope_false_opens_no_name_scope():
    with sl.variable_scope("scope", auxiliary_name_scope=False) as scope:
        assert scope.original_name_scope == ""
        assert _name("w") == "scope/w:0"
        assert sl.constant([], name="c").name == "c:0"
    with sl.variable_scope(scope, auxiliary_name_scope=False):
        assert _name("w1") == "scope/w1:0"
        assert sl.constant([], name="c1").name == "c1:0"
    with sl.name_scope("scope"):  # "scope" was never taken as a name scope
        assert sl.constant([], name="c").name == "scope/c:0"
    with sl.variable_scope("outer"):
        with sl.variable_scope("inner", auxiliary_name_scope=False) as inner:
            assert inner.original_name_scope == "outer/"
            assert _name("w") == "outer/inner/w:0"
            assert sl.constant([], name="c").name == "outer/c:0"
        with sl.name_scope("inner"):
            assert sl.constant([], name="c").name == "outer/inner/c:0"


def test_auxiliary_name_scope_false_with_default_name_and_root():
    with sl.variable_scope(None, default_name="default", auxiliary_name_scope=False) as s:
        assert s.original_name_scope == ""
        assert _name("w") == "default/w:0"
        assert sl.constant([], name="c").name == "c:0"
    root = sl.get_variable_scope()
    with sl.variable_scope("outer"):
        with sl.variable_scope(root, auxiliary_name_scope=False) as inner:
            assert inner.original_name_scope == ""
            assert _name("w1") == "w1:0"
            assert sl.constant([], name="c1").name == "outer/c1:0"


def test_auxiliary_name_scope_must_be_a_bool():
    for scope_args in ((None, "scope"), ("scope",)):
        with pytest.raises(TypeError, match="auxiliary_name_scope"):
            with sl.variable_scope(*scope_args, auxiliary_name_scope="invalid"):
                pass
    with sl.variable_scope("scope") as scope:
        pass
    with pytest.raises(TypeError, match="auxiliary_name_scope"):
        with sl.variable_scope(scope, auxiliary_name_scope="invalid"):
            pass


def test_reentering_through_original_name_scope_avoids_collisions():
    with sl.variable_scope("outer"):
        with sl.variable_scope("inner") as inner:
            pass
    with sl.variable_scope("another"):
        with sl.variable_scope(inner, auxiliary_name_scope=False) as scope:
            with sl.name_scope(scope.original_name_scope):
                assert _name("w1") == "outer/inner/w1:0"
                assert sl.constant([], name="c1").name == "outer/inner/c1:0"
            with sl.name_scope("inner"):
                assert sl.constant([], name="c").name == "another/inner/c:0"


def test_get_local_variable():
    with sl.variable_scope("outer") as outer:
        with sl.variable_scope(outer, "default", []):
            local = sl.get_local_variable("w", [], collections=["foo"])
    assert local.name == "outer/w:0"
    assert local in sl.get_collection(sl.GraphKeys.LOCAL_VARIABLES)
    assert local in sl.get_collection("foo")
    assert local not in sl.get_collection(sl.GraphKeys.TRAINABLE_VARIABLES)
    assert local not in sl.global_variables()
    with sl.variable_scope(outer, "default", reuse=True):
        assert sl.get_local_variable("w", []) is local
    # get_variable and get_local_variable take the same arguments
    import inspect

    params = list(inspect.signature(sl.get_variable).parameters)
    assert list(inspect.signature(sl.get_local_variable).parameters) == params


def test_get_variable_under_a_device_function_sees_variable_ops():
    seen = []

    def device_fn(op):
        if op.type in ("Variable", "VariableV2", "VarHandleOp"):
            seen.append((op.name, op.get_attr("dtype")))
        return "/cpu:0"

    with sl.device(device_fn):
        sl.get_variable("x", (10, 20))
        sl.get_variable("y", dtype=sl.int64, initializer=np.arange(7))
    assert seen == [("x", sl.float32), ("y", sl.int64)]


def test_scope_collections_and_variable_lists():
    sl.get_variable("a", [])
    sl.get_variable("b", [], trainable=False)
    sl.get_local_variable("loc", [])
    with sl.variable_scope("foo_") as s1:
        sl.get_variable("a", [])
        sl.get_variable("b", [], trainable=False)
    with sl.variable_scope("foo") as s2:
        sl.get_variable("a", [])
        sl.get_local_variable("loc", [])
    names = lambda vs: [v.name for v in vs]  # noqa: E731
    # the prefix is the scope's name and a slash: "foo" does not hold "foo_/a"
    assert names(s1.trainable_variables()) == ["foo_/a:0"]
    assert names(s1.global_variables()) == ["foo_/a:0", "foo_/b:0"]
    assert names(s2.get_collection(sl.GraphKeys.GLOBAL_VARIABLES)) == ["foo/a:0"]
    assert names(s2.local_variables()) == ["foo/loc:0"]
    root = sl.get_variable_scope()
    assert names(root.trainable_variables()) == ["a:0", "foo_/a:0", "foo/a:0"]
    assert names(root.local_variables()) == ["loc:0", "foo/loc:0"]


@pytest.mark.parametrize("make", ["get_variable", "Variable"])
def test_synchronization_on_read_makes_variables_not_trainable(make):
    def new(name, **kwargs):
        if make == "Variable":
            return sl.Variable(1.0, name=name, **kwargs)
        return sl.get_variable(name, [], **kwargs)

    sync = sl.VariableSynchronization
    with sl.variable_scope("foo") as scope:
        new("b")
        new("c", trainable=False)
        new("d", synchronization=sync.ON_READ)
        assert [v.name for v in scope.trainable_variables()] == ["foo/b:0"]
        new("e", synchronization=sync.ON_READ, trainable=True)
        new("f", synchronization=sync.ON_WRITE)
        assert [v.name for v in scope.trainable_variables()] == ["foo/b:0", "foo/e:0", "foo/f:0"]
    with pytest.raises(ValueError, match="Invalid variable synchronization"):
        sl.get_variable("g", [], synchronization="sometimes")


def test_initializers_without_arguments_and_invalid_ones():
    with sl.Session() as sess:
        v = sl.get_variable("no_args", initializer=lambda: [2.0, 3.0])
        w = sl.get_variable("optional", initializer=lambda x=[4.0]: x)
        sess.run(sl.global_variables_initializer())
        np.testing.assert_allclose(sess.run(v), [2.0, 3.0])
        np.testing.assert_allclose(sess.run(w), [4.0])
    with pytest.raises(ValueError, match="The initializer passed is not valid"):
        sl.get_variable("foo", initializer=lambda x: [2])


def test_underscore_is_not_a_valid_scope_name_in_a_nested_graph():
    with sl.Graph().as_default(), sl.Graph().as_default():
        with pytest.raises(ValueError, match="'_' is not a valid scope name"):
            with sl.variable_scope("_"):
                pass


def test_custom_getter_not_callable():
    with pytest.raises(ValueError, match="custom_getter .* not callable:"):
        with sl.variable_scope("scope0", custom_getter=3):
            sl.get_variable("name0")
    with pytest.raises(ValueError, match="custom_getter .* not callable:"):
        sl.get_variable("name0", custom_getter=3)


def test_identity_custom_getter_has_no_side_effects():
    called = []

    def getter(getter, *args, **kwargs):  # TF1 passes the next getter as `getter=`
        called.append(kwargs["name"])
        return getter(*args, **kwargs)

    with sl.variable_scope("scope", custom_getter=getter) as scope:
        v = sl.get_variable("v", [1])
    with sl.variable_scope(scope, reuse=True):
        v2 = sl.get_variable("v", [1])  # the scope keeps its getter
    with sl.variable_scope("new") as new:
        v3 = sl.get_variable("v3", [1])
    with sl.variable_scope(new, reuse=True, custom_getter=getter):
        v4 = sl.get_variable("v3", [1])
    assert v is v2 and v3 is v4
    assert called == ["scope/v", "scope/v", "new/v3"]


def test_custom_getter_sees_synchronization_aggregation_and_reuse():
    seen = []

    def getter(getter, *args, **kwargs):
        seen.append((kwargs["synchronization"], kwargs["aggregation"], kwargs["reuse"]))
        var = getter(*args, **kwargs)
        return sl.identity(var, name="reused" if kwargs["reuse"] else "not_reused")

    with sl.variable_scope("scope", custom_getter=getter) as scope:
        v = sl.get_variable("v", [1])
        sl.get_variable(
            "v1",
            [1],
            synchronization=sl.VariableSynchronization.ON_READ,
            aggregation=sl.VariableAggregation.MEAN,
        )
    with sl.variable_scope(scope, reuse=True):
        v2 = sl.get_variable("v", [1])
    assert (v.name, v2.name) == ("not_reused:0", "reused:0")
    sync, agg = sl.VariableSynchronization, sl.VariableAggregation
    assert seen == [
        (sync.AUTO, agg.NONE, False),
        (sync.ON_READ, agg.MEAN, False),
        (sync.AUTO, agg.NONE, True),
    ]


def test_nested_custom_getters_compose_outermost_last():
    def sum_getter(getter, name, *args, **kwargs):
        a = getter(f"{name}/sum_0", *args, **kwargs)
        b = getter(f"{name}/sum_1", *args, **kwargs)
        with sl.name_scope("sum_getter"):
            return a + b

    def prod_getter(getter, name, *args, **kwargs):
        a = getter(f"{name}/prod_0", *args, **kwargs)
        b = getter(f"{name}/prod_1", *args, **kwargs)
        with sl.name_scope("prod_getter"):
            return a * b

    with sl.variable_scope("p", custom_getter=prod_getter):
        with sl.variable_scope("s", custom_getter=sum_getter):
            v = sl.get_variable("v", [1, 2])
    parts = sl.trainable_variables()
    assert [p.name for p in parts] == [
        f"p/s/v/sum_{i}/prod_{j}:0" for i in range(2) for j in range(2)
    ]
    assert v.shape.as_list() == [1, 2]
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        a, b, c, d = sess.run(parts)
        np.testing.assert_allclose(sess.run(v), a * b + c * d, rtol=1e-6)


def test_caching_device_places_reads():
    with sl.variable_scope("tower"):
        with sl.variable_scope("caching", caching_device="/cpu:0"):
            v = sl.get_variable("v", [])
            assert v.value().device == "/device:CPU:0"
            assert sl.get_variable_scope().caching_device == "/cpu:0"
            with sl.variable_scope("child"):
                w = sl.get_variable("w", [])
                assert w.value().device == "/device:CPU:0"
            with sl.variable_scope("other", caching_device="/job:moo"):
                assert sl.get_variable("x", []).value().device.startswith("/job:moo")
    assert sl.get_variable("plain", []).value().device == ""
    with sl.Session() as sess:
        sess.run(sl.variables_initializer([v]))
        np.testing.assert_allclose(sess.run(v.value() * 0.0), 0.0)


def test_scopes_are_per_thread():
    results = {}
    graph = sl.get_default_graph()
    entered = threading.Event()
    release = threading.Event()

    def first():
        with graph.as_default(), sl.variable_scope("foo"):
            entered.set()
            release.wait(10)
            results["first"] = sl.get_variable("v", []).name

    def second():
        entered.wait(10)
        with graph.as_default(), sl.variable_scope("bar"):
            results["second"] = sl.get_variable("v", []).name
        release.set()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {"first": "foo/v:0", "second": "bar/v:0"}


def test_get_dependent_variables():
    get_dependent_variables = sl.python.ops.custom_gradient.get_dependent_variables
    v = sl.Variable(2.0, name="v")
    w = sl.get_variable("w", [])
    u = sl.get_variable("unused", [])
    x = sl.placeholder(sl.float32, [])
    h = x * v
    y = h + sl.reduce_sum(w)
    assert [a.op.name for a in get_dependent_variables([x], [y])] == ["v", "w"]
    # the walk stops at the inputs: v is read before h
    assert get_dependent_variables([h], [y]) == [w]
    assert get_dependent_variables(x, x) == []
    del u
