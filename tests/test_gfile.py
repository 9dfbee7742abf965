"""`sl.gfile` (TF1 names) and `sl.io.gfile` (lower-case names) on a temporary folder: the
file operations, TF's mode strings and TF's errors for missing and existing paths."""

import os

import pytest

import sluice as sl


def test_tf1_and_io_names_are_the_same_functions():
    pairs = [
        ("Exists", "exists"),
        ("MakeDirs", "makedirs"),
        ("Glob", "glob"),
        ("Remove", "remove"),
        ("IsDirectory", "isdir"),
        ("ListDirectory", "listdir"),
        ("Rename", "rename"),
        ("Copy", "copy"),
        ("MkDir", "mkdir"),
        ("DeleteRecursively", "rmtree"),
        ("Open", "GFile"),
    ]
    for tf1_name, io_name in pairs:
        assert getattr(sl.gfile, tf1_name) is getattr(sl.io.gfile, io_name)


def test_write_read_list_copy_rename_remove(tmp_path):
    folder = str(tmp_path / "a" / "b")
    sl.gfile.MakeDirs(folder)
    sl.io.gfile.makedirs(folder)  # an existing directory is fine
    assert sl.gfile.IsDirectory(folder) and sl.gfile.Exists(folder)
    path = os.path.join(folder, "x.txt")
    with sl.gfile.GFile(path, "w") as f:
        f.write("one\ntwo\n")
    with sl.gfile.GFile(path, "a") as f:
        f.write("three\n")
    with sl.io.gfile.GFile(path) as f:
        assert f.readline() == "one\n"
        assert f.read() == "two\nthree\n"
        assert f.size() == 14
    with sl.gfile.Open(path, "rb") as f:
        assert f.read(3) == b"one" and f.tell() == 3
    sl.gfile.Copy(path, os.path.join(folder, "y.txt"))
    sl.io.gfile.rename(os.path.join(folder, "y.txt"), os.path.join(folder, "z.bin"))
    assert sl.gfile.ListDirectory(folder) == ["x.txt", "z.bin"]
    assert sl.io.gfile.glob(str(tmp_path / "a" / "*" / "*.txt")) == [path]
    sl.gfile.Remove(path)
    assert not sl.io.gfile.exists(path) and not sl.gfile.IsDirectory(path)
    sl.gfile.DeleteRecursively(str(tmp_path / "a"))
    assert sl.io.gfile.listdir(str(tmp_path)) == []


def test_tf_errors_for_missing_and_existing_paths(tmp_path):
    missing = str(tmp_path / "missing")
    for call in (
        lambda: sl.gfile.GFile(missing),
        lambda: sl.gfile.Remove(missing),
        lambda: sl.gfile.ListDirectory(missing),
        lambda: sl.gfile.Copy(missing, "b"),
        lambda: sl.io.gfile.rename(missing, "b"),
        lambda: sl.io.gfile.rmtree(missing),
    ):
        with pytest.raises(sl.errors.NotFoundError, match="missing"):
            call()
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    for path, text in ((a, "A"), (b, "B")):
        with sl.gfile.GFile(path, "w") as f:
            f.write(text)
    with pytest.raises(sl.errors.AlreadyExistsError, match="overwrite=True"):
        sl.gfile.Copy(a, b)
    with pytest.raises(sl.errors.AlreadyExistsError):
        sl.gfile.Rename(a, b)
    sl.gfile.Copy(a, b, overwrite=True)
    assert sl.gfile.GFile(b).read() == "A"
    with pytest.raises(sl.errors.AlreadyExistsError):
        sl.gfile.MkDir(str(tmp_path))
    with pytest.raises(sl.errors.InvalidArgumentError, match="mode 'x'"):
        sl.gfile.GFile(a, "x")
    with pytest.raises(sl.errors.UnimplementedError, match="scheme 'gs'"):
        sl.io.gfile.exists("gs://bucket/file")
    assert sl.gfile.Exists("file://" + a)
