"""Every test builds its graph in a fresh default graph, and starts without the process-wide
seed of `sl.utils.set_random_seed`; the control-flow and gradient tests also run in both engines
(the differential sweep, tests/differential_sweep.py)."""

import pytest

import sluice as sl
from sluice import utils

pytest_plugins = ["tests.differential_sweep"]


@pytest.fixture(autouse=True)
def fresh_graph():
    g = sl.Graph()
    with g.as_default():
        yield g


@pytest.fixture(autouse=True)
def no_global_seed(monkeypatch):
    monkeypatch.setattr(utils, "_seed", None)
