"""Runs an example script in the test's own process, as `python script.py ARGS` would run it,
for checks that end before any training (a missing optional package): without a second
interpreter's start-up (about 2.5 s of CPU to import JAX and sluice)."""

from __future__ import annotations

import os
import runpy
import sys

import pytest


def exit_of_example(script: str, args: list[str], monkeypatch, missing: str) -> SystemExit:
    """The SystemExit that `script` ends with when the package `missing` is not installed (a
    None in sys.modules for it and its submodules, as Python reads a package it cannot find).
    Any other outcome fails the test: a normal end, or another exception (a traceback)."""
    examples = os.path.dirname(os.path.abspath(script))
    monkeypatch.setattr(sys, "argv", [script, *args])
    monkeypatch.syspath_prepend(examples)  # python puts the script's folder on sys.path
    for name in [n for n in sys.modules if n == missing or n.startswith(missing + ".")] + [missing]:
        monkeypatch.setitem(sys.modules, name, None)
    before = set(sys.modules)
    try:
        with pytest.raises(SystemExit) as stop:
            runpy.run_path(script, run_name="__main__")
    finally:  # the example's own helpers (_data, ...) are imported afresh by the next one
        for name in set(sys.modules) - before:
            path = getattr(sys.modules[name], "__file__", None)
            if path and os.path.dirname(os.path.abspath(path)) == examples:
                del sys.modules[name]
    return stop.value
