"""DeviceScope: a partition's device as JAX's default on this thread, and the old one put back.

The partitioned interpreter enters a partition's device through it (`partitioned._Turns`), by
JAX's config state where this JAX has the one it expects, else by `jax.default_device`'s context
manager: both paths must place new arrays on the device, nest, and restore what was there.
"""

import jax
import pytest

from sluice.framework.interpreter import device_scope
from sluice.framework.interpreter.device_scope import DeviceScope


def _where_new_arrays_go():
    return next(iter(jax.numpy.zeros(2).devices()))


@pytest.mark.parametrize("path", ["config state", "context manager"])
def test_a_scope_places_new_arrays_on_its_device_nests_and_restores(monkeypatch, path):
    devices = jax.devices()
    if len(devices) < 2:
        pytest.skip("needs two devices")
    if path == "context manager":
        monkeypatch.setattr(device_scope, "_DEFAULT_DEVICE_STATE", None)
    outer, inner = DeviceScope(devices[1]), DeviceScope(devices[0])
    before = _where_new_arrays_go()
    previous = outer.enter()
    assert _where_new_arrays_go() == devices[1]
    nested = inner.enter()
    assert _where_new_arrays_go() == devices[0]
    inner.leave(nested)
    assert _where_new_arrays_go() == devices[1]
    outer.leave(previous)
    assert _where_new_arrays_go() == before


def test_the_fast_path_is_taken_on_this_jax():
    """The config-state path, not the fallback: the one W5's split loop was measured with."""
    scope = DeviceScope(jax.devices()[0])
    assert scope.leave is not device_scope._leave
