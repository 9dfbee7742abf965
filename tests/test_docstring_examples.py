"""Every `>>>` example in sluice's docstrings runs, and prints what it shows.

`doctest` collects the examples of every module of the package, one test per docstring, so they
run in the default test run (on its workers). An example sees its module's globals plus `sl`
(sluice) and `np` (NumPy); it builds its ops in a fresh default graph (conftest.py) and writes
its files in a temporary working directory. Output is compared with ELLIPSIS and
NORMALIZE_WHITESPACE.
"""

import copy
import doctest
import importlib
import pkgutil
import random

import numpy as np
import pytest

import sluice as sl

OPTIONS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def docstrings_with_examples() -> list[doctest.DocTest]:
    # walk_packages imports every package it walks, and we import every module it names
    names = [sl.__name__] + [m.name for m in pkgutil.walk_packages(sl.__path__, "sluice.")]
    finder = doctest.DocTestFinder()
    found = [t for name in names for t in finder.find(importlib.import_module(name))]
    return sorted((t for t in found if t.examples), key=lambda t: t.name)


DOCSTRINGS = docstrings_with_examples()


@pytest.fixture
def global_random_state():
    """Puts back Python's and NumPy's global generators, which an example may seed."""
    python_state, numpy_state = random.getstate(), np.random.get_state()
    yield
    random.setstate(python_state)
    np.random.set_state(numpy_state)


@pytest.mark.parametrize("docstring", DOCSTRINGS, ids=lambda t: t.name)
def test_docstring_examples_run(docstring, tmp_path, monkeypatch, global_random_state):
    monkeypatch.chdir(tmp_path)
    example = copy.copy(docstring)  # the runner clears its globals when it is done
    example.globs = {**docstring.globs, "sl": sl, "np": np}
    report = []
    failed, _ = doctest.DocTestRunner(optionflags=OPTIONS).run(example, out=report.append)
    assert not failed, "".join(report)


def test_the_examples_are_found():
    assert len(DOCSTRINGS) >= 40
