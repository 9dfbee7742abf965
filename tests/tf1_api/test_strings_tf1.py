"""TF1's string tensors (`tf.string`), names forwarded from `tf.` to `sl.`: the dtype, constants and
feeds, the general ops on strings, TF1's string ops (from TF1's string_join_op_test,
reduce_join_op_test, as_string_op_test, string_to_number_op_test, string_length_op_test),
control flow, variables, gradients and the errors of ops that take no strings. Both engines:
the compiled one runs a graph with strings on the host, interpreted."""

import numpy as np
import pytest

import sluice as sl

ENGINES = ["compiled", "interpreted"]


@pytest.fixture(params=ENGINES)
def sess(request):
    with sl.Session(config=sl.SessionConfig(engine=request.param)) as session:
        yield session


# -- the dtype ----------------------------------------------------------------------------------
def test_dtype_attributes():
    s = sl.string
    assert s is sl.dtypes.string is sl.as_dtype("string") is sl.as_dtype(7)
    assert sl.as_dtype(107) is s  # TF1's string_ref enum
    assert s.name == "string" and s.as_datatype_enum == 7
    assert s.as_numpy_dtype is object
    assert s.base_dtype is s and s.real_dtype is s
    assert not (s.is_floating or s.is_integer or s.is_complex or s.is_bool or s.is_quantized)
    assert s.is_numpy_compatible
    with pytest.raises(TypeError):
        s.min
    with pytest.raises(TypeError):
        s.max
    # NumPy's object, str and bytes types are TF1's string
    for np_type in (np.object_, np.str_, np.bytes_, object):
        assert sl.as_dtype(np_type) is s


def test_string_and_resource_are_distinct():
    assert sl.string != sl.resource and sl.resource != sl.string
    assert sl.resource.name == "resource" and sl.as_dtype("resource") is sl.resource
    assert sl.string == np.object_ and sl.resource != np.object_
    assert len({sl.string, sl.resource}) == 2
    import pickle

    assert pickle.loads(pickle.dumps(sl.string)) is sl.string
    assert pickle.loads(pickle.dumps(sl.resource)) is sl.resource


# -- constants, feeds and fetches ---------------------------------------------------------------
def test_hello_world(sess):
    hello = sl.constant("Hello, TensorFlow!")
    assert hello.dtype == sl.string and hello.shape.as_list() == []
    result = sess.run(hello)
    assert result == b"Hello, TensorFlow!" and type(result) is bytes


def test_constant_values(sess):
    t = sl.constant([["a", b"b"], ["\u00e9", "d"]])
    assert t.dtype == sl.string and t.shape.as_list() == [2, 2]
    value = sess.run(t)
    assert value.dtype == object
    assert value.tolist() == [[b"a", b"b"], ["\u00e9".encode(), b"d"]]
    assert sess.run(sl.constant(np.array([b"x", b"yz"]))).tolist() == [b"x", b"yz"]
    assert sess.run(sl.constant("ab", shape=[2])).tolist() == [b"ab", b"ab"]
    assert sess.run(sl.convert_to_tensor(["p", "q"])).tolist() == [b"p", b"q"]


def test_constant_errors():
    with pytest.raises(TypeError, match="Expected string, got 1 of type 'int'"):
        sl.constant(1, sl.string)
    with pytest.raises(TypeError, match="Expected string, got 1 of type 'int'"):
        sl.constant(["a", 1])
    with pytest.raises(TypeError, match="Expected float32"):
        sl.constant("a", sl.float32)


def test_placeholder_feeds(sess):
    p = sl.placeholder(sl.string, [None])
    out = sl.identity(p)
    assert sess.run(out, {p: ["a", b"b"]}).tolist() == [b"a", b"b"]
    assert sess.run(out, {p: np.array(["\u00e9"])}).tolist() == ["\u00e9".encode()]
    assert sess.run(out, {p: np.array([b"x"], dtype=object)}).tolist() == [b"x"]
    with pytest.raises(TypeError, match="Expected string, got 3"):
        sess.run(out, {p: [3]})
    with pytest.raises(ValueError, match="shape"):
        sess.run(out, {p: "scalar"})


# -- the general ops on strings -----------------------------------------------------------------
def test_array_ops_on_strings(sess):
    a = sl.constant([["a", "b"], ["c", "d"]])
    outs = sess.run(
        {
            "reshape": sl.reshape(a, [4]),
            "concat": sl.concat([a, a], 1),
            "stack": sl.stack([sl.gather(a, 0), sl.gather(a, 1)]),
            "gather": sl.gather(a, [1, 0]),
            "expand": sl.expand_dims(a, 0),
            "transpose": sl.transpose(a),
            "tile": sl.tile(a, [1, 2]),
            "squeeze": sl.squeeze(sl.reshape(a, [1, 4])),
            "slice": sl.slice(a, [0, 1], [2, 1]),
            "fill": sl.fill([2, 1], "z"),
            "zeros": sl.zeros([2], sl.string),
            "zeros_like": sl.zeros_like(a),
            "where": sl.where([True, False], ["y", "y"], ["n", "n"]),
            "shape": sl.shape(a),
            "size": sl.size(a),
            "rank": sl.rank(a),
        }
    )
    assert outs["reshape"].tolist() == [b"a", b"b", b"c", b"d"]
    assert outs["concat"].tolist() == [[b"a", b"b", b"a", b"b"], [b"c", b"d", b"c", b"d"]]
    assert outs["stack"].tolist() == [[b"a", b"b"], [b"c", b"d"]]
    assert outs["gather"].tolist() == [[b"c", b"d"], [b"a", b"b"]]
    assert outs["expand"].shape == (1, 2, 2)
    assert outs["transpose"].tolist() == [[b"a", b"c"], [b"b", b"d"]]
    assert outs["tile"].tolist() == [[b"a", b"b", b"a", b"b"], [b"c", b"d", b"c", b"d"]]
    assert outs["squeeze"].tolist() == [b"a", b"b", b"c", b"d"]
    assert outs["slice"].tolist() == [[b"b"], [b"d"]]
    assert outs["fill"].tolist() == [[b"z"], [b"z"]]
    assert outs["zeros"].tolist() == [b"", b""]
    assert outs["zeros_like"].tolist() == [[b"", b""], [b"", b""]]
    assert outs["where"].tolist() == [b"y", b"n"]
    assert outs["shape"].tolist() == [2, 2] and outs["size"] == 4 and outs["rank"] == 2
    got = sess.run([a[0], a[1, 1], a[:, 0], a[::-1, 1]])
    assert [g.tolist() if hasattr(g, "tolist") else g for g in got] == [
        [b"a", b"b"],
        b"d",
        [b"a", b"c"],
        [b"d", b"b"],
    ]
    unstacked = sess.run(sl.unstack(a))
    assert [u.tolist() for u in unstacked] == [[b"a", b"b"], [b"c", b"d"]]


def test_equal_and_not_equal(sess):
    p = sl.placeholder(sl.string, [3])
    eq, ne = sl.equal(p, "b"), sl.not_equal(p, b"b")
    assert eq.dtype == sl.bool
    e, n = sess.run([eq, ne], {p: ["a", "b", "c"]})
    assert e.tolist() == [False, True, False] and n.tolist() == [True, False, True]


def test_strings_to_numbers_feed_the_model(sess):
    p = sl.placeholder(sl.string, [None])
    w = sl.Variable([2.0])
    y = sl.strings.to_number(p) * w
    sess.run(w.initializer)
    np.testing.assert_allclose(sess.run(y, {p: ["1.5", "-2"]}), [3.0, -4.0])


# -- TF1's string ops ---------------------------------------------------------------------------
def test_string_join(sess):
    input0, input1, input2 = ["a", "b"], "a", [["b"], ["c"]]
    assert sess.run(sl.string_join([input0, input1])).tolist() == [b"aa", b"ba"]
    out = sl.strings.join([input0, input1], separator="--")
    assert sess.run(out).tolist() == [b"a--a", b"b--a"]
    out = sl.string_join([input0, input1, input0], separator="--")
    assert sess.run(out).tolist() == [b"a--a--a", b"b--a--b"]
    assert sess.run(sl.string_join([input1] * 4, separator="!")) == b"a!a!a!a"
    assert sess.run(sl.string_join([input2] * 2)).tolist() == [[b"bb"], [b"cc"]]
    with pytest.raises(ValueError):  # inconsistent shapes
        sl.string_join([input0, input2])


def test_reduce_join(sess):
    words = [["this", "is", "a", "test"], ["please", "do", "not", "panic"]]
    assert sess.run(sl.reduce_join(words[0], axis=0)) == b"thisisatest"
    out = sl.reduce_join(words, axis=0)
    assert out.shape.as_list() == [4]
    assert sess.run(out).tolist() == [b"thisplease", b"isdo", b"anot", b"testpanic"]
    out = sl.strings.reduce_join(words, axis=-1, separator=" ")
    assert sess.run(out).tolist() == [b"this is a test", b"please do not panic"]
    out = sl.reduce_join(words, axis=1, keep_dims=True)
    assert out.shape.as_list() == [2, 1]
    assert sess.run(out).tolist() == [[b"thisisatest"], [b"pleasedonotpanic"]]
    abcd = [["a", "b"], ["c", "d"]]
    assert sess.run(sl.reduce_join(abcd, [0, 1])) == b"acbd"
    assert sess.run(sl.reduce_join(abcd, [1, 0])) == b"abcd"
    assert sess.run(sl.reduce_join(abcd)) == b"abcd"  # all axes, row-major
    empty = np.zeros([0, 1], dtype=str)
    assert sess.run(sl.reduce_join(empty, axis=0)).tolist() == [b""]
    assert sess.run(sl.reduce_join(empty, axis=1)).shape == (0,)


def test_reduce_join_errors(sess):
    with pytest.raises(ValueError, match="Invalid reduction dim"):
        sl.reduce_join("", axis=0)
    with pytest.raises(ValueError, match="Invalid reduction dimension -3"):
        sl.reduce_join([[""]], axis=-3)
    with pytest.raises(ValueError, match="Invalid reduction dimension 2"):
        sl.reduce_join([[""]], axis=[0, 2])
    p = sl.placeholder(sl.string)
    with pytest.raises(sl.errors.InvalidArgumentError, match="Invalid reduction dimension 1"):
        sess.run(sl.reduce_join(p, axis=1), {p: [""]})
    with pytest.raises(sl.errors.InvalidArgumentError, match="Duplicate reduction dimension 1"):
        sess.run(sl.reduce_join(p, axis=[-1, 1]), {p: [[""]]})


FLOATS = [0, 1, -1, 0.5, 0.25, 0.125, float("INF"), float("NAN"), float("-INF")]


@pytest.mark.parametrize("dtype", [sl.float32, sl.float64])
def test_as_string_float(sess, dtype):
    x = sl.constant(np.array(FLOATS, dtype.as_numpy_dtype))
    cases = [
        ({}, "%f"),
        ({"shortest": True}, "%g"),
        ({"scientific": True}, "%e"),
        ({"width": 3}, "%3f"),
        ({"width": 3, "fill": "0"}, "%03f"),
        ({"width": 3, "fill": "0", "shortest": True}, "%03g"),
        ({"precision": 10, "width": 3}, "%3.10f"),
        ({"precision": 10, "width": 3, "fill": "0", "shortest": True}, "%03.10g"),
    ]
    for attrs, form in cases:
        got = sess.run(sl.as_string(x, **attrs))
        assert got.tolist() == [(form % v).encode() for v in FLOATS], attrs
    with pytest.raises(sl.errors.InvalidArgumentError, match="Cannot select both"):
        sess.run(sl.as_string(x, scientific=True, shortest=True))
    with pytest.raises(sl.errors.InvalidArgumentError, match="Fill string must be one or fewer"):
        sess.run(sl.as_string(x, fill="ab"))


def test_as_string_int_bool_complex(sess):
    ints = [0, -1, 1, -128, 127, -101, 101, -0]
    for dtype in (sl.int8, sl.int32, sl.int64):
        x = sl.constant(ints, dtype)
        assert sess.run(sl.as_string(x)).tolist() == [b"%d" % v for v in ints]
        assert sess.run(sl.as_string(x, width=3)).tolist() == [b"%3d" % v for v in ints]
        got = sess.run(sl.as_string(x, width=3, fill="0"))
        assert got.tolist() == [b"%03d" % v for v in ints]
        with pytest.raises(sl.errors.InvalidArgumentError, match="not supported"):
            sess.run(sl.as_string(x, precision=2))
    assert sess.run(sl.as_string([True, False])).tolist() == [b"true", b"false"]
    z = np.array([1 + 2j, -0.5 + 0j], np.complex64)
    assert sess.run(sl.as_string(z, precision=1)).tolist() == [b"(1.0,2.0)", b"(-0.5,0.0)"]
    with pytest.raises(TypeError, match="number or bool"):
        sl.as_string(sl.constant("a"))


def _to_number(sess, out_type, text):
    p = sl.placeholder(sl.string)
    return sess.run(sl.string_to_number(p, out_type=out_type), {p: [text]})[0]


@pytest.mark.parametrize("out_type", [sl.float32, sl.float64])
def test_string_to_number_float(sess, out_type):
    good = [("0", 0), ("3", 3), ("-1", -1), ("1.12", 1.12), ("0xF", 15), ("   -10.5", -10.5)]
    good += [("3.40282e+38", 3.40282e38), ("NAN", float("nan")), ("INF", float("inf"))]
    for text, number in good:
        np.testing.assert_allclose(_to_number(sess, out_type, text), number, rtol=1e-6)
    big = _to_number(sess, out_type, "3.40283e+38")
    assert np.isinf(big) if out_type == sl.float32 else big == 3.40283e38
    with pytest.raises(sl.errors.InvalidArgumentError, match="convert string: 10foobar"):
        _to_number(sess, out_type, "10foobar")


def test_string_to_number_int(sess):
    good = [("0", 0), ("-1", -1), ("-2147483648", -(2**31)), ("2147483647", 2**31 - 1)]
    for text, number in good:
        assert _to_number(sess, sl.int32, text) == number
    for text in ["-2147483649", "2147483648", "2.9", "10foobar"]:
        with pytest.raises(sl.errors.InvalidArgumentError, match=f"convert string: {text}"):
            _to_number(sess, sl.int32, text)
    assert _to_number(sess, sl.int64, "2147483648") == 2**31
    out = sl.strings.to_number(["7"], out_type=sl.int64)
    assert out.dtype == sl.int64 and sess.run(out).tolist() == [7]


def test_string_length(sess):
    strings = [[["1", "12"], ["123", "1234"], ["12345", "123456"]]]
    assert sess.run(sl.strings.length(strings)).tolist() == [[[1, 2], [3, 4], [5, 6]]]
    utf8 = ["H\xc3llo".encode(), "\U0001f604".encode()]
    assert sess.run(sl.strings.length(utf8, unit="BYTE")).tolist() == [6, 4]
    assert sess.run(sl.strings.length(utf8, unit="UTF8_CHAR")).tolist() == [5, 1]
    with pytest.raises(ValueError, match="Attr 'unit' of 'StringLength' Op passed string 'XYZ'"):
        sl.strings.length(utf8, unit="XYZ")


# -- control flow, variables, gradients ---------------------------------------------------------
def test_cond_carries_strings(sess):
    p = sl.placeholder(sl.string, [])
    flag = sl.placeholder(sl.bool, [])
    out = sl.cond(flag, lambda: sl.strings.join([p, "T"]), lambda: sl.identity(p))
    assert sess.run(out, {p: "a", flag: True}) == b"aT"
    assert sess.run(out, {p: "a", flag: False}) == b"a"


def test_while_loop_carries_strings(sess):
    def body(i, s):
        return i + 1, sl.strings.join([s, sl.as_string(i)], separator=",")

    i, s = sl.while_loop(lambda i, s: i < 3, body, [sl.constant(0), sl.constant("x")])
    assert sess.run([i, s]) == [3, b"x,0,1,2"]


def test_string_variables(sess):
    v = sl.Variable("init", dtype=sl.string)
    d = sl.get_variable("default", shape=[2], dtype=sl.string)  # TF1: the empty string
    assign = v.assign("new")
    sess.run(sl.global_variables_initializer())
    assert sess.run(v) == b"init" and sess.run(d).tolist() == [b"", b""]
    assert sess.run(assign) == b"new" and sess.run(v) == b"new"


def test_no_gradient_through_strings():
    x = sl.constant(1.0)
    y = sl.strings.to_number(sl.as_string(x))
    assert sl.gradients(y, [x]) == [None]
    with pytest.raises(TypeError, match="string tensor, and strings carry no gradient"):
        sl.gradients(sl.as_string(x), [x])


def test_ops_without_string_kernels_refuse_strings():
    s = sl.constant(["a"])
    with pytest.raises(TypeError, match="AddV2 .*got string"):
        s + s
    with pytest.raises(TypeError, match="Sum .*got string"):
        sl.reduce_sum(s)
    with pytest.raises(TypeError, match="Cast op 'Cast' does not support string tensors"):
        sl.cast(s, sl.float32)


def test_sparse_fill_empty_rows_of_strings(sess):
    sp = sl.SparseTensor(
        sl.constant([[0, 0], [1, 0], [3, 2]], sl.int64),
        sl.constant(["a", "b", "c"], sl.string),
        sl.constant([4, 3], sl.int64),
    )
    filled, empty = sl.sparse_fill_empty_rows(sp, "")
    value, empty_rows = sess.run([filled, empty])
    assert value.values.tolist() == [b"a", b"b", b"", b"c"]
    assert empty_rows.tolist() == [False, False, True, False]


def test_graph_def_round_trip_keeps_string_constants():
    with sl.Graph().as_default() as g:
        c = sl.constant([["a", "\u00e9"], ["", "d"]], name="c")
        sl.strings.join([c, "!"], name="j")
        sl.placeholder(sl.string, name="p")
        graph_def = g.as_graph_def()
    with sl.Graph().as_default() as h:
        sl.import_graph_def(graph_def, name="")
        assert h.get_tensor_by_name("p:0").dtype == sl.string
        with sl.Session() as sess:
            got = sess.run("j:0")
    assert got.tolist() == [[b"a!", "\u00e9!".encode()], [b"!", b"d!"]]


def test_saver_refuses_string_variables_before_writing(tmp_path):
    v = sl.Variable("text", dtype=sl.string, name="sv")
    w = sl.Variable(1.0, name="w")
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        with pytest.raises(sl.errors.UnimplementedError, match="string variable 'sv'"):
            sl.train.Saver().save(sess, str(tmp_path / "model"))
        assert not list(tmp_path.glob("model*"))
        path = sl.train.Saver([w]).save(sess, str(tmp_path / "model"))
        sess.run(w.assign(2.0))
        sl.train.Saver([w]).restore(sess, path)
        assert sess.run(w) == 1.0 and sess.run(v) == b"text"


def test_string_split(sess):
    st = sess.run(sl.string_split(["hello world", "a b c"]))  # TF1's docstring example
    assert st.indices.tolist() == [[0, 0], [0, 1], [1, 0], [1, 1], [1, 2]]
    assert st.values.tolist() == [b"hello", b"world", b"a", b"b", b"c"]
    assert st.dense_shape.tolist() == [2, 3]
    assert sess.run(sl.string_split(["a,b;c"], ",;")).values.tolist() == [b"a", b"b", b"c"]
    assert sess.run(sl.string_split(["ab"], "")).values.tolist() == [b"a", b"b"]
    kept = sl.string_split(["a,,b"], ",", skip_empty=False)
    assert sess.run(kept).values.tolist() == [b"a", b"", b"b"]


def test_strings_split_as_python_split(sess):
    st = sess.run(sl.strings.split(["  a  b ", "c"]))
    assert st.values.tolist() == [b"a", b"b", b"c"] and st.dense_shape.tolist() == [2, 2]
    st = sess.run(sl.strings.split(["a<>b<>c"], sep="<>", maxsplit=1))
    assert st.values.tolist() == [b"a", b"b<>c"]
    with pytest.raises(ValueError, match="RaggedTensor"):
        sl.strings.split(["a"], result_type="RaggedTensor")


# -- TensorArray of strings (tensor_array_ops_test's string cases) ------------------------------
def test_tensor_array_of_strings(sess):
    ta = sl.TensorArray(sl.string, size=3)
    ta = ta.write(0, [b"a", b"b"]).write(1, ["c", "d"]).write(2, [b"", b"e"])
    unstacked = sl.TensorArray(sl.string, size=3).unstack(sl.constant([["x"], ["y"], ["z"]]))
    split = sl.TensorArray(sl.string, size=2).split(sl.constant(["p", "q", "r", "s"]), [2, 2])
    grown = sl.TensorArray(sl.string, size=0, dynamic_size=True).write(2, "w")
    got = sess.run(
        [ta.stack(), ta.concat(), ta.read(1), unstacked.read(2), split.read(1), split.size()]
        + [grown.stack(), ta.gather([2, 0])]
    )
    want = [
        [[b"a", b"b"], [b"c", b"d"], [b"", b"e"]],
        [b"a", b"b", b"c", b"d", b"", b"e"],
        [b"c", b"d"],
        [b"z"],
        [b"r", b"s"],
        2,
        [b"", b"", b"w"],  # rows never written read as TF1's empty strings
        [[b"", b"e"], [b"a", b"b"]],
    ]
    for value, expected in zip(got, want):
        assert np.asarray(value).tolist() == expected
    with pytest.raises(sl.errors.InvalidArgumentError, match="read from index 5"):
        sess.run(ta.read(5))


def test_split_of_strings(sess):
    words = sl.constant([["a", "b", "c"], ["d", "e", "f"]])
    halves = sl.split(words, 2)
    pieces = sl.split(words, [1, -1], axis=1)
    got = sess.run([halves, pieces])
    assert [p.tolist() for p in got[0]] == [[[b"a", b"b", b"c"]], [[b"d", b"e", b"f"]]]
    assert [p.tolist() for p in got[1]] == [[[b"a"], [b"d"]], [[b"b", b"c"], [b"e", b"f"]]]
