"""Every public name sluice had when public_api.json was recorded (before the second
regrouping) is still there, means the same kind of thing, and imports the same way."""

from __future__ import annotations

import importlib
import json
import pathlib

import pytest

import sluice
from tests.api.record_public_api import describe

RECORDED = json.loads(pathlib.Path(__file__).with_name("public_api.json").read_text())


def resolve(path: str):
    value = sluice
    for part in path.split(".")[1:]:
        value = getattr(value, part)
    return value


@pytest.mark.parametrize("path", sorted(RECORDED))
def test_namespace_keeps_every_recorded_name(path):
    recorded = RECORDED[path]
    namespace = resolve(path)
    if "alias_of" in recorded:
        assert namespace is resolve(recorded["alias_of"])
        return
    now = {name: describe(getattr(namespace, name, None)) for name in recorded["names"]}
    assert now == recorded["names"]
    if recorded["importable"]:
        assert importlib.import_module(path) is namespace
