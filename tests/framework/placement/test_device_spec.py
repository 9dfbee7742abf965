"""Device names and device scopes, TF1 semantics: `sl.DeviceSpec`, `sl.device` (names, None, "",
device functions), `sl.colocate_with`, and the requested device `op.device`. Graph building only:
no session, no second device."""

import pytest

import sluice as sl
from sluice.framework.ir.device_spec import canonical_name, merge_device

# (name, job, replica, task, device_type, device_index, canonical name)
PARSED = [
    (
        "/job:localhost/replica:0/task:0/device:CPU:1",
        "localhost",
        0,
        0,
        "CPU",
        1,
        "/job:localhost/replica:0/task:0/device:CPU:1",
    ),
    (
        "/job:localhost/replica:0/task:0/cpu:1",
        "localhost",
        0,
        0,
        "CPU",
        1,
        "/job:localhost/replica:0/task:0/device:CPU:1",
    ),
    ("/cpu:1", None, None, None, "CPU", 1, "/device:CPU:1"),
    ("/device:GPU:0", None, None, None, "GPU", 0, "/device:GPU:0"),
    ("/device:gpu:0", None, None, None, "GPU", 0, "/device:GPU:0"),
    ("/gpu:0", None, None, None, "GPU", 0, "/device:GPU:0"),
    ("/GPU:0", None, None, None, "GPU", 0, "/device:GPU:0"),
    ("/tpu:3", None, None, None, "TPU", 3, "/device:TPU:3"),
    ("CPU:0", None, None, None, "CPU", 0, "/device:CPU:0"),
    ("/cpu", None, None, None, "CPU", None, "/device:CPU:*"),
    ("/device:CPU:*", None, None, None, "CPU", None, "/device:CPU:*"),
    ("/device:xpu:2", None, None, None, "XPU", 2, "/device:XPU:2"),
    ("/job:worker", "worker", None, None, None, None, "/job:worker"),
    ("/job:worker/task:3", "worker", None, 3, None, None, "/job:worker/task:3"),
    ("/task:1/job:ps", "ps", None, 1, None, None, "/job:ps/task:1"),
    ("/replica:2", None, 2, None, None, None, "/replica:2"),
    ("/job:w/gpu:1/job:w", "w", None, None, "GPU", 1, "/job:w/device:GPU:1"),
    ("", None, None, None, None, None, ""),
    ("/", None, None, None, None, None, ""),
]


@pytest.mark.parametrize("name,job,replica,task,device_type,device_index,canonical", PARSED)
def test_from_string(name, job, replica, task, device_type, device_index, canonical):
    spec = sl.DeviceSpec.from_string(name)
    fields = (spec.job, spec.replica, spec.task, spec.device_type, spec.device_index)
    assert fields == (job, replica, task, device_type, device_index)
    assert spec.to_string() == canonical == canonical_name(name)
    assert sl.DeviceSpec.from_string(canonical) == spec  # the canonical form round trips
    assert spec == sl.DeviceSpec(job, replica, task, device_type, device_index)
    assert hash(spec) == hash(sl.DeviceSpec.from_string(canonical))


@pytest.mark.parametrize(
    "name,expected",
    [
        ("/foo:1", "Unknown part 'foo:1'"),
        ("/cpu:x", "device_index must be a number or \\*, got 'x'"),
        ("/cpu:-1", "device_index must be a number"),
        ("/task:*", "task must be a number, got '\\*'"),
        ("/replica:a", "replica must be a number"),
        ("/job:a/job:b", "gives job twice, as 'a' and 'b'"),
        ("/cpu:0/device:GPU:0", "gives device_type twice"),
        ("/job:", "job must be a name"),
        ("/device:GPU", "Unknown part 'device:GPU'"),
        ("/device::0", "device_type must be a name"),
        ("/job:a:b", "Unknown part"),
    ],
)
def test_bad_names_raise(name, expected):
    with pytest.raises(ValueError, match=expected) as err:
        sl.DeviceSpec.from_string(name)
    assert repr(name) in str(err.value)


def test_constructor_checks_and_normalises():
    spec = sl.DeviceSpec(job="ps", replica="1", task=2, device_type="gpu", device_index=0)
    assert spec.to_string() == "/job:ps/replica:1/task:2/device:GPU:0"
    assert repr(spec) == (
        "DeviceSpec(job='ps', replica=1, task=2, device_type='GPU', device_index=0)"
    )
    assert repr(sl.DeviceSpec()) == "DeviceSpec()"
    for bad in [dict(task=-1), dict(replica=1.5), dict(device_index="x"), dict(job="a/b")]:
        with pytest.raises(ValueError):
            sl.DeviceSpec(**bad)
    with pytest.raises(TypeError):
        sl.DeviceSpec.from_string(None)
    assert sl.DeviceSpec(device_index=1).to_string() == ""  # an index needs a type, as TF1


def test_specs_are_immutable_values():
    spec = sl.DeviceSpec.from_string("/job:w/gpu:1")
    with pytest.raises(AttributeError):
        spec.job = "x"
    assert {spec, sl.DeviceSpec.from_string("/job:w/device:GPU:1")} == {spec}
    assert spec != "/job:w/device:GPU:1"
    assert spec.replace(device_type="cpu") == sl.DeviceSpec.from_string("/job:w/cpu:1")
    assert spec.replace(job=None).to_string() == "/device:GPU:1"
    with pytest.raises(TypeError, match="no field 'host'"):
        spec.replace(host="a")


def test_make_merged_spec_and_merge_device():
    outer = sl.DeviceSpec.from_string("/job:worker/replica:0/cpu:0")
    merged = outer.make_merged_spec(sl.DeviceSpec.from_string("/task:2/gpu"))
    assert merged.to_string() == "/job:worker/replica:0/task:2/device:GPU:0"  # index kept
    assert outer.make_merged_spec(sl.DeviceSpec()) == outer
    assert merge_device("/gpu:1", "/job:worker") == "/job:worker/device:GPU:1"
    assert merge_device("", "/gpu:1") == "/device:GPU:1"
    assert merge_device(sl.DeviceSpec(job="a"), None) == "/job:a"
    assert canonical_name(None) == "" and canonical_name(outer) == outer.to_string()


# -- device scopes -----------------------------------------------------------------------------
def test_no_scope_no_device():
    x = sl.constant(1.0)
    assert x.op.device == "" and x.device == ""
    assert x.op.colocation_groups() == [f"loc:@{x.op.name}"]


def test_nested_scopes_merge_inner_over_outer():
    with sl.device("/job:worker/replica:0"):
        a = sl.constant(1.0)
        with sl.device("/task:1/cpu:0"):
            b = sl.constant(1.0)
            with sl.device("/gpu:1"):
                c = sl.constant(1.0)
            with sl.device(sl.DeviceSpec(job="ps")):
                d = sl.constant(1.0)
        e = sl.constant(1.0)
    assert a.device == "/job:worker/replica:0"
    assert b.device == "/job:worker/replica:0/task:1/device:CPU:0"
    assert c.device == "/job:worker/replica:0/task:1/device:GPU:1"
    assert d.device == "/job:ps/replica:0/task:1/device:CPU:0"
    assert e.device == "/job:worker/replica:0"
    assert sl.constant(1.0).device == ""


def test_none_clears_and_empty_keeps():
    with sl.device("/job:worker/gpu:0"):
        with sl.device(None):
            cleared = sl.constant(1.0)
            with sl.device("/cpu:1"):
                inner = sl.constant(1.0)
        with sl.device(""):
            kept = sl.constant(1.0)
        after = sl.constant(1.0)
    assert cleared.device == ""
    assert inner.device == "/device:CPU:1"
    assert kept.device == after.device == "/job:worker/device:GPU:0"


def test_canonical_device_on_ops_and_set_device():
    with sl.device("/gpu:0"):
        x = sl.constant(1.0)
    assert x.op.device == "/device:GPU:0"
    x.op._set_device("/job:localhost/cpu:2")
    assert x.op.device == "/job:localhost/device:CPU:2"
    x.op._set_device(sl.DeviceSpec(device_type="gpu"))
    assert x.op.device == "/device:GPU:*"
    x.op._set_device(None)
    assert x.op.device == ""


def test_set_device_bumps_the_mutation_version(fresh_graph):
    x = sl.constant(1.0)
    fresh_graph.mark_planned()
    before = fresh_graph.mutation_version
    x.op._set_device("/cpu:0")
    assert fresh_graph.mutation_version == before + 1


def test_bad_scope_argument():
    with pytest.raises(TypeError, match="device name"):
        with sl.device(3):
            pass
    with pytest.raises(ValueError, match="/foo:1"):
        with sl.device("/foo:1"):
            pass


# -- device functions --------------------------------------------------------------------------
def matmul_on_gpu(op):
    return "/gpu:1" if op.type == "MatMul" else "/cpu:0"


def test_device_function_sees_the_built_op():
    a = sl.constant([[1.0]])
    with sl.device(matmul_on_gpu):
        m = sl.matmul(a, a)
        s = sl.add(m, m)
    assert a.device == ""
    assert m.device == "/device:GPU:1"
    assert s.device == "/device:CPU:0"


def test_device_function_nested_in_names():
    seen = []

    def fn(op):
        seen.append((op.name, op.device))
        return sl.DeviceSpec(device_type="GPU", device_index=1) if op.type == "MatMul" else None

    a = sl.constant([[1.0]], name="a")
    with sl.device("/job:worker/cpu:0"):
        with sl.device(fn):
            m = sl.matmul(a, a, name="m")  # fn's result, then the outer scope fills the job
            c = sl.constant(1.0, name="c")  # fn says nothing: the outer scope applies
            with sl.device("/task:3"):
                t = sl.constant(1.0, name="t")  # fn sees the inner scope's /task:3
            with sl.device(None):
                n = sl.constant(1.0, name="n")  # fn is outside the break
    assert m.device == "/job:worker/device:GPU:1"
    assert c.device == "/job:worker/device:CPU:0"
    assert t.device == "/job:worker/device:CPU:0"  # TF1: the function's result replaces it
    assert n.device == ""
    assert seen == [("m", ""), ("c", ""), ("t", "/task:3")]


def test_device_function_under_string_scope_inside():
    with sl.device(matmul_on_gpu), sl.device("/job:ps"):
        x = sl.constant(1.0)
    assert x.device == "/device:CPU:0"


# -- colocation --------------------------------------------------------------------------------
def test_colocate_with_takes_target_device_and_group():
    with sl.device("/job:ps/cpu:1"):
        x = sl.constant(1.0, name="x")
    with sl.device("/gpu:0"):
        with sl.colocate_with(x):  # a Tensor: its op
            y = sl.identity(x, name="y")
            with sl.device("/gpu:3"):
                z = sl.identity(y, name="z")  # the target's device still wins
        after = sl.identity(x)
    assert y.device == z.device == "/job:ps/device:CPU:1"
    assert y.op.colocation_groups() == z.op.colocation_groups() == ["loc:@x"]
    assert x.op.colocation_groups() == ["loc:@x"]
    assert after.device == "/device:GPU:0"
    assert after.op.colocation_groups() == [f"loc:@{after.op.name}"]
    assert "_class" not in y.op.attrs and "colocation" not in str(y.op.attrs)


def test_colocate_with_ignores_outer_scopes_even_for_deviceless_target():
    x = sl.constant(1.0, name="x")
    with sl.device("/gpu:0"), sl.colocate_with(x.op):
        y = sl.identity(x)
        with sl.device("/cpu:2"):  # the target has no device: a scope inside applies
            z = sl.identity(x)
    assert y.device == ""
    assert z.device == "/device:CPU:2"
    assert y.op.colocation_groups() == z.op.colocation_groups() == ["loc:@x"]


def test_colocation_follows_the_targets_group_and_nests():
    with sl.device("/cpu:1"):
        a = sl.constant(1.0, name="a")
    b = sl.constant(1.0, name="b")
    with sl.colocate_with(a):
        a2 = sl.identity(a, name="a2")
    with sl.colocate_with(a2):  # a2 is in a's group: so is c
        c = sl.identity(a2, name="c")
        with sl.colocate_with(b):  # nested: both groups, the device of the innermost that has one
            d = sl.identity(b, name="d")
            with sl.colocate_with(None, ignore_existing=True):
                e = sl.identity(b, name="e")
        with sl.colocate_with(b, ignore_existing=True):
            f = sl.identity(b, name="f")
    assert c.op.colocation_groups() == ["loc:@a"] and c.device == "/device:CPU:1"
    assert d.op.colocation_groups() == ["loc:@a", "loc:@b"] and d.device == "/device:CPU:1"
    assert e.op.colocation_groups() == ["loc:@e"] and e.device == ""
    assert f.op.colocation_groups() == ["loc:@b"] and f.device == ""


def test_colocate_with_errors(fresh_graph):
    with pytest.raises(ValueError, match="ignore_existing"):
        with sl.colocate_with(None):
            pass
    with pytest.raises(TypeError, match="Operation, Tensor or Variable"):
        with sl.colocate_with("x"):
            pass
    with sl.Graph().as_default():
        other = sl.constant(1.0)
    with pytest.raises(ValueError, match="different graph"):
        with fresh_graph.colocate_with(other):
            pass


def test_variable_colocation():
    with sl.device("/job:ps/task:0/cpu:0"):
        v = sl.Variable(1.0, name="v")
    assert v.device == "/job:ps/task:0/device:CPU:0"
    assert v.initializer.device == v.op.device == v.device
    with sl.device("/gpu:0"):
        w = sl.Variable(2.0, name="w")
        with sl.colocate_with(v):
            r = v.read_value()
            upd = v.assign_add(sl.constant(1.0) * 2.0)
            s = sl.Variable(0.0, name="slot")  # an optimizer slot: with its variable
        plain = w.read_value()
    for t in (r, upd, s.handle):
        assert t.device == v.device
        assert t.op.colocation_groups() == [f"loc:@{v.op.name}"]
    assert plain.device == "/device:GPU:0"
    assert w.op.colocation_groups() == [f"loc:@{w.op.name}"]
