"""A full disk during `Saver.save` is an OSError naming the file, not a crash (HDF5 segfaults
when one of its own writes fails), and the earlier checkpoint, its meta graph and the state file
stay as they were, with no temporary file left behind."""

import errno
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import sluice as sl
from sluice import train
from sluice._tf1.checkpoints import atomic
from tests.file_faults import fail_writes_to

HERE = os.path.dirname(os.path.abspath(__file__))

needs_proc = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")


@needs_proc
@pytest.mark.parametrize("target", ["model-2.h5", "model-2.meta", "checkpoint.json"])
def test_a_full_disk_during_save_is_an_oserror_and_keeps_the_earlier_checkpoint(
    tmp_path, monkeypatch, target
):
    with sl.Graph().as_default():
        w = sl.Variable(np.zeros(3, np.float32), name="w")
        saver = train.Saver()
        with sl.Session() as sess:
            sess.run(w.initializer)
            first = saver.save(sess, str(tmp_path / "model"), global_step=1)
            state_before = (tmp_path / "checkpoint.json").read_bytes()
            meta_before = (tmp_path / "model-1.meta").read_bytes()
            sess.run(w.assign(np.ones(3, np.float32)))
            with monkeypatch.context() as patch:
                fail_writes_to(patch, target)
                with pytest.raises(OSError) as caught:
                    saver.save(sess, str(tmp_path / "model"), global_step=2)
            assert caught.value.errno == errno.ENOSPC
            assert str(tmp_path / target) in str(caught.value)
            assert (tmp_path / "checkpoint.json").read_bytes() == state_before
            assert (tmp_path / "model-1.meta").read_bytes() == meta_before
            assert not [f for f in os.listdir(tmp_path) if atomic.is_temporary(f)]
            assert train.latest_checkpoint(str(tmp_path)) == first
            saver.restore(sess, first)
            np.testing.assert_array_equal(sess.run(w), np.zeros(3, np.float32))
            # space again: training goes on saving
            sess.run(w.assign(np.ones(3, np.float32)))
            second = saver.save(sess, str(tmp_path / "model"), global_step=2)
            assert train.latest_checkpoint(str(tmp_path)) == second


# Writes a checkpoint under a file-size limit, as a nearly full disk does: the h5 write fails
# (EFBIG) where HDF5 used to crash the process with SIGSEGV. Imports no JAX (saver_child).
_CHILD = r"""
import json, os, resource, signal, sys
sys.path.insert(0, sys.argv[1])
import saver_child
saver_child.import_checkpoint_modules()
import numpy as np
from sluice._tf1.checkpoints import h5_format

directory, limit = sys.argv[2], int(sys.argv[3])
h5_format.write_checkpoint(os.path.join(directory, "m-1.h5"), {"w": np.zeros(4, np.float32)}, 1)
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit then fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
arrays = {f"v{i}": np.ones((50, 50), np.float32) for i in range(40)}
try:
    h5_format.write_checkpoint(os.path.join(directory, "m-2.h5"), arrays, 2)
    print(json.dumps({"raised": None}))
except OSError as err:
    print(json.dumps({"raised": str(err), "errno": err.errno}))
"""


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform != "linux", reason="RLIMIT_FSIZE")
@pytest.mark.parametrize("limit", [2_000, 200_000])
def test_a_failing_checkpoint_write_is_an_oserror_not_a_segfault(tmp_path, limit):
    from sluice._tf1.checkpoints import h5_format

    done = subprocess.run(
        [sys.executable, "-c", _CHILD, HERE, str(tmp_path), str(limit)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["errno"] == errno.EFBIG
    assert str(tmp_path / "m-2.h5") in result["raised"]
    assert sorted(os.listdir(tmp_path)) == ["m-1.h5"]  # no temporary file, no m-2.h5
    np.testing.assert_array_equal(
        h5_format.read_checkpoint(str(tmp_path / "m-1.h5")).arrays["w"], np.zeros(4, np.float32)
    )
