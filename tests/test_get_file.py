"""`sl.utils.get_file` on local files (`file://` URLs and paths; the machine is offline): the
Keras cache, hash checks, re-download, and extraction that never writes outside its folder."""

import hashlib
import io
import os
import tarfile
import zipfile

import pytest

import sluice as sl


def _file(path, data: bytes):
    path.write_bytes(data)
    return path


def _tar(path, members, mode="w:gz"):
    """A tar at `path`: members are (name, bytes) files or TarInfo objects (links, ...)."""
    with tarfile.open(path, mode) as tar:
        for member in members:
            if isinstance(member, tarfile.TarInfo):
                tar.addfile(member)
            else:
                name, data = member
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return path


def _link(name, target, hard=False):
    info = tarfile.TarInfo(name)
    info.type = tarfile.LNKTYPE if hard else tarfile.SYMTYPE
    info.linkname = target
    return info


def _files_under(folder):
    return sorted(
        os.path.relpath(os.path.join(root, f), folder)
        for root, dirs, files in os.walk(folder)
        for f in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]
    )


def test_downloads_into_the_cache_once(tmp_path, capsys):
    source = _file(tmp_path / "data.txt", b"hello")
    cache = tmp_path / "cache"
    path = sl.utils.get_file(origin=source.as_uri(), cache_dir=str(cache))
    assert path == str(cache / "datasets" / "data.txt")
    assert open(path, "rb").read() == b"hello"
    assert "Downloading data from file://" in capsys.readouterr().out
    source.write_bytes(b"changed")
    again = sl.utils.get_file("data.txt", source.as_uri(), cache_dir=str(cache))
    assert again == path and open(path, "rb").read() == b"hello"  # cached: not fetched again
    assert capsys.readouterr().out == ""
    sl.utils.get_file("data.txt", source.as_uri(), cache_dir=str(cache), force_download=True)
    assert open(path, "rb").read() == b"changed"
    other = sl.utils.get_file(
        "renamed.bin", str(source), cache_subdir="mine", cache_dir=str(cache)
    )  # a local path works as an origin too
    assert other == str(cache / "mine" / "renamed.bin") and open(other, "rb").read() == b"changed"


def test_the_default_cache_is_keras_home(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "home"))
    source = _file(tmp_path / "a.csv", b"1,2")
    path = sl.utils.get_file(origin=source.as_uri())
    assert path == str(tmp_path / "home" / "datasets" / "a.csv")
    absolute = tmp_path / "elsewhere"
    path = sl.utils.get_file(origin=source.as_uri(), cache_subdir=str(absolute))
    assert path == str(absolute / "a.csv")


@pytest.mark.parametrize("algorithm", ["sha256", "md5", "auto"])
def test_hash_checks(tmp_path, algorithm):
    data = b"some bytes"
    source = _file(tmp_path / "f.bin", data)
    digest = (hashlib.md5 if algorithm == "md5" else hashlib.sha256)(data).hexdigest()
    kwargs = dict(origin=source.as_uri(), cache_dir=str(tmp_path / "c"), file_hash=digest)
    if algorithm != "auto":
        kwargs["hash_algorithm"] = algorithm
    path = sl.utils.get_file(**kwargs)
    assert open(path, "rb").read() == data


def test_a_cached_file_with_the_wrong_hash_is_fetched_again(tmp_path, capsys):
    source = _file(tmp_path / "f.bin", b"the real data")
    cache = tmp_path / "c"
    (cache / "datasets").mkdir(parents=True)
    stale = _file(cache / "datasets" / "f.bin", b"stale or truncated")
    digest = hashlib.sha256(b"the real data").hexdigest()
    path = sl.utils.get_file(origin=source.as_uri(), cache_dir=str(cache), file_hash=digest)
    assert path == str(stale) and stale.read_bytes() == b"the real data"
    assert "hash does not match" in capsys.readouterr().out
    md5 = hashlib.md5(b"the real data").hexdigest()  # md5_hash: Keras's older argument
    assert sl.utils.get_file(origin=source.as_uri(), cache_dir=str(cache), md5_hash=md5) == path


def test_a_download_with_the_wrong_hash_fails_and_leaves_nothing(tmp_path):
    source = _file(tmp_path / "f.bin", b"tampered")
    cache = tmp_path / "c"
    with pytest.raises(ValueError, match="corrupted.*does not match"):
        sl.utils.get_file(origin=source.as_uri(), cache_dir=str(cache), file_hash="0" * 64)
    assert os.listdir(cache / "datasets") == []  # no file, no temporary left behind


def test_errors(tmp_path):
    with pytest.raises(ValueError, match="origin"):
        sl.utils.get_file("x")
    with pytest.raises(ValueError, match="cache_dir"):
        sl.utils.get_file("sub/x.txt", origin="file:///nowhere", cache_dir=str(tmp_path))
    with pytest.raises(ValueError, match="fname"):
        sl.utils.get_file(origin="file:///", cache_dir=str(tmp_path))
    with pytest.raises(OSError, match="URL fetch failure on file:///no/such/file"):
        sl.utils.get_file(origin="file:///no/such/file", cache_dir=str(tmp_path))
    assert os.listdir(tmp_path / "datasets") == []
    with pytest.raises(ValueError, match="hash_algorithm"):
        sl.utils.get_file(origin="file:///x", cache_dir=str(tmp_path), hash_algorithm="sha1")


@pytest.mark.parametrize("kind", ["tar.gz", "tar", "zip"])
def test_extracts_archives(tmp_path, kind):
    members = [("flowers/a.txt", b"A"), ("flowers/sub/b.txt", b"B")]
    if kind == "zip":
        archive = tmp_path / "flowers.zip"
        with zipfile.ZipFile(archive, "w") as z:
            for name, data in members:
                z.writestr(name, data)
    else:
        archive = _tar(tmp_path / f"flowers.{kind}", members, "w:gz" if kind == "tar.gz" else "w")
    cache = tmp_path / "c"
    folder = sl.utils.get_file(origin=archive.as_uri(), extract=True, cache_dir=str(cache))
    # Keras's names: with no fname, the archive is kept as <name>_archive and extracted to <name>
    assert folder == str(cache / "datasets" / archive.name)
    assert os.path.exists(str(cache / "datasets" / archive.name) + "_archive")
    assert _files_under(folder) == ["flowers/a.txt", "flowers/sub/b.txt"]
    named = sl.utils.get_file("pics", archive.as_uri(), extract=True, cache_dir=str(cache))
    assert named == str(cache / "datasets" / "pics") and _files_under(named)[0] == "flowers/a.txt"
    dotted = sl.utils.get_file("pics.tgz", archive.as_uri(), extract=True, cache_dir=str(cache))
    assert dotted == str(cache / "datasets" / "pics_extracted")


def test_untar_and_a_file_that_is_no_archive(tmp_path):
    archive = _tar(tmp_path / "t.tar.gz", [("x.txt", b"x")])
    folder = sl.utils.get_file("t", archive.as_uri(), untar=True, cache_dir=str(tmp_path / "c"))
    assert _files_under(folder) == ["x.txt"]
    plain = _file(tmp_path / "plain.txt", b"not an archive")
    with pytest.warns(UserWarning, match="Could not extract"):
        sl.utils.get_file(origin=plain.as_uri(), extract=True, cache_dir=str(tmp_path / "c"))


def _extract_evil(tmp_path, archive):
    """Extracts `archive` with get_file; returns (extraction folder, skipped names)."""
    with pytest.warns(UserWarning) as caught:
        folder = sl.utils.get_file(
            "evil", archive.as_uri(), extract=True, cache_dir=str(tmp_path / "cache")
        )
    skipped = [str(w.message) for w in caught if "Skipping invalid path" in str(w.message)]
    return folder, skipped


def test_tar_members_outside_the_folder_are_skipped(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    archive = _tar(
        tmp_path / "evil.tar.gz",
        [
            ("good.txt", b"ok"),
            ("../escaped.txt", b"x"),  # climbs out of the folder
            ("sub/../../escaped2.txt", b"x"),
            (str(outside / "absolute.txt"), b"x"),  # an absolute path
            _link("up", str(outside)),  # a symlink to an absolute path outside
            ("up/through_link.txt", b"x"),  # a file written through that link
            _link("rel_up", "../outside"),  # a relative symlink leading out
            ("rel_up/through_rel_link.txt", b"x"),
            _link("hard", "../../outside/target.txt", hard=True),  # a hard link out
            _link("inner", "good.txt"),  # a link inside: kept
        ],
    )
    folder, skipped = _extract_evil(tmp_path, archive)
    assert os.listdir(outside) == []  # nothing written outside
    assert not (tmp_path / "cache" / "escaped.txt").exists()
    assert not (tmp_path / "cache" / "datasets" / "escaped.txt").exists()
    assert not (tmp_path / "escaped2.txt").exists()
    # the links were skipped, so the files "through" them are plain files inside the folder
    assert _files_under(folder) == [
        "good.txt", "inner", "rel_up/through_rel_link.txt", "up/through_link.txt",
    ]  # fmt: skip
    assert not os.path.islink(os.path.join(folder, "up"))
    assert open(os.path.join(folder, "inner"), "rb").read() == b"ok"
    names = " ".join(skipped)
    for name in ("'../escaped.txt'", "escaped2.txt'", "absolute.txt'", "'up'", "'rel_up'",
                 "'hard'"):  # fmt: skip
        assert name in names, (name, skipped)
    assert len(skipped) == 6


def test_zip_members_outside_the_folder_are_skipped(tmp_path):
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("good.txt", b"ok")
        z.writestr("../escaped.txt", b"x")
        z.writestr("/abs_escaped.txt", b"x")
        z.writestr("a/../../escaped2.txt", b"x")
    folder, skipped = _extract_evil(tmp_path, archive)
    assert _files_under(folder) == ["good.txt"]
    assert not (tmp_path / "cache" / "datasets" / "escaped.txt").exists()
    assert not (tmp_path / "cache" / "datasets" / "escaped2.txt").exists()
    assert len(skipped) == 3


def test_a_corrupt_archive_is_an_error_and_leaves_no_folder(tmp_path):
    good = _tar(tmp_path / "t.tar.gz", [("a.txt", os.urandom(40000)), ("b.txt", os.urandom(40000))])
    data = good.read_bytes()
    broken = _file(tmp_path / "broken.tar.gz", data[: len(data) // 2])
    out = tmp_path / "cache" / "datasets" / "broken"
    with pytest.raises((tarfile.TarError, EOFError)):
        sl.utils.get_file(
            "broken", broken.as_uri(), extract=True, cache_dir=str(tmp_path / "cache")
        )
    assert not out.exists()


def test_chains_of_links_never_lead_outside(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    archive = _tar(
        tmp_path / "evil.tar",
        [
            _link("d", "target"),  # inside (to a name that a later member tries to make a link)
            _link("target", "../../../outside"),  # out: skipped
            ("d/x.txt", b"x"),  # through "d": lands inside, never in `outside`
            ("inside_dir/keep.txt", b"k"),
            _link("e", "inside_dir"),
            ("e/y.txt", b"y"),  # through a link that stays inside: allowed
        ],
        "w",
    )
    with pytest.warns(UserWarning, match="Skipping invalid path"):
        folder = sl.utils.get_file(
            "chain", archive.as_uri(), extract=True, cache_dir=str(tmp_path / "cache")
        )
    assert os.listdir(outside) == []
    assert not os.path.islink(os.path.join(folder, "target"))
    assert open(os.path.join(folder, "inside_dir", "y.txt"), "rb").read() == b"y"
    for root, _, files in os.walk(tmp_path):
        for f in files:
            real = os.path.realpath(os.path.join(root, f))
            assert not real.startswith(str(outside)), real
