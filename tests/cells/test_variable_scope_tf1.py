"""TF1's variable sharing as TF 1.15's variable_scope tests check it: scope defaults
(initializer, regularizer, dtype), get_variable's arguments, custom getters, partitioners,
the error messages, and cells honouring `reuse=`."""

import numpy as np
import pytest

import sluice as sl
from sluice import cells

ENGINES = ["interpreted", "compiled"]


def _session(engine):
    return sl.Session(config=sl.SessionConfig(engine=engine))


# -- the VariableScope object -----------------------------------------------------------------
def test_scope_attributes_and_defaults_at_the_top_and_inside():
    top = sl.get_variable_scope()
    assert (top.name, top.reuse, top.initializer, top.regularizer) == ("", False, None, None)
    assert top.dtype == sl.float32 and top.custom_getter is None and top.partitioner is None
    init = sl.constant_initializer(0.3)
    with sl.variable_scope("outer", initializer=init, dtype=sl.float64) as outer:
        assert isinstance(outer, sl.VariableScope)
        assert (outer.name, outer.original_name_scope, outer.reuse) == ("outer", "outer/", False)
        with sl.variable_scope("inner") as inner:
            assert inner.name == "outer/inner"
            assert inner.original_name_scope == "outer/inner/"
            assert inner.initializer is init and inner.dtype == sl.float64  # inherited
            inner.set_initializer(sl.zeros_initializer())
            assert inner.initializer is not init
        assert sl.get_variable_scope().initializer is init
    with sl.variable_scope("outer"):  # the name scope is new; the variable scope is the same
        assert sl.get_variable_scope().original_name_scope == "outer_1/"
        assert sl.get_variable_scope().initializer is None  # defaults belong to the block


def test_default_names_are_made_unique_and_forgotten_when_the_parent_is_left():
    names = []
    for _ in range(2):
        with sl.variable_scope("model"):
            for _ in range(2):
                with sl.variable_scope(None, default_name="layer") as s:
                    names.append(s.name)
    assert names == ["model/layer", "model/layer_1", "model/layer", "model/layer_1"]


@pytest.mark.parametrize(
    "kwargs, error, phrase",
    [
        ({"name_or_scope": None}, TypeError, "default_name is None"),
        (
            {"name_or_scope": None, "default_name": "d", "reuse": True},
            ValueError,
            "reuse=True cannot be used without a name_or_scope",
        ),
        ({"name_or_scope": "s", "reuse": "yes"}, ValueError, "reuse parameter must be"),
        ({"name_or_scope": 3}, TypeError, "must be a string or VariableScope"),
        ({"name_or_scope": "s", "custom_getter": 3}, ValueError, "not callable"),
        ({"name_or_scope": "s", "auxiliary_name_scope": "no"}, TypeError, "auxiliary_name_scope"),
    ],
)
def test_bad_scope_arguments_raise_tf1_errors(kwargs, error, phrase):
    with pytest.raises(error, match=phrase):
        with sl.variable_scope(**kwargs):
            pass


def test_reentering_a_scope_object_keeps_its_own_reuse_and_defaults():
    with sl.variable_scope("jump", initializer=sl.constant_initializer(2.0)) as jump:
        v = sl.get_variable("v", [1])
    with sl.variable_scope("elsewhere", reuse=True):
        with sl.variable_scope(jump) as again:  # TF1: the enclosing reuse is not inherited
            assert again.name == "jump" and not again.reuse
            assert again.initializer is jump.initializer
            w = sl.get_variable("w", [1])
        with sl.variable_scope(jump, reuse=True) as shared:
            assert shared.reuse is True and sl.get_variable("v") is v
    assert w.name == "jump/w:0"
    assert not jump.reuse  # entered as a copy


def test_auxiliary_name_scope_false_keeps_the_ops_name_scope():
    with sl.variable_scope("scope") as s:
        pass
    with sl.name_scope("ops"):
        with sl.variable_scope(s, auxiliary_name_scope=False) as again:
            c = sl.constant(1.0, name="c")
            v = sl.get_variable("v", [1])
    assert again.original_name_scope == "scope/"
    assert c.op.name == "ops/c" and v.name == "scope/v:0"


def test_values_choose_the_graph():
    other = sl.Graph()
    with other.as_default():
        t = sl.constant(1.0)
    with sl.variable_scope("s", values=[t]):
        v = sl.get_variable("v", [2])
        assert sl.get_default_graph() is other
    assert v.graph is other and sl.get_default_graph() is not other


# -- get_variable and the scope's defaults ------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_scope_initializer_and_dtype_apply_when_get_variable_leaves_them_out(engine):
    with sl.variable_scope("a", initializer=sl.constant_initializer(0.3), dtype=sl.float64):
        w = sl.get_variable("w", [2, 2])
        with sl.variable_scope("b"):
            u = sl.get_variable("u", [3])  # inherited from "a"
            i = sl.get_variable("i", [2], dtype=sl.int32)  # explicit dtype wins; the scope's
            # initializer (0.3) would not fit an int, so give one
            j = sl.get_variable("j", [2], dtype=sl.int32, initializer=sl.zeros_initializer())
        x = sl.get_variable("x", [2], initializer=sl.ones_initializer())  # explicit wins
    assert (w.dtype, u.dtype, x.dtype) == (sl.float64,) * 3
    assert i.dtype == sl.int32 and j.dtype == sl.int32
    with _session(engine) as sess:
        sess.run(sl.variables_initializer([w, u, x, j]))
        got_w, got_u, got_x, got_j = sess.run([w, u, x, j])
    np.testing.assert_allclose(got_w, np.full([2, 2], 0.3), rtol=1e-6)
    np.testing.assert_allclose(got_u, np.full([3], 0.3), rtol=1e-6)
    np.testing.assert_allclose(got_x, np.ones([2]), rtol=1e-6)
    np.testing.assert_array_equal(got_j, [0, 0])


def test_default_initializers_are_tf1s():
    f = sl.get_variable("f", [40, 60])
    n = sl.get_variable("n", [3], dtype=sl.int64)
    b = sl.get_variable("b", [2], dtype=sl.bool)
    with pytest.raises(ValueError, match="An initializer for variable c of complex64 is required"):
        sl.get_variable("c", [2], dtype=sl.complex64)
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        got_f, got_n, got_b = sess.run([f, n, b])
    limit = np.sqrt(6.0 / (40 + 60))  # glorot uniform
    assert np.all(np.abs(got_f) <= limit) and got_f.std() > limit / 4
    np.testing.assert_array_equal(got_n, [0, 0, 0])
    np.testing.assert_array_equal(got_b, [False, False])


@pytest.mark.parametrize("engine", ENGINES)
def test_constant_initializers_give_the_shape_and_dtype(engine):
    from_list = sl.get_variable("from_list", initializer=[[1.0, 2.0], [3.0, 4.0]])
    from_array = sl.get_variable("from_array", initializer=np.arange(3, dtype=np.int32))
    from_tensor = sl.get_variable("from_tensor", initializer=sl.constant([0.5, 1.5], sl.float64))
    from_number = sl.get_variable("from_number", initializer=7.0)
    from_fn = sl.get_variable("from_fn", initializer=lambda: sl.fill([2], 3.0))
    from_class = sl.get_variable("from_class", [2], initializer=sl.ones_initializer)
    assert from_list.shape.as_list() == [2, 2] and from_list.dtype == sl.float32
    assert from_array.shape.as_list() == [3] and from_array.dtype == sl.int32
    assert from_tensor.dtype == sl.float64 and from_number.shape.as_list() == []
    assert from_fn.shape.as_list() == [2]
    with _session(engine) as sess:
        sess.run(sl.global_variables_initializer())
        got = sess.run([from_list, from_array, from_tensor, from_number, from_fn, from_class])
    np.testing.assert_array_equal(got[0], [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(got[1], [0, 1, 2])
    np.testing.assert_array_equal(got[2], [0.5, 1.5])
    assert got[3] == 7.0
    np.testing.assert_array_equal(got[4], [3.0, 3.0])
    np.testing.assert_array_equal(got[5], [1.0, 1.0])


@pytest.mark.parametrize(
    "call, phrase",
    [
        (lambda: sl.get_variable("x", [2], initializer=[1.0, 2.0]), "do not specify shape"),
        (lambda: sl.get_variable("x", [2], initializer=sl.constant([1.0, 2.0])), "do not specify"),
        (
            lambda: sl.get_variable("x", initializer=[1.0], dtype=sl.float64),
            "Initializer type 'float32' and explicit dtype 'float64' don't match",
        ),
        (lambda: sl.get_variable("x"), "must be fully defined"),
        (lambda: sl.get_variable("x", [None, 2]), "must be fully defined"),
    ],
)
def test_get_variable_argument_errors(call, phrase):
    with pytest.raises(ValueError, match=phrase):
        call()


def test_collections_and_trainable():
    default = sl.get_variable("default", [1])
    frozen = sl.get_variable("frozen", [1], trainable=False)
    mine = sl.get_variable("mine", [1], collections=["mine"])
    local = sl.get_variable(
        "local", [1], collections=[sl.GraphKeys.LOCAL_VARIABLES], trainable=False
    )
    assert sl.global_variables() == [default, frozen]
    assert sl.trainable_variables() == [default, mine]
    assert sl.get_collection("mine") == [mine] and sl.local_variables() == [local]
    assert sl.get_variable("r", [1], use_resource=True).name == "r:0"
    assert sl.get_variable("nr", [1], use_resource=False).name == "nr:0"


@pytest.mark.parametrize("engine", ENGINES)
def test_regularizers_fill_regularization_losses(engine):
    def l2(scale):
        return lambda w: scale * sl.reduce_sum(w * w)

    with sl.variable_scope("net", regularizer=l2(0.1)):
        w = sl.get_variable("w", initializer=[1.0, 2.0])
        with sl.variable_scope("inner"):
            u = sl.get_variable("u", initializer=[[3.0]])  # inherited
        b = sl.get_variable("b", initializer=[5.0], regularizer=l2(1.0))  # its own
        sl.get_variable("none", [1], regularizer=lambda w: None)  # None adds nothing
    sl.get_variable("plain", [1])
    losses = sl.get_collection(sl.GraphKeys.REGULARIZATION_LOSSES)
    assert losses == sl.losses.get_regularization_losses() and len(losses) == 3
    assert [t.op.name.split("/Regularizer/")[0] for t in losses] == [
        "net/w",
        "net/inner/u",
        "net/b",
    ]
    assert len(sl.losses.get_regularization_losses(scope="net/inner")) == 1
    total = sl.losses.get_regularization_loss()
    assert total.op.name == "total_regularization_loss"
    with _session(engine) as sess:
        sess.run(sl.global_variables_initializer())
        got = sess.run([total] + losses)
    np.testing.assert_allclose(got[1:], [0.5, 0.9, 25.0], rtol=1e-6)
    np.testing.assert_allclose(got[0], 26.4, rtol=1e-6)
    del w, u, b


def test_regularization_loss_is_zero_without_regularizers():
    with sl.Session() as sess:
        assert sess.run(sl.losses.get_regularization_loss()) == 0.0


# -- custom getters ---------------------------------------------------------------------------
def test_custom_getter_sees_the_arguments_and_may_wrap_the_variable():
    seen = []

    def getter(getter, name, *args, **kwargs):
        seen.append((name, kwargs["shape"], kwargs["dtype"], kwargs["reuse"], kwargs["trainable"]))
        var = getter(name, *args, **kwargs)
        return sl.identity(var, name="reused" if kwargs["reuse"] else "not_reused")

    with sl.name_scope("ignored"):
        with sl.variable_scope("scope", custom_getter=getter) as scope:
            v = sl.get_variable("v", [1])
        with sl.variable_scope(scope, reuse=True):
            v2 = sl.get_variable("v", [1])
    assert v.name == "not_reused:0" and v2.name == "reused:0"  # outside any name scope, as TF1
    assert seen == [
        ("scope/v", [1], sl.float32, False, True),
        ("scope/v", [1], sl.float32, True, True),
    ]
    assert [x.name for x in sl.global_variables()] == ["scope/v:0"]


def test_custom_getter_of_get_variable_and_of_the_scope():
    calls = []

    def getter(getter, *args, **kwargs):
        calls.append(kwargs["name"])
        return getter(*args, **kwargs)

    sl.get_variable("a", [1], custom_getter=getter)
    with pytest.raises(ValueError, match="custom_getter which is not callable"):
        sl.get_variable("b", [1], custom_getter="nope")
    assert calls == ["a"]


@pytest.mark.parametrize("engine", ENGINES)
def test_nested_custom_getters_compose_inner_first(engine):
    def sum_getter(getter, name, *args, **kwargs):
        g0 = getter(f"{name}/sum_0", *args, **kwargs)
        g1 = getter(f"{name}/sum_1", *args, **kwargs)
        return g0 + g1

    def prod_getter(getter, name, *args, **kwargs):
        g0 = getter(f"{name}/prod_0", *args, **kwargs)
        g1 = getter(f"{name}/prod_1", *args, **kwargs)
        return g0 * g1

    with sl.variable_scope("prod_scope", custom_getter=prod_getter):
        with sl.variable_scope("sum_scope", custom_getter=sum_getter):
            with sl.variable_scope("inner_sum_scope", custom_getter=sum_getter):
                v = sl.get_variable("v", [1, 2, 3])
    assert v.shape.as_list() == [1, 2, 3]
    made = sl.trainable_variables()
    template = "prod_scope/sum_scope/inner_sum_scope/v/sum_%d/sum_%d/prod_%d:0"
    assert [x.name for x in made] == [
        template % (i, j, k) for i in range(2) for j in range(2) for k in range(2)
    ]
    with _session(engine) as sess:
        sess.run(sl.global_variables_initializer())
        values = sess.run(made)
        got = sess.run(v)
    want = sum(values[2 * i] * values[2 * i + 1] for i in range(4))  # sums of sums of products
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)  # float32 sums in either order


@pytest.mark.parametrize("engine", ENGINES)
def test_float16_custom_getter_keeps_float32_variables(engine):
    def float32_storage(getter, *args, **kwargs):
        wanted = kwargs["dtype"]
        kwargs["dtype"] = sl.float32
        return sl.cast(getter(*args, **kwargs), wanted)

    x = sl.constant(np.ones([2, 3]), sl.float16)
    with sl.variable_scope("mixed", custom_getter=float32_storage):
        w = sl.get_variable(
            "w", [3, 2], dtype=sl.float16, initializer=sl.constant_initializer(0.25)
        )
    y = sl.matmul(x, w)
    assert w.dtype == sl.float16 and y.dtype == sl.float16
    assert sl.global_variables()[0].dtype == sl.float32
    with _session(engine) as sess:
        sess.run(sl.global_variables_initializer())
        np.testing.assert_allclose(sess.run(y), np.full([2, 2], 0.75), rtol=1e-3)


# -- partitioners -------------------------------------------------------------------------------
def test_partitioners_split_variables_but_not_scalars():
    # the partitioned variables themselves are tested in tests/partitioned/
    part = sl.fixed_size_partitioner(2)
    assert part(sl.TensorShape([4, 3]), dtype=sl.float32) == [2, 1]
    assert sl.min_max_variable_partitioner(max_partitions=4, min_slice_size=8)(
        sl.TensorShape([4, 4]), sl.float32
    ) == [4, 1]
    emb = sl.get_variable("emb", [4, 3], partitioner=part)
    assert [v.name for v in emb] == ["emb/part_0:0", "emb/part_1:0"]
    with sl.variable_scope("sharded", partitioner=part):
        assert sl.get_variable("scalar", []).shape.as_list() == []  # TF1: scalars are whole
        assert len(sl.get_variable("w", [4, 3])) == 2
    with pytest.raises(ValueError, match="Partitioner must be callable"):
        sl.get_variable("bad", [4], partitioner=3)


# -- sharing errors, as TF1 words them -------------------------------------------------------------
def test_sharing_errors_have_tf1_messages():
    with sl.variable_scope("s"):
        sl.get_variable("w", [2])
    with pytest.raises(
        ValueError,
        match=r"Variable s/w already exists, disallowed\. Did you "
        r"mean to set reuse=True or reuse=tf\.AUTO_REUSE",
    ):
        with sl.variable_scope("s"):
            sl.get_variable("w", [2])
    with pytest.raises(
        ValueError,
        match=r"Variable s/x does not exist, or was not created "
        r"with tf\.get_variable\(\)",
    ):
        with sl.variable_scope("s", reuse=True):
            sl.get_variable("x", [2])
    with pytest.raises(
        ValueError,
        match=r"Trying to share variable s/w, but specified shape "
        r"\(3,\) and found shape \(2,\)",
    ):
        with sl.variable_scope("s", reuse=True):
            sl.get_variable("w", [3])
    with pytest.raises(
        ValueError,
        match="Trying to share variable s/w, but specified dtype float64 and found dtype float32",
    ):
        with sl.variable_scope("s", reuse=True):
            sl.get_variable("w", [2], dtype=sl.float64)


def test_auto_reuse_and_reuse_variables():
    def block():
        with sl.variable_scope("block", reuse=sl.AUTO_REUSE) as scope:
            assert scope.reuse == sl.AUTO_REUSE
            return sl.get_variable("v", [1])

    assert block() is block()
    with sl.variable_scope("tied") as scope:
        a = sl.get_variable("a", [1])
        scope.reuse_variables()
        assert scope.reuse is True and sl.get_variable("a", [1]) is a
        with sl.variable_scope("child") as child:
            assert child.reuse is True  # inherited


# -- Variable reads --------------------------------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_read_value_and_initialized_value(engine):
    v = sl.get_variable("v", initializer=[1.0, 2.0])
    initialized = v.initialized_value()
    doubled = sl.Variable(initialized * 2.0, name="doubled")
    read = v.read_value()
    with _session(engine) as sess:
        sess.run(doubled.initializer)  # before v's own initializer: v's initial value
        np.testing.assert_array_equal(sess.run(doubled), [2.0, 4.0])
        assert not sess.run(v.is_initialized())  # ... and v is left as it was (TF 1.15)
        sess.run(v.initializer)
        sess.run(v.assign([5.0, 6.0]))
        np.testing.assert_array_equal(sess.run(read), [5.0, 6.0])
        np.testing.assert_array_equal(sess.run(initialized), [5.0, 6.0])  # not reset
        np.testing.assert_array_equal(sess.run(v), [5.0, 6.0])


# -- cells honouring reuse= ------------------------------------------------------------------------
B, T, D, U = 2, 3, 2, 3


def test_a_reusing_cell_takes_the_variables_of_its_scope():
    x = sl.constant(np.ones([B, T, D]), sl.float32)
    with sl.variable_scope("model"):
        sl.nn.dynamic_rnn(cells.BasicLSTMCell(U), x, dtype=sl.float32)
        made = list(sl.global_variables())
        reused = cells.BasicLSTMCell(U, reuse=True)
        sl.nn.dynamic_rnn(reused, x, dtype=sl.float32)
    assert [v.name for v in made] == [
        "model/rnn/basic_lstm_cell/kernel:0",
        "model/rnn/basic_lstm_cell/bias:0",
    ]
    assert reused.variables == made and sl.global_variables() == made
    with sl.variable_scope("other"):
        with pytest.raises(ValueError, match="other/rnn/gru_cell/gates/kernel does not exist"):
            sl.nn.dynamic_rnn(cells.GRUCell(U, reuse=True), x, dtype=sl.float32)
    for _ in range(2):  # AUTO_REUSE: made by the first cell, taken by the second
        with sl.variable_scope("auto"):
            sl.nn.dynamic_rnn(cells.GRUCell(U, reuse=sl.AUTO_REUSE), x, dtype=sl.float32)
    assert len([v for v in sl.global_variables() if v.name.startswith("auto/")]) == 4
    with pytest.raises(ValueError, match="reuse must be"):
        cells.BasicRNNCell(U, reuse="sometimes")


@pytest.mark.parametrize("engine", ENGINES)
def test_training_and_inference_graphs_share_weights(engine):
    """The TF1 pattern: the same model built twice in one scope, the second time with reuse,
    for another batch size and length; both use one set of weights."""

    def model(x, reuse):
        with sl.variable_scope("lm", reuse=reuse):
            cell = cells.LSTMCell(U, num_proj=2, reuse=reuse)
            outputs, _ = sl.nn.dynamic_rnn(cell, x, dtype=sl.float32)
            return outputs

    train_x = sl.placeholder(sl.float32, [4, 3, D])
    infer_x = sl.placeholder(sl.float32, [1, 2, D])
    train_out = model(train_x, reuse=None)
    n_weights = len(sl.global_variables())
    infer_out = model(infer_x, reuse=True)
    assert len(sl.global_variables()) == n_weights == 3
    # A change to the weights made through the training graph's variables (as an optimizer
    # step would) is seen by the inference graph.
    update = sl.group(*[v.assign_add(sl.fill(sl.shape(v), 0.05)) for v in sl.global_variables()])
    data = np.random.default_rng(0).normal(size=[4, 3, D]).astype(np.float32)
    with _session(engine) as sess:
        sess.run(sl.global_variables_initializer())
        sess.run(update)
        got_train = sess.run(train_out, {train_x: data})
        got_infer = sess.run(infer_out, {infer_x: data[:1, :2]})
    np.testing.assert_allclose(got_infer, got_train[:1, :2], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("engine", ENGINES)
def test_scope_defaults_and_custom_getter_reach_a_cells_weights(engine):
    seen = []

    def recording_getter(getter, name, *args, **kwargs):
        seen.append(name)
        return getter(name, *args, **kwargs)

    x = sl.zeros([B, T, D])
    with sl.variable_scope(
        "enc",
        initializer=sl.constant_initializer(0.1),
        regularizer=lambda w: sl.reduce_sum(w),
        custom_getter=recording_getter,
    ):
        cell = cells.BasicLSTMCell(U)
        sl.nn.dynamic_rnn(cell, x, dtype=sl.float32)
    assert seen == ["enc/rnn/basic_lstm_cell/kernel", "enc/rnn/basic_lstm_cell/bias"]
    losses = sl.losses.get_regularization_losses()
    assert [t.op.name.split("/Regularizer/")[0] for t in losses] == seen
    with _session(engine) as sess:
        sess.run(sl.global_variables_initializer())
        kernel, bias, total = sess.run(cell.variables + [sl.losses.get_regularization_loss()])
    np.testing.assert_allclose(kernel, np.full([D + U, 4 * U], 0.1), rtol=1e-6)
    np.testing.assert_array_equal(bias, np.zeros([4 * U]))  # the cell's own bias initializer
    np.testing.assert_allclose(total, 0.1 * (D + U) * 4 * U, rtol=1e-6)
