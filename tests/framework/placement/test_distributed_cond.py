"""sl.cond split across devices (whitepaper §6, distributed conditionals): the predicate on one
device and the branches on others, nested conds over four devices, dead values crossing devices,
and the Send/Recv pairs the partitioner makes for a small graph analysed by hand."""

import numpy as np
import pytest

import sluice as sl

from .split import ENGINES, by_device, on, run_built


def whitepaper_cond(split: bool):
    """cond(x < y, x + z, square(y)), y = 5, z = 3: pred on cpu:0, both branches on cpu:1."""
    x = sl.placeholder(sl.float32, [], name="x")
    with on("/cpu:0", split):
        y, z = sl.constant(5.0), sl.constant(3.0)
        pred = x < y

    def true_fn():
        with on("/cpu:1", split):
            return sl.add(x, z)

    def false_fn():
        with on("/cpu:1", split):
            return sl.square(y)

    return x, sl.cond(pred, true_fn, false_fn)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("x_value, expected", [(1.0, 4.0), (6.0, 25.0)])
def test_whitepaper_cond_with_pred_and_branches_on_two_devices(x_value, expected, engine):
    x, out = whitepaper_cond(split=True)
    metadata = sl.RunMetadata()
    with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
        assert sess.run(out, {x: x_value}, run_metadata=metadata) == expected
    assert list(by_device(metadata)) == ["CPU:0", "CPU:1"]
    assert metadata.engine == "interpreted"


def nested_conds(split: bool):
    """Three conds over four devices: the outer predicate on cpu:0, its true branch on cpu:1
    holding an inner cond whose branches run on cpu:2 and cpu:3, its false branch on cpu:3
    holding a cond whose true branch goes back to cpu:0."""
    x = sl.placeholder(sl.float32, [], name="x")
    with on("/cpu:0", split):
        scale = sl.constant(10.0)
        outer_pred = x > 0.0

    def outer_true():
        with on("/cpu:1", split):
            doubled = x * 2.0
            inner_pred = doubled > 10.0
        return sl.cond(inner_pred, lambda: big(doubled), lambda: small(doubled))

    def big(v):
        with on("/cpu:2", split):
            return v * scale + 1.0

    def small(v):
        with on("/cpu:3", split):
            return v - scale

    def outer_false():
        with on("/cpu:3", split):
            negated = -x
        return sl.cond(negated > 3.0, lambda: back_home(negated), lambda: negated * 0.5)

    def back_home(v):
        with on("/cpu:0", split):
            return sl.square(v)

    return x, sl.cond(outer_pred, outer_true, outer_false)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "x_value, expected",
    [
        (7.0, 141.0),  # outer true, inner true: 14 * 10 + 1 on cpu:2
        (2.0, -6.0),  # outer true, inner false: 4 - 10 on cpu:3
        (-5.0, 25.0),  # outer false, its cond true: 5 ** 2 back on cpu:0
        (-1.0, 0.5),  # outer false, its cond false: stays on cpu:3
    ],
)
def test_nested_conds_across_four_devices_equal_one_device(x_value, expected, engine):
    def build(split):
        x, out = nested_conds(split)
        return out, {x: x_value}

    metadata = sl.RunMetadata()
    assert run_built(build, split=True, engine=engine, metadata=metadata) == expected
    assert run_built(build, split=False) == expected
    assert list(by_device(metadata)) == ["CPU:0", "CPU:1", "CPU:2", "CPU:3"]


def untaken_branch_across_devices(split: bool):
    """A branch computed on cpu:1 and carried on to cpu:2 inside the branch: when the branch is
    not taken, cpu:2's Recv gets a dead value and the op after it is dead too."""
    p = sl.placeholder(sl.bool, [], name="p")
    x = sl.placeholder(sl.float32, [], name="x")
    inside = {}

    def true_fn():
        with on("/cpu:1", split):
            t = x + 1.0
        with on("/cpu:2", split):
            inside["after_recv"] = t * 2.0
        return inside["after_recv"]

    def false_fn():
        with on("/cpu:0", split):
            return x - 1.0

    out = sl.cond(p, true_fn, false_fn)
    return p, x, out, inside["after_recv"]


@pytest.mark.parametrize("split", [True, False])
def test_fetching_an_untaken_branch_across_devices_raises_as_on_one_device(split):
    # The dead signal crosses cpu:1 -> cpu:2 in a Recv and must still reach the fetch.
    p, x, out, after_recv = untaken_branch_across_devices(split)
    with sl.Session() as sess:
        assert sess.run(out, {p: False, x: 3.0}) == 2.0
        with pytest.raises(sl.errors.InvalidArgumentError, match="is dead"):
            sess.run(after_recv, {p: False, x: 3.0})
        assert sess.run(after_recv, {p: True, x: 3.0}) == 8.0


@pytest.mark.parametrize("engine", ENGINES)
def test_untaken_branch_sends_only_the_dead_bit(engine):
    p, x, out, _ = untaken_branch_across_devices(split=True)
    with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
        taken, untaken = sl.RunMetadata(), sl.RunMetadata()
        assert sess.run(out, {p: True, x: 3.0}, run_metadata=taken) == 8.0
        assert sess.run(out, {p: False, x: 3.0}, run_metadata=untaken) == 2.0
    # cpu:1 sends its branch value to cpu:2 once per run either way; a dead one has no bytes.
    assert by_device(taken)["CPU:1"].values_sent == by_device(untaken)["CPU:1"].values_sent == 1
    assert by_device(taken)["CPU:1"].bytes_sent == 4  # one float32
    assert by_device(untaken)["CPU:1"].bytes_sent == 0


def hand_analysed_graph():
    """A cond with its predicate on cpu:0 and a branch on each of cpu:1 and cpu:2, and a
    control edge into cpu:3; see `test_send_recv_pairs_of_a_hand_analysed_graph`."""
    x = sl.placeholder(sl.float32, [], name="x")
    with sl.device("/cpu:0"):
        a = sl.multiply(x, 2.0, name="a")
        p = sl.greater(a, 0.0, name="p")

    def true_fn():
        with sl.device("/cpu:1"):
            return sl.add(a + 1.0, a * 3.0, name="t")

    def false_fn():
        with sl.device("/cpu:2"):
            return sl.subtract(a, 1.0, name="f")

    out = sl.cond(p, true_fn, false_fn)
    with sl.device("/cpu:3"):
        c = sl.constant(1.0, name="c")
        with sl.control_dependencies([a.op]):
            w = sl.multiply(c, 2.0, name="w")
        v = sl.add(a, w, name="v")
    return x, out, v


# Placement (explicit requests; sl.cond's own ops follow the rules of placer.py):
#   cpu:0  Const(2), a, Const(0), p, and the cond's ops built on p: Switch(p, p), switch_t,
#          switch_f, pred_id; and Switch(a) of each branch, colocated with its data input a.
#          10 ops.
#   cpu:1  the true branch: its two constants (which carry a control edge from switch_t, the
#          branch's pivot, as TF1 builds them), a + 1, a * 3, t, and its output Identity. 6 ops.
#   cpu:2  the false branch: its constant (control edge from switch_f), f, its output Identity,
#          and the Merge (placed with its first input, the false branch's Identity). 4 ops.
#   cpu:3  c, the constant 2 of `w` (control edge from a, from the control_dependencies
#          scope), w (control edge from a), v. 4 ops.
# Cut edges, one Send/Recv pair per (tensor or control source, destination device):
#   cpu:0 -> cpu:1  Switch_1:1 (a into the true branch, used twice there: one pair),
#                   ^switch_t (used by both constants: one pair)                      2 pairs
#   cpu:0 -> cpu:2  Switch_2:0 (a into the false branch), ^switch_f                   2 pairs
#   cpu:0 -> cpu:3  a:0 (into v), ^a (into the constant and w: one pair)              2 pairs
#   cpu:1 -> cpu:2  the true branch's Identity:0 into the Merge                       1 pair
# No loop, so no control loops. Sends: cpu:0 6, cpu:1 1; Recvs: cpu:1 2, cpu:2 3, cpu:3 2.
# Every Send sends once per run; a dead value or a control edge carries no bytes, so a float32
# scalar is 4 bytes: cpu:0 sends a to cpu:3 and a's Switch output on the taken branch (8
# bytes either way), cpu:1 sends its 4-byte result only when its branch is taken.
EXPECTED_PARTITIONS = {  # device: (ops, sends, recvs, control_loops, values_sent)
    "CPU:0": (10, 6, 0, 0, 6),
    "CPU:1": (6, 1, 2, 0, 1),
    "CPU:2": (4, 0, 3, 0, 0),
    "CPU:3": (4, 0, 2, 0, 0),
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "x_value, expected, cpu1_bytes",
    [
        (1.0, (9.0, 4.0), 4),  # true branch: (2 + 1) + 2 * 3, and v = a + 2 = 4
        (-1.0, (-3.0, 0.0), 0),  # false branch: -2 - 1, and v = 0
    ],
)
def test_send_recv_pairs_of_a_hand_analysed_graph(x_value, expected, cpu1_bytes, engine):
    x, out, v = hand_analysed_graph()
    metadata = sl.RunMetadata()
    with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
        np.testing.assert_array_equal(
            sess.run([out, v], {x: x_value}, run_metadata=metadata), expected
        )
    parts = by_device(metadata)
    got = {
        device: (s.ops, s.sends, s.recvs, s.control_loops, s.values_sent)
        for device, s in parts.items()
    }
    assert got == EXPECTED_PARTITIONS
    assert sum(s.sends for s in parts.values()) == sum(s.recvs for s in parts.values()) == 7
    assert parts["CPU:0"].bytes_sent == 8
    assert parts["CPU:1"].bytes_sent == cpu1_bytes
