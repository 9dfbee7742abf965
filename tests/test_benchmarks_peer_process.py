"""benchmarks/peer_process.py: the peers' rows run in a child process of their own and are
timed there; the benchmark's `time_rows` takes the child's figure for them."""

import importlib.util
import sys

from benchmarks import peer_process, run


def test_time_rows_takes_the_time_measured_in_the_child():
    rows = run.time_rows({"remote": (lambda: peer_process.Timed(7.5), ())}, steps=4)
    assert rows["remote"]["median_ms"] == rows["remote"]["min_ms"] == 7.5


def test_child_reports_its_rows_and_times_each_step():
    # a stand-in peer in the child: the real ones need torch, which tests never install
    code = (
        "import sys; from benchmarks import peer_process, peers; "
        "peers.rnn_runs = lambda w: {'fake peer': lambda x, y: float(x.sum())}; "
        "peer_process.main(sys.argv[1:])"
    )
    child = peer_process.PeerProcess([sys.executable, "-c", code, "W1", "0", "0"])
    assert child.names == ["fake peer"]
    step = child.run("fake peer")
    assert isinstance(step(), peer_process.Timed) and float(step()) >= 0
    child.close()
    assert child.child.returncode == 0


def test_a_missing_peer_gives_no_rows():
    child = peer_process.PeerProcess.for_workload("W1")
    try:
        if importlib.util.find_spec("torch") is None:
            assert "pytorch" not in child.names
    finally:
        child.close()
