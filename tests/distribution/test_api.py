"""`sl.distribution`'s objects on their own: device names, meshes, layout maps and their
matching rules, the layout checks, DataParallel / ModelParallel defaults, the current
distribution and its scopes, and `initialize`'s argument checks (no job is joined here)."""

import re
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest
from jax.sharding import PartitionSpec

import sluice as sl
from sluice.distribution import (
    DataParallel,
    DeviceMesh,
    LayoutMap,
    ModelParallel,
    TensorLayout,
)


@pytest.fixture(autouse=True)
def no_distribution():
    """Every test starts and ends with no distribution set (it is one per process)."""
    sl.distribution.set_distribution(None)
    yield
    sl.distribution.set_distribution(None)


def _mesh_2x2():
    return DeviceMesh((2, 2), ("batch", "model"))


# -- devices and meshes ------------------------------------------------------------------------
def test_list_devices_names_platform_and_id():
    assert sl.distribution.list_devices() == ["cpu:0", "cpu:1", "cpu:2", "cpu:3"]
    assert sl.distribution.list_devices("CPU") == ["cpu:0", "cpu:1", "cpu:2", "cpu:3"]


def test_mesh_shape_and_axes():
    mesh = _mesh_2x2()
    assert mesh.shape == (2, 2) and mesh.axis_names == ("batch", "model")
    assert mesh.axis_size("model") == 2
    assert mesh.jax_mesh.shape == {"batch": 2, "model": 2}
    assert list(mesh.devices.flat) == jax.devices()
    assert repr(mesh) == "DeviceMesh(shape=(2, 2), axis_names=('batch', 'model'))"


@pytest.mark.parametrize("shape, axes, devices, message", [
    ((2, 2), ("batch",), None, r"shape \(2, 2\) and axis_names \('batch',\)"),
    ((2, 2), ("x", "x"), None, r"must differ.*\('x', 'x'\)"),
    ((3,), ("batch",), None, r"shape \(3,\) holds 3 devices, but 4 devices"),
    ((2, 4), ("batch", "model"), None, r"holds 8 devices, but 4"),
    ((4,), ("batch",), ["cpu:0", "cpu:1"], r"holds 4 devices, but 2"),
])  # fmt: skip
def test_mesh_errors_name_the_numbers(shape, axes, devices, message):
    with pytest.raises(ValueError, match=message):
        DeviceMesh(shape, axes, devices)


def test_mesh_devices_by_name():
    all_devices = jax.devices()
    mesh = DeviceMesh((2,), ("batch",), devices=["cpu:3", "CPU:1"])
    assert list(mesh.devices.flat) == [all_devices[3], all_devices[1]]
    mixed = DeviceMesh((2,), ("batch",), devices=[all_devices[2], "cpu:0"])
    assert list(mixed.devices.flat) == [all_devices[2], all_devices[0]]
    with pytest.raises(ValueError, match=r"No device 'cpu:9'.*cpu:0"):
        DeviceMesh((1,), ("batch",), devices=["cpu:9"])


def test_mesh_takes_tf1_device_names_and_rejects_missing_platforms():
    all_devices = jax.devices()
    mesh = DeviceMesh((2,), ("batch",), devices=["/cpu:1", "/device:CPU:2"])
    assert list(mesh.devices.flat) == [all_devices[1], all_devices[2]]
    with pytest.raises(ValueError, match=r"No device 'gpu:0'.*the devices are \['cpu:0'"):
        DeviceMesh((1,), ("batch",), devices=["gpu:0"])


# -- layout maps ------------------------------------------------------------------------------
def test_layout_map_keys_are_searched_regexes():
    layout_map = LayoutMap(_mesh_2x2())
    layout_map["dense.*kernel"] = (None, "model")
    layout_map["embedding"] = TensorLayout(("model", None))
    found = layout_map["model/dense_1/kernel"]
    assert isinstance(found, TensorLayout) and found.axes == (None, "model")
    assert found.device_mesh is layout_map.device_mesh
    assert layout_map["model/embedding/embeddings"].axes == ("model", None)
    assert layout_map["dense/bias"] is None  # no key matches: replicated
    assert layout_map["kernel/dense"] is None  # searched, not just substring-free
    assert len(layout_map) == 2 and list(layout_map) == ["dense.*kernel", "embedding"]
    del layout_map["embedding"]
    assert layout_map["model/embedding/embeddings"] is None


def test_layout_map_exact_key_wins_and_ambiguity_is_an_error():
    layout_map = LayoutMap(_mesh_2x2())
    layout_map["kernel"] = ("model", None)
    layout_map["dense/kernel"] = (None, "model")
    assert layout_map["dense/kernel"].axes == (None, "model")  # exact, though both match
    with pytest.raises(ValueError, match=r"'lstm/dense/kernel' matches more than one key"):
        layout_map["lstm/dense/kernel"]


def test_layout_map_bad_values_and_duplicate_keys():
    layout_map = LayoutMap(_mesh_2x2())
    with pytest.raises(ValueError, match=r"tuple of mesh axis names.*'model'.*'dense/kernel'"):
        layout_map["dense/kernel"] = "model"
    with pytest.raises(ValueError, match=r"got 3 for 'bias'"):
        layout_map["bias"] = 3
    layout_map["dense/kernel"] = [None, "model"]
    assert layout_map["dense/kernel"].axes == (None, "model")
    with pytest.raises(ValueError, match=r"'dense/kernel' already has the layout"):
        layout_map["dense/kernel"] = ("model", None)
    with pytest.raises(re.error):  # a bad pattern fails when set, not when a variable is placed
        layout_map["dense/(kernel"] = (None, "model")
    assert list(layout_map) == ["dense/kernel"]


# -- layout checks -----------------------------------------------------------------------------
def _model_parallel(key="dense/kernel", layout=(None, "model")):
    layout_map = LayoutMap(_mesh_2x2())
    layout_map[key] = layout
    return ModelParallel(layout_map=layout_map)


def test_variable_sharding_follows_the_layout():
    d = _model_parallel()
    assert d.variable_sharding("dense/kernel", (8, 6)).spec == PartitionSpec(None, "model")
    assert d.variable_sharding("dense/bias", (6,)).spec == PartitionSpec()


@pytest.mark.parametrize("layout, shape, message", [
    ((None, "model"), (8,), r"layout \(None, 'model'\) of variable 'dense/kernel' has 2 "
                            r"dimensions; variable 'dense/kernel' has shape \(8,\)"),
    (("data", None), (8, 6), r"variable 'dense/kernel' names the axis 'data'.*"
                             r"\('batch', 'model'\)"),
    ((None, "model"), (8, 5), r"variable 'dense/kernel' has shape \(8, 5\): its dimension of "
                              r"size 5 cannot be split evenly over the 2 devices of mesh axis "
                              r"'model'"),
])  # fmt: skip
def test_layout_errors_name_the_variable_and_sizes(layout, shape, message):
    d = _model_parallel(layout=layout)
    with pytest.raises(ValueError, match=message):
        d.variable_sharding("dense/kernel", shape)


# -- distributions -----------------------------------------------------------------------------
def test_data_parallel_defaults_to_every_device():
    d = DataParallel()
    assert d.device_mesh.shape == (4,) and d.device_mesh.axis_names == ("batch",)
    assert d.batch_dim_name == "batch" and d.batch_shards == 4
    assert list(d.mesh.devices.flat) == jax.devices()
    assert d.replicated().spec == PartitionSpec()
    assert d.data_sharding((8, 3)).spec == PartitionSpec("batch")
    assert d.data_sharding(()).spec == PartitionSpec()  # a scalar: nothing to split
    assert d.variable_sharding("dense/kernel", (3, 2)).spec == PartitionSpec()
    with pytest.raises(ValueError, match=r"has 6 samples.*the 4 devices of the mesh's 'batch'"):
        d.data_sharding((6, 3))


def test_data_parallel_on_some_devices_or_a_mesh():
    d = DataParallel(devices=jax.devices()[:2])
    assert d.batch_shards == 2
    assert list(d.mesh.devices.flat) == jax.devices()[:2]
    assert d.data_sharding((6, 3)).spec == PartitionSpec("batch")  # 6 = 3 x 2
    by_mesh = DataParallel(mesh=DeviceMesh((4,), ("data",)))
    assert by_mesh.batch_dim_name == "data" and by_mesh.batch_shards == 4
    with pytest.raises(ValueError, match="not both"):
        DataParallel(device_mesh=DeviceMesh((4,), ("batch",)), devices=jax.devices())
    with pytest.raises(ValueError, match="one-axis mesh"):
        DataParallel(device_mesh=_mesh_2x2())


def test_model_parallel_batch_axis():
    layout_map = LayoutMap(_mesh_2x2())
    d = ModelParallel(layout_map=layout_map)
    assert d.batch_dim_name == "batch" and d.batch_shards == 2
    assert d.device_mesh is layout_map.device_mesh
    other = ModelParallel(layout_map=layout_map, batch_dim_name="model")
    assert other.batch_dim_name == "model"
    first = ModelParallel(layout_map=LayoutMap(DeviceMesh((2, 2), ("model", "data"))))
    assert first.batch_dim_name == "model"  # the mesh's first axis, whatever its name
    with pytest.raises(ValueError, match=r"batch_dim_name 'data' is not an axis"):
        ModelParallel(layout_map=layout_map, batch_dim_name="data")
    with pytest.raises(TypeError, match="layout_map must be a LayoutMap"):
        ModelParallel(layout_map={"dense/kernel": (None, "model")})
    with pytest.raises(ValueError, match="the layout map's mesh"):
        ModelParallel(layout_map=layout_map, device_mesh=_mesh_2x2())


def test_set_distribution_and_nested_scopes_restore_the_previous():
    outer, inner = DataParallel(), DataParallel(devices=jax.devices()[:2])
    assert sl.distribution.distribution() is None
    with outer.scope() as entered:
        assert entered is outer and sl.distribution.distribution() is outer
        with inner.scope():
            assert sl.distribution.distribution() is inner
        assert sl.distribution.distribution() is outer
        with pytest.raises(RuntimeError), inner.scope():  # restored on an error too
            raise RuntimeError
        assert sl.distribution.distribution() is outer
    assert sl.distribution.distribution() is None
    sl.distribution.set_distribution(inner)
    with outer.scope():
        pass
    assert sl.distribution.distribution() is inner


def test_only_distributions_are_accepted():
    with pytest.raises(TypeError, match="takes a Distribution or None"):
        sl.distribution.set_distribution("DataParallel")
    with pytest.raises(TypeError, match="distribution must be a sl.distribution object"):
        sl.SessionConfig(distribution=object())
    assert sl.SessionConfig(distribution=DataParallel()).distribution.batch_shards == 4


# -- processes ---------------------------------------------------------------------------------
def test_importing_sluice_starts_no_jax_backend():
    # initialize() must come before any backend starts: importing sluice cannot start one
    script = textwrap.dedent("""
        import sluice
        from jax._src import xla_bridge
        assert not xla_bridge._backends, xla_bridge._backends
        print("ok")
    """)
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_initialize_checks_its_arguments_before_joining(monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("jax.distributed.initialize must not be reached")

    monkeypatch.setattr(jax.distributed, "initialize", never)
    with pytest.raises(ValueError, match=r"process_id 2 is not in \[0, 2\)"):
        sl.distribution.initialize("127.0.0.1:1234", 2, 2)
    with pytest.raises(ValueError, match=r"process_id -1 is not in \[0, 3\)"):
        sl.distribution.initialize("127.0.0.1:1234", 3, -1)
    monkeypatch.setenv("SLUICE_NUM_PROCESSES", "two")
    with pytest.raises(ValueError, match=r"SLUICE_NUM_PROCESSES='two' must be an integer"):
        sl.distribution.initialize("127.0.0.1:1234", process_id=0)
    monkeypatch.setenv("SLUICE_NUM_PROCESSES", "2")
    monkeypatch.setenv("SLUICE_PROCESS_ID", "5")
    with pytest.raises(ValueError, match=r"process_id 5 is not in \[0, 2\)"):
        sl.distribution.initialize("127.0.0.1:1234")


def test_initialize_passes_the_environment_on(monkeypatch):
    calls = []
    monkeypatch.setattr(jax.distributed, "initialize", lambda *a, **kw: calls.append((a, kw)))
    monkeypatch.setenv("SLUICE_COORDINATOR", "10.0.0.1:1234")
    monkeypatch.setenv("SLUICE_NUM_PROCESSES", "3")
    monkeypatch.setenv("SLUICE_PROCESS_ID", "1")
    sl.distribution.initialize(local_device_ids=[0])
    assert calls == [(("10.0.0.1:1234", 3, 1), {"local_device_ids": [0]})]
    assert sl.distribution.process_index() == 0 and sl.distribution.process_count() == 1
    assert sl.distribution.is_chief()


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: sl.distribution.DataParallel(devices=[]), "at least one device"),
        (lambda: DeviceMesh((0,), ("batch",), devices=[]), "at least one device"),
        (lambda: DeviceMesh((2,), ("batch",), devices=["cpu:0", "cpu:0"]), "listed twice"),
    ],
)
def test_meshes_without_devices_or_with_a_device_twice_are_errors(make, message):
    with pytest.raises(ValueError, match=message):
        make()


# -- issue 25: inputs checked, never coerced --------------------------------------------------
def _never_joins(monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("jax.distributed.initialize must not be reached")

    monkeypatch.setattr(jax.distributed, "initialize", never)
    for name in (
        "SLUICE_COORDINATOR",
        "SLUICE_NUM_PROCESSES",
        "SLUICE_PROCESS_ID",
        "JAX_COORDINATOR_ADDRESS",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("address, message", [
    ("127.0.0.1:notaport", r"the port 'notaport' is not an integer in 1..65535"),
    ("127.0.0.1:0", r"the port '0' is not an integer in 1..65535"),
    ("127.0.0.1:65536", r"the port '65536' is not"),
    ("127.0.0.1:", r"the port '' is not"),
    ("127.0.0.1", r"it has no ':port'"),
    (":1234", r"the host is empty"),
    ("300.1.2.3:1234", r"the host '300.1.2.3' is not an IPv4 address"),
    ("bad host:1234", r"the host 'bad host' is not a host name"),
    ("::1:1234", r"write it in brackets"),
    ("[::g]:1234", r"not an IPv6 address in brackets"),
])  # fmt: skip
def test_initialize_checks_the_coordinator_address(monkeypatch, address, message):
    _never_joins(monkeypatch)
    monkeypatch.setenv("SLUICE_COORDINATOR", address)
    with pytest.raises(
        ValueError,
        match=rf"SLUICE_COORDINATOR={re.escape(repr(address))} is "
        rf"not a coordinator address: .*{message}",
    ):
        sl.distribution.initialize(num_processes=1, process_id=0)
    monkeypatch.delenv("SLUICE_COORDINATOR")
    with pytest.raises(
        ValueError,
        match=rf"coordinator_address={re.escape(repr(address))}.*"
        rf"{message}",
    ):
        sl.distribution.initialize(address, 1, 0)
    monkeypatch.setenv("JAX_COORDINATOR_ADDRESS", address)  # JAX's own, read when ours is unset
    with pytest.raises(ValueError, match=r"JAX_COORDINATOR_ADDRESS="):
        sl.distribution.initialize(num_processes=1, process_id=0)


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1:1",
        "10.0.0.1:65535",
        "localhost:1234",
        "node-0.cluster.local:80",
        "my_service:8476",
        "[::1]:1234",
        "[2001:db8::7]:9000",
    ],
)
def test_initialize_accepts_plausible_addresses(monkeypatch, address):
    calls = []
    _never_joins(monkeypatch)
    monkeypatch.setattr(jax.distributed, "initialize", lambda *a, **kw: calls.append(a))
    sl.distribution.initialize(address, np.int64(2), np.int32(1))
    assert calls == [(address, 2, 1)]


@pytest.mark.parametrize("env, args, message", [
    ({"SLUICE_NUM_PROCESSES": "0"}, (), r"SLUICE_NUM_PROCESSES='0' must be an integer of at "
                                        r"least 1, got 0"),
    ({"SLUICE_NUM_PROCESSES": "2.0"}, (), r"SLUICE_NUM_PROCESSES='2.0' must be an integer"),
    ({"SLUICE_PROCESS_ID": "-1"}, (), r"SLUICE_PROCESS_ID='-1' must be an integer of at least 0"),
    ({"SLUICE_PROCESS_ID": "x"}, (), r"SLUICE_PROCESS_ID='x' must be an integer"),
    ({}, (2.0, 0), r"num_processes must be an integer, got 2.0 \(float\)"),
    ({}, (True, 0), r"num_processes must be an integer, got the bool True"),
    ({}, (0, 0), r"num_processes must be an integer of at least 1, got 0"),
    ({}, (2, 1.0), r"process_id must be an integer, got 1.0"),
    ({}, (2, "1"), r"process_id must be an integer, got '1' \(str\)"),
])  # fmt: skip
def test_initialize_checks_counts_and_indices(monkeypatch, env, args, message):
    _never_joins(monkeypatch)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=message):
        sl.distribution.initialize("127.0.0.1:1234", *args)


@pytest.mark.parametrize("shape, axes, message", [
    ((1.7,), ("batch",), r"shape\[0\] \(of shape \(1.7,\)\) must be an integer, got 1.7"),
    ((4.0,), ("batch",), r"shape\[0\] .* must be an integer, got 4.0"),
    ((True,), ("batch",), r"shape\[0\] .* must be an integer, got the bool True"),
    ((2, "2"), ("batch", "model"), r"shape\[1\] .* must be an integer, got '2'"),
    (4, ("batch",), r"shape must be a sequence of integers.*got 4"),
    ((-4,), ("batch",), r"at least one device on every axis; got shape \(-4,\)"),
    ((4,), "batch", r"axis_names must be a sequence of axis names.*got 'batch'"),
    ((4,), (1,), r"axis_names must hold non-empty strings; got 1"),
    ((4,), ("",), r"axis_names must hold non-empty strings; got ''"),
])  # fmt: skip
def test_mesh_dimensions_are_integers_never_truncated(shape, axes, message):
    with pytest.raises(ValueError, match=message):
        DeviceMesh(shape, axes)


def test_mesh_takes_numpy_integers():
    mesh = DeviceMesh(np.array([2, 2]), ["batch", "model"])
    assert mesh.shape == (2, 2) and all(type(s) is int for s in mesh.shape)
    assert DeviceMesh((np.int64(4),), ("batch",)).shape == (4,)


@pytest.mark.parametrize("make, message", [
    (lambda: TensorLayout("model"), r"TensorLayout: axes must be a sequence.*got 'model'"),
    (lambda: TensorLayout((None, 1)), r"an axis is a mesh axis name or None; got 1"),
    (lambda: TensorLayout((None,), device_mesh="mesh"), r"device_mesh must be a DeviceMesh"),
    (lambda: LayoutMap("mesh"), r"LayoutMap: device_mesh must be a DeviceMesh, got 'mesh'"),
    (lambda: LayoutMap(_mesh_2x2()).__setitem__(1, (None,)), r"a key is a regular expression"),
    (lambda: LayoutMap(_mesh_2x2()).__setitem__("k", (None, 0)), r"got 0 in \(None, 0\)"),
    (lambda: DataParallel(devices="cpu:0"), r"devices must be a list.*the string 'cpu:0'"),
    (lambda: DataParallel(mesh=_mesh_2x2().jax_mesh), r"device_mesh must be a sl.distribution"),
    (lambda: DataParallel(device_mesh=DeviceMesh((4,), ("a",)), mesh=DeviceMesh((4,), ("b",))),
     r"device_mesh or mesh .*not both"),
    (lambda: ModelParallel(layout_map=LayoutMap(_mesh_2x2()), batch_dim_name=0),
     r"batch_dim_name must be a mesh axis name \(a string\) or None, got 0"),
    (lambda: ModelParallel(layout_map=LayoutMap(_mesh_2x2()), batch_dim_name=""),
     r"batch_dim_name '' is not an axis"),
    (lambda: sl.distribution.Distribution(_mesh_2x2().jax_mesh), r"device_mesh must be a"),
    (lambda: DeviceMesh((1,), ("batch",), devices="cpu:0"), r"the string 'cpu:0'"),
])  # fmt: skip
def test_layouts_and_distributions_check_their_arguments(make, message):
    with pytest.raises(ValueError, match=message):
        make()
