"""checkpoint.json is untrusted input: no name read from it ever leaves the checkpoint directory.

Every entry must be a plain file name of the form sluice writes (`<prefix>-<step>.h5`), resolved
inside the directory. `latest_checkpoint` / `get_checkpoint_state` raise an error naming the state
file and the entry; `Saver.save` drops such entries (with a warning) and never deletes them, nor
any file that is not a sluice checkpoint, nor the target of a symlink.
"""

import json
import os
import re
import warnings

import numpy as np
import pytest

import sluice as sl
from sluice import train
from sluice._tf1.checkpoints import checkpoint_state, h5_format


@pytest.fixture
def layout(tmp_path):
    """tmp/ckpt (the checkpoint directory) beside tmp/victim.h5 (a valid sluice checkpoint) and
    tmp/victim.txt: files a hostile state file may try to make sluice return or delete."""
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    h5_format.write_checkpoint(str(tmp_path / "victim.h5"), {"w": np.ones(3, np.float32)})
    (tmp_path / "victim.txt").write_text("precious")
    return ckpt


def _victims_intact(ckpt):
    parent = ckpt.parent
    assert (parent / "victim.txt").read_text() == "precious"
    np.testing.assert_array_equal(train.load_variable(str(parent / "victim.h5"), "w"), np.ones(3))


def _write_state(ckpt, paths, latest=None, **extra):
    state = {
        "format": "sluice.checkpoint_state",
        "version": 1,
        "model_checkpoint_path": paths[-1] if latest is None else latest,
        "all_model_checkpoint_paths": paths,
        **extra,
    }
    (ckpt / "checkpoint.json").write_text(json.dumps(state))


def _save_steps(ckpt, steps, max_to_keep=1):
    """What a training script does: a Saver saving `steps` into ckpt; returns the saver."""
    w = sl.Variable(np.zeros(3, np.float32), name="w")
    saver = train.Saver([w], max_to_keep=max_to_keep)
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        for step in steps:
            saver.save(sess, str(ckpt / "model"), global_step=step)
    return saver


def _hostile_entries(ckpt):
    parent = ckpt.parent
    return [
        "../victim.h5",
        "../victim.txt",
        str(parent / "victim.h5"),  # absolute, outside
        str(ckpt / "model-1.h5"),  # absolute, even inside: sluice writes relative names
        "sub/model-1.h5",
        "..\\victim.h5",
        "model-1.h5\x00.txt",
        "m" * 300 + ".h5",
        "",
        ".",
        "..",
        "checkpoint.json",
        ".checkpoint.json.lock",
        ".model-1.h5.tmp-123-abcdef01",
        "victim.txt",
    ]


def test_every_hostile_entry_is_reported_by_latest_checkpoint(layout):
    for entry in _hostile_entries(layout):
        _write_state(layout, [entry])
        state_file = str(layout / "checkpoint.json")
        message = re.escape(state_file) + ".*" + re.escape(repr(entry))
        with pytest.raises(checkpoint_state.CheckpointStateError, match=message):
            train.latest_checkpoint(str(layout))
        with pytest.raises(ValueError, match=message):  # a ValueError, as an unreadable file is
            train.get_checkpoint_state(str(layout))
    # ... also when it hides behind a valid newest entry
    h5_format.write_checkpoint(str(layout / "model-2.h5"), {"w": np.zeros(3, np.float32)})
    _write_state(layout, ["../victim.h5", "model-2.h5"])
    with pytest.raises(checkpoint_state.CheckpointStateError, match=r"'\.\./victim\.h5'"):
        train.latest_checkpoint(str(layout))
    _victims_intact(layout)


def test_saver_never_deletes_what_a_hostile_state_file_lists(layout):
    entries = _hostile_entries(layout)
    _write_state(layout, entries, all_model_checkpoint_timestamps=[0.0] * len(entries))
    with pytest.warns(UserWarning, match=r"ignores .*'\.\./victim\.h5'"):
        saver = _save_steps(layout, [1, 2, 3], max_to_keep=1)
    _victims_intact(layout)
    assert sorted(os.listdir(layout)) == [
        ".checkpoint.json.lock",
        "checkpoint.json",
        "model-3.h5",
        "model-3.meta",
    ]
    assert saver.last_checkpoints == [str(layout / "model-3.h5")]
    assert train.latest_checkpoint(str(layout)) == str(layout / "model-3.h5")


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[1, 2]",
        '"a string"',
        '{"format": "sluice.checkpoint_state", "all_model_checkpoint_paths": 5}',
        '{"format": "sluice.checkpoint_state", "all_model_checkpoint_paths": [1],'
        ' "model_checkpoint_path": "model-1.h5"}',
        '{"format": "sluice.checkpoint_state", "all_model_checkpoint_paths": ["model-1.h5"],'
        ' "model_checkpoint_path": 7}',
        '{"format": "sluice.checkpoint_state", "all_model_checkpoint_paths": ["model-1.h5"],'
        ' "model_checkpoint_path": "model-1.h5", "all_model_checkpoint_timestamps": ["x"]}',
        '{"format": "sluice.checkpoint_state", "all_model_checkpoint_paths": ["model-1.h5"],'
        ' "model_checkpoint_path": "model-1.h5", "last_preserved_timestamp": 1e999}',
        '{"format": "sluice.checkpoint_state", "all_model_checkpoint_paths": ["model-1.h5"],'
        ' "model_checkpoint_path": "model-1.h5", "last_preserved_timestamp": 1' + "0" * 400 + "}",
        '{"format": "sluice.checkpoint_state", "all_model_checkpoint_paths": ["model-1.h5"],'
        ' "model_checkpoint_path": "model-1.h5", "preserved_checkpoint_paths": ["../victim.h5"]}',
        "[" * 100_000 + "]" * 100_000,
        b"\xff\xfe\x00garbage",
    ],
    ids=lambda t: repr(t[:40]),
)
def test_a_malformed_state_file_is_reported_and_rebuilt_by_the_saver(layout, text):
    h5_format.write_checkpoint(str(layout / "model-1.h5"), {"w": np.zeros(3, np.float32)})
    path = layout / "checkpoint.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(checkpoint_state.CheckpointStateError, match=re.escape(str(path))):
        train.latest_checkpoint(str(layout))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        _save_steps(layout, [2, 3], max_to_keep=2)
    _victims_intact(layout)
    assert train.get_checkpoint_state(str(layout)).all_model_checkpoint_paths == [
        str(layout / "model-2.h5"),
        str(layout / "model-3.h5"),
    ]


def test_an_oversized_state_file_is_refused_before_it_is_read(layout, monkeypatch):
    monkeypatch.setattr(checkpoint_state, "MAX_STATE_BYTES", 1000)
    _write_state(layout, ["model-1.h5"] * 200)
    with pytest.raises(checkpoint_state.CheckpointStateError, match="larger than"):
        train.latest_checkpoint(str(layout))


@pytest.mark.parametrize("kind", ["symlink", "fifo"])
def test_a_state_file_that_is_not_a_regular_file_is_refused_not_followed(layout, kind):
    """A symlink could point anywhere, and reading a FIFO would block forever."""
    state = layout / "checkpoint.json"
    if kind == "symlink":
        (layout.parent / "elsewhere.json").write_text('{"format": "sluice.checkpoint_state"}')
        os.symlink(layout.parent / "elsewhere.json", state)
    else:
        os.mkfifo(state)
    with pytest.raises(checkpoint_state.CheckpointStateError, match="regular file|symbolic link"):
        train.latest_checkpoint(str(layout))
    with pytest.warns(UserWarning, match="rebuilds"):
        _save_steps(layout, [1])
    assert state.is_file() and not state.is_symlink()
    assert train.latest_checkpoint(str(layout)) == str(layout / "model-1.h5")
    if kind == "symlink":
        assert (layout.parent / "elsewhere.json").read_text().endswith('"sluice.checkpoint_state"}')


def test_symlinks_out_of_the_directory_are_neither_followed_nor_deleted(layout):
    outside = layout.parent / "victim.h5"
    os.symlink(outside, layout / "model-1.h5")  # listed
    os.symlink(outside, layout / "model-0.h5")  # unlisted, of the saver's prefix
    _write_state(layout, ["model-1.h5"])
    with pytest.raises(checkpoint_state.CheckpointStateError, match="outside"):
        train.latest_checkpoint(str(layout))
    with pytest.warns(UserWarning, match="model-1.h5"):
        _save_steps(layout, [2, 3, 4], max_to_keep=1)
    _victims_intact(layout)
    assert os.path.islink(layout / "model-1.h5") and os.path.islink(layout / "model-0.h5")
    assert train.latest_checkpoint(str(layout)) == str(layout / "model-4.h5")


def test_listed_files_that_are_not_sluice_checkpoints_are_never_deleted(layout):
    (layout / "model-0.h5").write_text("a text file with a checkpoint's name")
    import h5py

    with h5py.File(layout / "notes.h5", "w") as f:  # an HDF5 file of someone else
        f["x"] = np.zeros(2)
    _write_state(layout, ["notes.h5", "model-0.h5"])
    _save_steps(layout, [1, 2, 3], max_to_keep=1)
    assert (layout / "model-0.h5").read_text().startswith("a text file")
    assert (layout / "notes.h5").exists()
    assert train.latest_checkpoint(str(layout)) == str(layout / "model-3.h5")
    assert not (layout / "model-1.h5").exists() and not (layout / "model-2.h5").exists()


def test_latest_filename_must_be_a_plain_name(layout):
    w = sl.Variable(np.zeros(3, np.float32), name="w")
    saver = train.Saver([w])
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        with pytest.raises(ValueError, match="latest_filename"):
            saver.save(sess, str(layout / "model"), global_step=1, latest_filename="../state.json")
    with pytest.raises(ValueError, match="latest_filename"):
        train.latest_checkpoint(str(layout), latest_filename="/etc/passwd")
    assert not (layout.parent / "state.json").exists()


def test_tf1_behaviour_is_kept(layout):
    assert train.latest_checkpoint(str(layout)) is None
    assert train.get_checkpoint_state(str(layout)) is None
    saver = _save_steps(layout, [5, 6], max_to_keep=2)
    state = train.get_checkpoint_state(str(layout))
    assert state.model_checkpoint_path == str(layout / "model-6.h5")
    assert state.all_model_checkpoint_paths == saver.last_checkpoints
