"""Every reader of a user's checkpoint files refuses a FIFO or a device, naming it, instead of
blocking forever (opening a FIFO for reading waits for a writer)."""

import os

import numpy as np
import pytest

import sluice as sl
from sluice import train
from sluice._tf1.checkpoints import h5_format, regular_file
from tests.file_faults import deadline

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")


@pytest.mark.parametrize("given", ["model-1.h5", "model-1"])
def test_restore_from_a_fifo_is_refused_naming_it(tmp_path, given):
    os.mkfifo(tmp_path / "model-1.h5")
    with sl.Graph().as_default():
        v = sl.Variable(1.0, name="v")
        with sl.Session() as sess, deadline():
            sess.run(v.initializer)
            with pytest.raises(sl.errors.InvalidArgumentError, match="FIFO.*not a regular file"):
                train.Saver().restore(sess, str(tmp_path / given))
        with deadline():
            with pytest.raises(h5_format.CheckpointError, match="model-1.h5"):
                h5_format.read_checkpoint(str(tmp_path / given))
            assert not h5_format.is_sluice_checkpoint(str(tmp_path / "model-1.h5"))


def test_regular_file_helper_names_each_kind(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "file").write_bytes(b"data")
    os.symlink(tmp_path / "file", tmp_path / "link")
    with deadline():
        with pytest.raises(regular_file.NotRegularFileError, match="fifo' is a FIFO"):
            regular_file.check_regular(str(tmp_path / "fifo"))
        with pytest.raises(regular_file.NotRegularFileError, match="is a directory"):
            regular_file.check_regular(str(tmp_path))
        with pytest.raises(regular_file.NotRegularFileError, match="is a character device"):
            regular_file.check_regular(os.devnull)
        with pytest.raises(regular_file.NotRegularFileError, match="is a symbolic link"):
            regular_file.check_regular(str(tmp_path / "link"), follow_symlinks=False)
        with pytest.raises(FileNotFoundError):
            regular_file.check_regular(str(tmp_path / "missing"))
        assert regular_file.read_regular(str(tmp_path / "link"), 3) == b"dat"
        fd = regular_file.open_regular(str(tmp_path / "file"))
        try:
            assert os.get_blocking(fd)
        finally:
            os.close(fd)


def test_a_checkpoint_swapped_for_a_fifo_after_the_check_is_not_read(tmp_path, monkeypatch):
    path = tmp_path / "model-1.h5"
    h5_format.write_checkpoint(str(path), {"w": np.zeros(2, np.float32)})
    real = h5_format.resolve_path

    def resolve_then_swap(p):
        resolved = real(p)
        os.remove(path)
        os.mkfifo(path)
        return resolved

    monkeypatch.setattr(h5_format, "resolve_path", resolve_then_swap)
    with deadline(), pytest.raises(h5_format.CheckpointError, match="FIFO"):
        h5_format.read_checkpoint(str(path))
