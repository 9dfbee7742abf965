"""TF1's `variable_scope_test.py` in graph mode, names forwarded from `tf.` to `sl.`.

Left out: eager-only tests (EagerVariableStore, defun), string variables (test_strings_tf1.py
has them), partitioners (another file covers them), and the private variable store object (these
tests call `sl.get_variable`, which is what it serves)."""

import numpy as np
import pytest

import sluice as sl


@pytest.fixture
def sess():
    with sl.Session() as session:
        yield session


def test_get_var():
    # TF1 asks its variable store with reuse=AUTO_REUSE; a scope says the same to get_variable
    with sl.variable_scope(sl.get_variable_scope(), reuse=sl.AUTO_REUSE):
        v = sl.get_variable("v", [1])
        v1 = sl.get_variable("v", [1])
    assert v is v1


def test_resource():
    v1 = sl.get_variable("v", [1], use_resource=True)
    assert isinstance(v1, sl.ResourceVariable)
    assert not isinstance(sl.get_variable("w", [1]), sl.ResourceVariable)


def test_name_exists():
    root = sl.get_variable_scope()
    v = sl.get_variable("v", [1])
    # When reuse is False, we fail when variables are already there.
    with sl.variable_scope(root, reuse=False):
        sl.get_variable("w", [1])  # That's ok.
        with pytest.raises(ValueError):
            sl.get_variable("v", [1])  # That fails.
    # When reuse is True, we fail when variables are new.
    with sl.variable_scope(root, reuse=True):
        assert sl.get_variable("v", [1]) is v  # That's ok.
        with pytest.raises(ValueError):
            sl.get_variable("u", [1])  # That fails.


def test_var_scope_initializer(sess):
    init = sl.constant_initializer(0.3)
    with sl.variable_scope("tower0") as tower:
        with sl.variable_scope("foo", initializer=init):
            v = sl.get_variable("v", [])
            sess.run(sl.variables_initializer([v]))
            np.testing.assert_allclose(sess.run(v.value()), 0.3, rtol=1e-6)
        with sl.variable_scope(tower, initializer=init):
            w = sl.get_variable("w", [])
            sess.run(sl.variables_initializer([w]))
            np.testing.assert_allclose(sess.run(w.value()), 0.3, rtol=1e-6)


def test_var_scope_constraint():
    def constraint(x):
        return 0.0 * x

    with sl.variable_scope("tower1") as tower:
        with sl.variable_scope("foo", constraint=constraint):
            v = sl.get_variable("v", [])
            assert v.constraint is constraint
        with sl.variable_scope(tower, constraint=constraint):
            w = sl.get_variable("w", [])
            assert w.constraint is constraint


def test_var_scope_nesting_error():
    with sl.variable_scope("aa"):
        scope = sl.variable_scope("bb")
        scope.__enter__()
        with sl.variable_scope("cc"):
            with pytest.raises(RuntimeError):
                scope.__exit__(None, None, None)
        scope.__exit__(None, None, None)


def test_var_scope_dtype():
    with sl.variable_scope("tower2") as tower:
        with sl.variable_scope("foo", dtype=sl.float16):
            v = sl.get_variable("v", [])
            assert v.dtype.base_dtype == sl.float16
        with sl.variable_scope(tower, dtype=sl.float16):
            w = sl.get_variable("w", [])
            assert w.dtype.base_dtype == sl.float16


def test_init_from_non_tensor_value(sess):
    v = sl.get_variable("v4", initializer=4, dtype=sl.int32)
    sess.run(sl.variables_initializer([v]))
    np.testing.assert_allclose(sess.run(v.value()), 4)
    w = sl.get_variable("w4", initializer=np.array([1, 2, 3]), dtype=sl.int64)
    sess.run(sl.variables_initializer([w]))
    np.testing.assert_allclose(sess.run(w.value()), [1, 2, 3])
    with pytest.raises(TypeError):
        sl.get_variable("x4", initializer={})


def test_init_from_non_initializer(sess):
    types = [sl.int8, sl.uint8, sl.int16, sl.uint16, sl.int32, sl.int64, sl.bool]
    pairs = []
    for i, dtype in enumerate(types):
        x = sl.get_variable(name="xx%d" % i, shape=(3, 4), dtype=dtype)
        zeros = sl.zeros_initializer(dtype=dtype)
        y = sl.get_variable(name="yy%d" % i, shape=(3, 4), dtype=dtype, initializer=zeros)
        pairs.append((x, y))
    sess.run(sl.global_variables_initializer())
    for x, y in pairs:
        np.testing.assert_array_equal(sess.run(x.value()), sess.run(y.value()))


def test_var_scope_regularizer(sess):
    init = sl.constant_initializer(0.3)

    def regularizer1(v):
        return sl.reduce_mean(v) + 0.1

    def regularizer2(v):
        return sl.reduce_mean(v) + 0.2

    with sl.variable_scope("tower3", regularizer=regularizer1) as tower:
        with sl.variable_scope("foo", initializer=init):
            v = sl.get_variable("v", [])
            sess.run(sl.variables_initializer([v]))
            losses = sl.get_collection(sl.GraphKeys.REGULARIZATION_LOSSES)
            assert len(losses) == 1
            np.testing.assert_allclose(sess.run(losses[0]), 0.4, rtol=1e-6)
        with sl.variable_scope(tower, initializer=init) as vs:
            u = sl.get_variable("u", [])
            vs.set_regularizer(regularizer2)
            w = sl.get_variable("w", [])
            # Next 3 variable not regularized to test disabling regularization.
            x = sl.get_variable("x", [], regularizer=sl.no_regularizer)
            with sl.variable_scope("baz", regularizer=sl.no_regularizer):
                y = sl.get_variable("y", [])
            vs.set_regularizer(sl.no_regularizer)
            z = sl.get_variable("z", [])
            losses = sl.get_collection(sl.GraphKeys.REGULARIZATION_LOSSES)
            assert len(losses) == 3
            sess.run(sl.variables_initializer([u, w, x, y, z]))
            np.testing.assert_allclose(sess.run(losses[0]), 0.4, rtol=1e-6)
            np.testing.assert_allclose(sess.run(losses[1]), 0.4, rtol=1e-6)
            np.testing.assert_allclose(sess.run(losses[2]), 0.5, rtol=1e-6)
        with sl.variable_scope("foo", reuse=True):
            sl.get_variable("v", [])  # "v" is already there, reused
            losses = sl.get_collection(sl.GraphKeys.REGULARIZATION_LOSSES)
            assert len(losses) == 3  # No new loss added.


def test_initialize_from_value(sess):
    init = sl.constant(0.1)
    w = sl.get_variable("v", initializer=init)
    sess.run(sl.variables_initializer([w]))
    np.testing.assert_allclose(sess.run(w.value()), 0.1, rtol=1e-6)
    with pytest.raises(ValueError, match="shape"):
        # We disallow explicit shape specification when initializer is constant.
        sl.get_variable("u", [1], initializer=init)
    with sl.variable_scope("foo", initializer=init):
        # Constant initializer can be passed through scopes if needed.
        v = sl.get_variable("v")
        sess.run(sl.variables_initializer([v]))
        np.testing.assert_allclose(sess.run(v.value()), 0.1, rtol=1e-6)
    # Check that non-float32 initializer creates a non-float32 variable.
    init = sl.constant(1, dtype=sl.int32)
    t = sl.get_variable("t", initializer=init)
    assert t.dtype.base_dtype == sl.int32
    # Raise error if `initializer` dtype and `dtype` are not identical.
    with pytest.raises(ValueError, match="don't match"):
        sl.get_variable("s", initializer=init, dtype=sl.float64)


def test_control_deps(sess):
    v0 = sl.get_variable("v0", [1], initializer=sl.constant_initializer(0))
    with sl.control_dependencies([v0.value()]):
        v1 = sl.get_variable("v1", [1], initializer=sl.constant_initializer(1))
        add = v1 + v0
    # v0 should be uninitialized.
    with pytest.raises(sl.errors.OpError, match="uninitialized"):
        sess.run(v0)
    # We should be able to initialize and run v1 without initializing
    # v0, even if the variable was created with a control dep on v0.
    sess.run(v1.initializer)
    assert sess.run(v1) == 1
    # v0 should still be uninitialized.
    with pytest.raises(sl.errors.OpError, match="uninitialized"):
        sess.run(v0)
    with pytest.raises(sl.errors.OpError, match="uninitialized"):
        sess.run(add)
    # If we initialize v0 we should be able to run 'add'.
    sess.run(v0.initializer)
    sess.run(add)


def test_enable_resource_variables():
    old = sl.resource_variables_enabled()
    try:
        sl.enable_resource_variables()
        assert isinstance(sl.Variable(1.0), sl.ResourceVariable)
        sl.disable_resource_variables()
        assert not isinstance(sl.Variable(1.0), sl.ResourceVariable)
    finally:
        (sl.enable_resource_variables if old else sl.disable_resource_variables)()


def test_control_flow(sess):
    v0 = sl.get_variable("v0", [], initializer=sl.constant_initializer(0))
    var_dict = {}

    # Call get_variable in each of the cond clauses.
    def var_in_then_clause():
        v1 = sl.get_variable("v1", [1], initializer=sl.constant_initializer(1))
        var_dict["v1"] = v1
        return v1 + v0

    def var_in_else_clause():
        v2 = sl.get_variable("v2", [1], initializer=sl.constant_initializer(2))
        var_dict["v2"] = v2
        return v2 + v0

    add = sl.cond(sl.less(v0, 10), var_in_then_clause, var_in_else_clause)
    v1 = var_dict["v1"]
    v2 = var_dict["v2"]
    # We should be able to initialize and run v1 and v2 without initializing
    # v0, even if the variable was created with a control dep on v0.
    sess.run(v1.initializer)
    assert sess.run(v1) == [1]
    sess.run(v2.initializer)
    assert sess.run(v2) == [2]
    # v0 should still be uninitialized.
    with pytest.raises(sl.errors.OpError, match="uninitialized"):
        sess.run(v0)
    # We should not be able to run 'add' yet.
    with pytest.raises(sl.errors.OpError, match="uninitialized"):
        sess.run(add)
    # If we initialize v0 we should be able to run 'add'.
    sess.run(v0.initializer)
    sess.run(add)


def test_get_variable_scope(sess):
    # Test the get_variable_scope() function and setting properties of result.
    init = sl.constant_initializer(0.3)
    with sl.variable_scope("bar"):
        new_init1 = sl.get_variable_scope().initializer
        assert new_init1 is None
        # Check that we can set initializer like this.
        sl.get_variable_scope().set_initializer(init)
        v = sl.get_variable("v", [])
        sess.run(sl.variables_initializer([v]))
        np.testing.assert_allclose(sess.run(v.value()), 0.3, rtol=1e-6)
        # Check that we can set reuse.
        sl.get_variable_scope().reuse_variables()
        with pytest.raises(ValueError):  # Fail, w does not exist yet.
            sl.get_variable("w", [1])
    # Check that the set initializer goes away.
    assert sl.get_variable_scope().initializer is None


def test_var_scope():
    with sl.variable_scope("tower4") as tower:
        assert tower.name == "tower4"
        with sl.name_scope("scope") as sc:
            assert sc == "tower4/scope/"
    with sl.variable_scope("tower5"):
        with sl.variable_scope("bar") as bar:
            assert bar.name == "tower5/bar"
            with sl.name_scope("scope") as sc:
                assert sc == "tower5/bar/scope/"
    with sl.variable_scope("tower6"):
        with sl.variable_scope(tower, reuse=True) as tower_shared:
            assert tower_shared.name == "tower4"
            with sl.name_scope("scope") as sc:
                assert sc == "tower6/tower4/scope/"


def test_var_scope_name_scope():
    with sl.name_scope("testVarScopeNameScope1"):
        with sl.variable_scope("tower") as tower:
            with sl.name_scope("scope2") as sc2:
                assert sc2 == "testVarScopeNameScope1/tower/scope2/"
        with sl.variable_scope(tower):  # Re-entering acts like another "tower".
            with sl.name_scope("scope2") as sc2:
                assert sc2 == "testVarScopeNameScope1/tower_1/scope2/"
        with sl.variable_scope("tower"):  # Re-entering by string acts the same.
            with sl.name_scope("scope2") as sc2:
                assert sc2 == "testVarScopeNameScope1/tower_2/scope2/"
    with sl.name_scope("testVarScopeNameScope2"):
        with sl.variable_scope("tower"):
            with sl.name_scope("scope2") as sc2:
                assert sc2 == "testVarScopeNameScope2/tower/scope2/"
        with sl.variable_scope(tower):
            with sl.name_scope("scope2") as sc2:
                assert sc2 == "testVarScopeNameScope2/tower_1/scope2/"
    root_var_scope = sl.get_variable_scope()
    with sl.name_scope("testVarScopeNameScope3"):
        with sl.variable_scope(root_var_scope):
            with sl.name_scope("scope2") as sc2:
                assert sc2 == "testVarScopeNameScope3/scope2/"


def test_var_scope_original_name_scope():
    with sl.name_scope("scope1"):
        with sl.variable_scope("tower") as tower:
            assert tower.original_name_scope == "scope1/tower/"
            with sl.name_scope("scope2") as sc2:
                assert sc2 == "scope1/tower/scope2/"
    with sl.name_scope("scope2"):
        with sl.variable_scope(tower) as tower1:
            # Re-entering preserves original name scope.
            assert tower1.original_name_scope == "scope1/tower/"
            with sl.name_scope("foo") as sc2:
                assert sc2 == "scope2/tower/foo/"
        # Test re-entering original name scope.
        with sl.name_scope(tower.original_name_scope):
            with sl.name_scope("bar") as sc3:
                assert sc3 == "scope1/tower/bar/"
    with sl.name_scope("scope2"):
        with sl.variable_scope(tower):
            with sl.name_scope(tower.original_name_scope):
                with sl.name_scope("bar") as sc3:
                    assert sc3 == "scope1/tower/bar_1/"


def test_var_scope_object_reuse():
    with sl.variable_scope("jump", reuse=True) as scope:
        vs = scope
    with sl.variable_scope(vs) as jump:
        assert jump.reuse
    with sl.variable_scope(vs, reuse=True) as jump_reuse:
        assert jump_reuse.reuse
    with sl.variable_scope(vs, reuse=False) as jump_no_reuse:
        assert jump_no_reuse.reuse  # Inherited, cannot be undone.
    with sl.variable_scope("jump", reuse=False) as scope:
        vs = scope
    with sl.variable_scope(vs) as jump:
        assert not jump.reuse
    with sl.variable_scope(vs, reuse=True) as jump_reuse:
        assert jump_reuse.reuse
    with sl.variable_scope(vs, reuse=False) as jump_no_reuse:
        assert not jump_no_reuse.reuse


def test_var_scope_get_or_create_reuse(sess):
    def test_value(value):
        x = sl.constant(value)
        with sl.variable_scope("testVarScopeGetOrCreateReuse_bar", reuse=sl.AUTO_REUSE):
            _ = sl.assign(sl.get_variable("var", []), x)
        with sl.variable_scope("testVarScopeGetOrCreateReuse_bar", reuse=sl.AUTO_REUSE):
            _ = sl.get_variable("var", [])
        assert sess.run(x) == value

    test_value(42.0)  # Variable is created.
    test_value(13.0)  # Variable is reused hereafter.
    test_value(17.0)


def test_var_op_scope():
    with sl.name_scope("testVarOpScope1"):
        with sl.variable_scope("tower", "default", []):
            assert sl.get_variable("w", []).name == "tower/w:0"
            with sl.name_scope("testVarOpScope2") as sc2:
                assert sc2 == "testVarOpScope1/tower/testVarOpScope2/"
        with sl.variable_scope("tower", "default", []):
            with pytest.raises(ValueError):
                sl.get_variable("w", [])
            with sl.name_scope("testVarOpScope2") as sc2:
                assert sc2 == "testVarOpScope1/tower_1/testVarOpScope2/"
    with sl.name_scope("testVarOpScope2"):
        with sl.variable_scope(None, "default", []):
            assert sl.get_variable("w", []).name == "default/w:0"
            with sl.name_scope("testVarOpScope2") as sc2:
                assert sc2 == "testVarOpScope2/default/testVarOpScope2/"
        with sl.variable_scope(None, "default", []):
            assert sl.get_variable("w", []).name == "default_1/w:0"
            with sl.name_scope("testVarOpScope2") as sc2:
                assert sc2 == "testVarOpScope2/default_1/testVarOpScope2/"


def test_var_op_scope_unique_names_interleaved_substring_scopes():
    with sl.variable_scope(None, "defaultScope1"):
        with sl.variable_scope(None, "layer"):
            assert sl.get_variable("w", []).name == "defaultScope1/layer/w:0"
    with sl.variable_scope(None, "defaultScope1"):
        with sl.variable_scope(None, "layer"):
            assert sl.get_variable("w", []).name == "defaultScope1_1/layer/w:0"
    with sl.variable_scope(None, "defaultScope"):
        with sl.variable_scope(None, "layer"):
            assert sl.get_variable("w", []).name == "defaultScope/layer/w:0"
    with sl.variable_scope(None, "defaultScope1"):
        with sl.variable_scope(None, "layer"):
            assert sl.get_variable("w", []).name == "defaultScope1_2/layer/w:0"
