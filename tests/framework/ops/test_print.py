"""`sl.Print` and `sl.print`, checked as TF1's logging_ops_test checks them: the exact text on
stderr (or stdout, or a file), `summarize` and `first_n`, one print per run, per loop iteration
and none from an untaken branch, the identity and its gradient, the same text from both
engines."""

import sys

import numpy as np
import pytest

import sluice as sl
from sluice.framework.ops.host.print_ops import summarize_v1, summarize_v2

ENGINES = ["compiled", "interpreted"]


def session(engine):
    return sl.Session(config=sl.SessionConfig(engine=engine))


# -- the text of a value ------------------------------------------------------------------------
def test_summarize_v1_is_tf_prints_nesting():
    assert summarize_v1(np.arange(1, 5)) == "1 2 3..."
    assert summarize_v1(np.arange(1, 5), -1) == "1 2 3 4"
    assert summarize_v1(np.arange(1, 7).reshape(2, 3)) == "[1 2 3]..."
    assert summarize_v1(np.arange(1, 7).reshape(2, 3), 4) == "[1 2 3][4...]..."
    assert summarize_v1(np.arange(8).reshape(2, 2, 2), -1) == "[[0 1][2 3]][[4 5][6 7]]"
    assert summarize_v1(np.float32(2.5)) == "2.5"
    assert summarize_v1(np.array([True, False])) == "1 0"
    assert summarize_v1(np.zeros([0])) == ""


def test_elements_print_as_tf_formats_them():
    assert summarize_v1(np.float32(1.0 / 3.0)) == "0.333333343"  # 6 digits do not read back
    assert summarize_v1(np.float32(0.1)) == "0.1"
    assert summarize_v1(np.float64(1.0 / 3.0)) == "0.33333333333333331"
    assert summarize_v1(np.float64(0.1)) == "0.1"
    assert summarize_v1(np.array([1e-7, -np.inf, np.nan], np.float32), -1) == "1e-07 -inf nan"
    assert summarize_v1(np.int64(-7)) == "-7"


def test_summarize_v2_shows_both_ends_of_every_dimension():
    assert summarize_v2(np.arange(10)) == "[0 1 2 ... 7 8 9]"
    assert summarize_v2(np.arange(10), -1) == "[0 1 2 3 4 5 6 7 8 9]"
    assert summarize_v2(np.arange(4), 2) == "[0 1 2 3]"
    assert summarize_v2(np.arange(6).reshape(2, 3)) == "[[0 1 2]\n [3 4 5]]"
    assert summarize_v2(np.arange(8).reshape(2, 2, 2)) == (
        "[[[0 1]\n  [2 3]]\n\n [[4 5]\n  [6 7]]]"
    )
    assert summarize_v2(np.arange(64).reshape(8, 8), 1) == ("[[0 ... 7]\n ...\n [56 ... 63]]")
    assert summarize_v2(np.float32(3.5)) == "3.5"


# -- Print --------------------------------------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_print_is_an_identity_that_prints_its_data(engine, capsys):
    x = sl.placeholder(sl.float32, [4])
    y = sl.Print(
        x, [x, sl.reduce_sum(x), sl.constant([[1, 2], [3, 4]])], message="x: ", summarize=3
    )
    assert isinstance(y, sl.Tensor) and y.op.type == "Print"
    assert y.dtype == sl.float32 and y.shape.as_list() == [4]
    with session(engine) as s:
        np.testing.assert_array_equal(s.run(y, {x: [1.0, 2.0, 3.0, 4.5]}), [1.0, 2.0, 3.0, 4.5])
    assert capsys.readouterr().err == "x: [1 2 3...][10.5][[1 2][3...]...]\n"


@pytest.mark.parametrize("engine", ENGINES)
def test_print_first_n_and_summarize(engine, capsys):
    x = sl.constant([1, 2, 3, 4, 5])
    y = sl.Print(x, [x], first_n=2, summarize=-1)
    z = sl.Print(x, [x], message="z", summarize=2)
    with session(engine) as s:
        for _ in range(3):
            s.run(y)
        s.run(z)
    assert capsys.readouterr().err == "[1 2 3 4 5]\n" * 2 + "z[1 2...]\n"


@pytest.mark.parametrize("engine", ENGINES)
def test_print_in_a_loop_and_in_branches(engine, capsys):
    x = sl.placeholder(sl.float32, [])
    pred = sl.placeholder(sl.bool, [])
    _, looped = sl.while_loop(
        lambda i, v: i < 3, lambda i, v: (i + 1, sl.Print(v, [i, v], "it ") * 2.0), [0, x]
    )
    branch = sl.cond(pred, lambda: sl.Print(x, [x], "taken "), lambda: -x)
    with session(engine) as s:
        assert s.run(looped, {x: 1.5}) == 12.0
        s.run(branch, {x: 1.0, pred: False})
        s.run(branch, {x: 2.0, pred: True})
    assert capsys.readouterr().err == "it [0][1.5]\nit [1][3]\nit [2][6]\ntaken [2]\n"


@pytest.mark.parametrize("engine", ENGINES)
def test_print_gradient_passes_to_the_input_only(engine):
    x = sl.placeholder(sl.float32, [3])
    z = sl.placeholder(sl.float32, [])
    y = sl.Print(x * x, [x, z])
    dx, dz = sl.gradients(sl.reduce_sum(y), [x, z])
    assert dz is None
    with session(engine) as s:
        np.testing.assert_allclose(
            s.run(dx, {x: [1.0, -2.0, 3.0], z: 0.0}), [2.0, -4.0, 6.0], rtol=1e-6
        )


def test_both_engines_print_the_same_text(capsys):
    x = sl.placeholder(sl.float64, [2, 3])
    y = sl.Print(x, [x, x > 0.5], "v", summarize=5)
    shown = sl.print("x =", x, [x[0, 0], "s"], summarize=1)
    value = np.array([[0.1, 1 / 3, 2.0], [-1.0, 1e10, np.nan]])
    outputs = []
    for engine in ENGINES:
        with session(engine) as s:
            s.run([y, shown], {x: value})
        outputs.append(capsys.readouterr().err)
    assert outputs[0] == outputs[1]
    assert (
        "v[[0.1 0.33333333333333331 2][-1 10000000000...]...][[0 0 1][0 1...]...]\n" in outputs[0]
    )
    assert "x = [[0.1 ... 2]\n [-1 ... nan]] [0.1, 's']\n" in outputs[0]


# -- print --------------------------------------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_print_v2_runs_as_an_op_or_a_control_dependency(engine, capsys):
    x = sl.range(10)
    show = sl.print("tensors:", x, {2: x * 2})
    assert isinstance(show, sl.Operation) and show.type == "PrintV2"
    with sl.control_dependencies([show]):
        tripled = x * 3
    with session(engine) as s:
        s.run(show)
        np.testing.assert_array_equal(s.run(tripled), np.arange(10) * 3)
    line = "tensors: [0 1 2 ... 7 8 9] {2: [0 2 4 ... 14 16 18]}\n"
    assert capsys.readouterr().err == line * 2


@pytest.mark.parametrize("engine", ENGINES)
def test_print_v2_streams_sep_end_and_summarize(engine, capsys, tmp_path):
    x = sl.constant([[1.5, 2.0], [3.0, 4.0]])
    to_stdout = sl.print("a", x, 7, output_stream=sys.stdout, sep="|", end="!\n", summarize=-1)
    path = tmp_path / "printed.txt"
    to_file = sl.print("f", x[0], output_stream=f"file://{path}")
    with session(engine) as s:
        s.run([to_stdout, to_file])
        s.run(to_file)
    captured = capsys.readouterr()
    assert captured.out == "a|[[1.5 2]\n [3 4]]|7!\n" and captured.err == ""
    assert path.read_text() == "f [1.5 2]\n" * 2


@pytest.mark.parametrize("engine", ENGINES)
def test_a_failed_write_fails_the_run_and_changes_no_variable(engine, tmp_path):
    v = sl.Variable(1.0)
    show = sl.print("v", v.value(), output_stream=f"file://{tmp_path}/missing/out.txt")
    with sl.control_dependencies([show]):
        step = v.assign_add(1.0)
    with session(engine) as s:
        s.run(v.initializer)
        with pytest.raises(sl.errors.UnknownError, match="could not write"):
            s.run(step)
        assert s.run(v) == 1.0


def test_print_v2_rejects_unknown_streams():
    with pytest.raises(ValueError, match="Unsupported output stream"):
        sl.print("x", output_stream="stdout")
    with pytest.raises(ValueError, match="Unsupported output stream"):
        sl.print("x", output_stream=open)
    assert sl.gradients(sl.constant(1.0), sl.constant(2.0)) == [None]


def test_print_rejects_data_that_is_not_a_list_and_non_int_counts():
    x = sl.constant([1.0, 2.0])
    with pytest.raises(TypeError, match="Expected list for 'data'"):
        sl.Print(x, x)
    with pytest.raises(TypeError, match="'summarize' of 'Print'"):
        sl.Print(x, [x], summarize="3")
    with pytest.raises(TypeError, match="'first_n' of 'Print'"):
        sl.Print(x, [x], first_n=1.5)
