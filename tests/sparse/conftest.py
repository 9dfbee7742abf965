"""Both engines for every sparse test: `engine` gives the session config of one."""

import pytest

import sluice as sl

ENGINES = ["interpreted", "compiled"]


@pytest.fixture(params=ENGINES)
def engine(request):
    return request.param


def session(engine: str, fallback: bool = False) -> sl.Session:
    """A session of `engine`; `fallback`: the compiled side may run a step interpreted (ops
    whose output size depends on fed values), as engine="auto" does."""
    if engine == "compiled" and fallback:
        engine = "auto"
    return sl.Session(config=sl.SessionConfig(engine=engine))
