"""`sl.summary.FileWriter`'s life cycle, as an independent checker would probe it: many events
readable after `flush` while the writer is open, non-ASCII tags, the writer thread gone after
`close` (twice), folders made when missing and a clear error when the logdir is a file, two
writers in one folder, and events queued by a script that exits without `close` on disk."""

import os
import subprocess
import sys
import threading
import warnings

import pytest

import sluice as sl
from tests.summary.readers import event_files, read_events

summary_pb2 = pytest.importorskip("tensorboardX.proto.summary_pb2")


def scalar(tag, value):
    return summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, simple_value=value)])


def writer_threads():
    return [t for t in threading.enumerate() if t.name == "sluice-event-writer"]


def test_many_events_flushed_while_open_and_no_thread_left_after_close(tmp_path):
    threads_before = len(writer_threads())
    logdir = tmp_path / "new" / "nested"  # made, as TF1 makes it
    writer = sl.summary.FileWriter(str(logdir), max_queue=5)
    assert len(writer_threads()) == threads_before + 1
    for step in range(2000):
        writer.add_summary(scalar("loss", step / 2), global_step=step)
    writer.add_summary(scalar("損失/ü", 1.5).SerializeToString(), global_step=2000)
    writer.flush()
    (path,) = event_files(str(logdir))
    events = read_events(path)  # the writer is still open
    assert events[0].file_version == "brain.Event:2"
    assert [e.step for e in events[1:]] == list(range(2001))
    assert [e.summary.value[0].simple_value for e in events[1:4]] == [0.0, 0.5, 1.0]
    assert events[-1].summary.value[0].tag == "損失/ü"
    writer.close()
    writer.close()  # a second close does nothing
    assert len(writer_threads()) == threads_before
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        writer.add_summary(scalar("late", 1.0), 1)
    assert "closed FileWriter" in str(caught[0].message)
    assert len(read_events(path)) == 2002


def test_two_writers_in_one_folder_write_two_files(tmp_path):
    with (
        sl.summary.FileWriter(str(tmp_path)) as first,
        sl.summary.FileWriter(str(tmp_path)) as second,
    ):
        first.add_summary(scalar("a", 1.0), 1)
        second.add_summary(scalar("b", 2.0), 2)
    files = event_files(str(tmp_path))
    assert len(files) == 2
    tags = sorted(e.summary.value[0].tag for path in files for e in read_events(path)[1:])
    assert tags == ["a", "b"]


def test_a_logdir_that_is_a_file_is_refused_clearly(tmp_path):
    path = tmp_path / "a_file"
    path.write_text("")
    with pytest.raises(FileExistsError, match=f"logdir {path} is a file; expected a folder"):
        sl.summary.FileWriter(str(path))


def test_events_of_a_script_that_exits_without_close_are_on_disk(tmp_path):
    script = (
        "import sluice as sl\n"
        "from tensorboardX.proto import summary_pb2\n"
        f"writer = sl.summary.FileWriter({str(tmp_path)!r}, flush_secs=3600)\n"
        "for step in range(25):\n"
        "    writer.add_summary(summary_pb2.Summary(value=[\n"
        "        summary_pb2.Summary.Value(tag='x', simple_value=step)]), step)\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    (path,) = event_files(str(tmp_path))
    assert [e.step for e in read_events(path)[1:]] == list(range(25))
