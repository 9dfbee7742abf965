"""`sl.datasets`: Keras's file formats, written small into a temporary KERAS_HOME, read back
with Keras's shapes, dtypes, shuffling and filtering; downloads replaced (no network here)."""

import gzip
import hashlib
import io
import os
import pickle
import tarfile
import urllib.error

import numpy as np
import pytest

import sluice as sl
from sluice._keras.datasets import files, safe_arrays


@pytest.fixture
def keras_home(tmp_path, monkeypatch):
    """An empty Keras home, and a network that is never reached."""
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))

    def offline(url):
        raise urllib.error.URLError("network unreachable (test)")

    monkeypatch.setattr(files, "_open_url", offline)
    (tmp_path / "datasets").mkdir()
    return tmp_path / "datasets"


def ragged(rows):
    out = np.empty(len(rows), dtype=object)
    out[:] = [list(r) for r in rows]
    return out


def keras_order(n, seed=113):
    """The order Keras's loaders shuffle n samples into."""
    indices = np.arange(n)
    np.random.RandomState(seed).shuffle(indices)
    return indices


# -- the cache and downloads --------------------------------------------------------------------
def test_missing_file_offline_names_the_url_and_the_cache_path(keras_home):
    with pytest.raises(sl.datasets.DownloadError) as error:
        sl.datasets.mnist.load_data()
    message = str(error.value)
    assert "https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz" in message
    assert str(keras_home / "mnist.npz") in message
    assert os.listdir(keras_home) == []  # no temporary file left behind


def test_download_is_hash_checked_and_atomic(keras_home, monkeypatch):
    content = b"some bytes of a data set"
    monkeypatch.setattr(files, "_open_url", lambda url: io.BytesIO(content))
    with pytest.raises(ValueError, match="hash"):
        files.get_file("a.bin", "https://example.invalid/a.bin", file_hash="0" * 64)
    assert os.listdir(keras_home) == []
    good = hashlib.sha256(content).hexdigest()
    path = files.get_file("a.bin", "https://example.invalid/a.bin", file_hash=good)
    assert path == str(keras_home / "a.bin") and open(path, "rb").read() == content
    assert os.listdir(keras_home) == ["a.bin"]
    with pytest.raises(ValueError, match="plain name"):
        files.get_file("../a.bin", "https://example.invalid/a.bin")


def test_tar_members_outside_the_folder_are_refused(tmp_path):
    archive = tmp_path / "evil.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name in ("data/ok.txt", "../escaped.txt"):
            info = tarfile.TarInfo(name)
            info.size = 2
            tar.addfile(info, io.BytesIO(b"hi"))
    with pytest.raises(ValueError, match="escaped.txt"):
        files.extract_tar(str(archive), str(tmp_path / "out"))
    assert not (tmp_path / "escaped.txt").exists() and not (tmp_path / "out" / "data").exists()


def test_a_tampered_cifar_archive_cannot_replace_other_files_of_the_cache(keras_home):
    (keras_home / "mine").mkdir()
    (keras_home / "mine" / "notes.txt").write_text("keep")
    (keras_home / "imdb.npz").write_text("keep")
    with tarfile.open(keras_home / "cifar-10-batches-py.tar.gz", "w:gz") as tar:
        for name in ("cifar-10-batches-py/data_batch_1", "mine/x", "imdb.npz"):
            info = tarfile.TarInfo(name)
            info.size = 4
            tar.addfile(info, io.BytesIO(b"evil"))
    with pytest.raises(ValueError, match="'mine/x' is not a plain file or folder inside"):
        sl.datasets.cifar10.load_data()
    assert os.listdir(keras_home / "mine") == ["notes.txt"]
    assert (keras_home / "imdb.npz").read_text() == "keep"
    assert not (keras_home / "cifar-10-batches-py").exists()


# -- numeric .npz files ---------------------------------------------------------------------------
def test_mnist(keras_home):
    rng = np.random.default_rng(0)
    arrays = {
        "x_train": rng.integers(0, 256, (5, 28, 28), dtype=np.uint8),
        "y_train": np.array([0, 1, 2, 3, 4], np.uint8),
        "x_test": rng.integers(0, 256, (2, 28, 28), dtype=np.uint8),
        "y_test": np.array([9, 8], np.uint8),
    }
    np.savez(keras_home / "mnist.npz", **arrays)
    (x_train, y_train), (x_test, y_test) = sl.datasets.mnist.load_data()
    assert x_train.dtype == np.uint8 and x_train.shape == (5, 28, 28) and y_test.shape == (2,)
    for got, key in (
        (x_train, "x_train"),
        (y_train, "y_train"),
        (x_test, "x_test"),
        (y_test, "y_test"),
    ):
        np.testing.assert_array_equal(got, arrays[key])
    np.savez(keras_home / "mnist.npz", x_train=arrays["x_train"])
    with pytest.raises(ValueError, match="lacks the arrays"):
        sl.datasets.mnist.load_data()


def test_boston_housing_shuffles_with_the_seed_and_splits(keras_home):
    x = np.arange(10 * 13, dtype=np.float64).reshape(10, 13)
    y = np.arange(10, dtype=np.float64) * 1.5
    np.savez(keras_home / "boston_housing.npz", x=x, y=y)
    (x_train, y_train), (x_test, y_test) = sl.datasets.boston_housing.load_data()
    order = keras_order(10)
    assert x_train.shape == (8, 13) and x_test.shape == (2, 13)
    np.testing.assert_array_equal(y_train, y[order[:8]])
    np.testing.assert_array_equal(x_test, x[order[8:]])
    with pytest.raises(ValueError, match="test_split"):
        sl.datasets.boston_housing.load_data(test_split=1.0)


def test_fashion_mnist_reads_the_gzipped_idx_files(keras_home):
    folder = keras_home / "fashion-mnist"
    folder.mkdir()
    images = np.arange(3 * 28 * 28, dtype=np.uint32).astype(np.uint8).reshape(3, 28, 28)
    labels = np.array([7, 0, 9], np.uint8)
    for split in ("train", "t10k"):
        with gzip.open(folder / f"{split}-labels-idx1-ubyte.gz", "wb") as f:
            f.write(np.array([2049, 3], ">u4").tobytes() + labels.tobytes())
        with gzip.open(folder / f"{split}-images-idx3-ubyte.gz", "wb") as f:
            f.write(np.array([2051, 3, 28, 28], ">u4").tobytes() + images.tobytes())
    (x_train, y_train), (x_test, y_test) = sl.datasets.fashion_mnist.load_data()
    np.testing.assert_array_equal(x_train, images)
    np.testing.assert_array_equal(y_test, labels)
    assert x_test.dtype == np.uint8 and x_test.shape == (3, 28, 28)
    with gzip.open(folder / "t10k-labels-idx1-ubyte.gz", "wb") as f:
        f.write(np.array([2049, 4], ">u4").tobytes() + labels.tobytes())  # one label short
    with pytest.raises(ValueError, match="IDX"):
        sl.datasets.fashion_mnist.load_data()
    whole = (folder / "t10k-images-idx3-ubyte.gz").read_bytes()
    (folder / "t10k-labels-idx1-ubyte.gz").write_bytes(whole[: len(whole) // 2])  # cut short
    with pytest.raises(ValueError, match="t10k-labels-idx1-ubyte.gz is not a readable gzip"):
        sl.datasets.fashion_mnist.load_data()


# -- word sequences in object arrays --------------------------------------------------------------
IMDB_TRAIN = [[1, 2, 3], [4, 5], [6], [2, 2, 7, 1]]
IMDB_TEST = [[3, 3], [8, 1, 2, 9, 4]]


@pytest.mark.parametrize("row, found", [([1, 2.5], r"2.5 \(float\)"),
                                        ([float("nan")], r"nan \(float\)"),
                                        ([[1, 2]], r"\[1, 2\] \(list\)")])  # fmt: skip
def test_imdb_rows_that_are_not_word_ids_are_refused(keras_home, row, found):
    rows = ragged([[1, 2], row])
    labels = np.array([0, 1])
    np.savez(keras_home / "imdb.npz", x_train=rows, y_train=labels, x_test=rows, y_test=labels)
    with pytest.raises(ValueError, match=rf"imdb.npz:x_train: row 1 holds {found}, not an integ"):
        sl.datasets.imdb.load_data()


def test_a_word_index_that_is_not_json_names_the_file(keras_home):
    (keras_home / "imdb_word_index.json").write_bytes(b"\xff[")
    with pytest.raises(ValueError, match="imdb_word_index.json is not a JSON word index"):
        sl.datasets.imdb.get_word_index()


@pytest.fixture
def imdb_file(keras_home):
    np.savez(
        keras_home / "imdb.npz",
        x_train=ragged(IMDB_TRAIN),
        y_train=np.array([1, 0, 1, 0]),
        x_test=ragged(IMDB_TEST),
        y_test=np.array([0, 1]),
    )
    return keras_home / "imdb.npz"


def test_imdb_defaults_shuffle_offset_and_mark_the_start(imdb_file):
    (x_train, y_train), (x_test, y_test) = sl.datasets.imdb.load_data()
    order = np.arange(4)
    rng = np.random.RandomState(113)
    rng.shuffle(order)
    test_order = np.arange(2)
    rng.shuffle(test_order)  # the same generator goes on to the test split, as in Keras
    assert x_train.dtype == object and x_train.shape == (4,)
    # ids + 3 after a 1; the largest id (9 + 3 = 12) is out of Keras's default vocabulary -> 2
    expected = {0: [1, 4, 5, 6], 1: [1, 7, 8], 2: [1, 9], 3: [1, 5, 5, 10, 4]}
    assert [list(x) for x in x_train] == [expected[i] for i in order]
    np.testing.assert_array_equal(y_train, np.array([1, 0, 1, 0])[order])
    expected_test = {0: [1, 6, 6], 1: [1, 11, 4, 5, 2, 7]}
    assert [list(x) for x in x_test] == [expected_test[i] for i in test_order]
    assert y_test.tolist() == np.array([0, 1])[test_order].tolist()


def test_imdb_num_words_skip_top_and_maxlen(imdb_file):
    (x_train, y_train), (x_test, _) = sl.datasets.imdb.load_data(
        num_words=8, skip_top=5, maxlen=4, start_char=1, oov_char=2, index_from=3
    )
    # maxlen=4 keeps sequences of fewer than 4 ids, start mark included: train rows 1 and 2,
    # test row 0; then ids outside [5, 8) become 2 (the start mark 1 too, as in Keras).
    by_label = {tuple(x): y for x, y in zip(map(tuple, x_train), y_train)}
    assert by_label == {(2, 7, 2): 0, (2, 2): 1}
    assert [list(x) for x in x_test] == [[2, 6, 6]]
    (x_train, _), _ = sl.datasets.imdb.load_data(
        num_words=6, oov_char=None, start_char=None, index_from=0
    )
    assert sorted(map(list, x_train)) == sorted([[1, 2, 3], [4, 5], [], [2, 2, 1]])
    with pytest.raises(ValueError, match="maxlen"):
        sl.datasets.imdb.load_data(maxlen=2)


def test_imdb_word_index(keras_home):
    (keras_home / "imdb_word_index.json").write_text('{"the": 1, "and": 2}')
    assert sl.datasets.imdb.get_word_index() == {"the": 1, "and": 2}
    (keras_home / "imdb_word_index.json").write_text('["the"]')
    with pytest.raises(ValueError, match="word -> int"):
        sl.datasets.imdb.get_word_index()


def test_reuters_splits_after_filtering(keras_home):
    rows = [[1, 2], [3], [4, 4, 4], [5, 1], [2]]
    np.savez(keras_home / "reuters.npz", x=ragged(rows), y=np.array([0, 1, 2, 3, 4]))
    (x_train, y_train), (x_test, y_test) = sl.datasets.reuters.load_data(
        test_split=0.25, maxlen=4, num_words=7
    )
    order = keras_order(5)
    kept = [i for i in order if len(rows[i]) + 1 < 4]  # 4 rows; 3 train, 1 test
    expected = {0: [1, 4, 5], 1: [1, 6], 3: [1, 2, 4], 4: [1, 5]}  # ids >= 7 -> 2
    assert [list(x) for x in x_train] == [expected[i] for i in kept[:3]]
    assert y_train.tolist() == kept[:3] and y_test.tolist() == kept[3:]
    assert [list(x) for x in x_test] == [expected[kept[3]]]
    assert len(sl.datasets.reuters.get_label_names()) == 46


class _Exploit:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def test_object_arrays_that_name_other_globals_are_refused(keras_home):
    bad = np.empty(2, dtype=object)
    bad[:] = [[1], _Exploit()]
    np.savez(
        keras_home / "imdb.npz",
        x_train=bad,
        y_train=np.array([0, 1]),
        x_test=bad,
        y_test=np.array([0, 1]),
    )
    with pytest.raises(ValueError, match="Refusing to load `posix.system`|Refusing"):
        sl.datasets.imdb.load_data()
    np.savez(
        keras_home / "mnist.npz",
        x_train=ragged([[1]]),
        y_train=np.zeros(1),
        x_test=ragged([[1]]),
        y_test=np.zeros(1),
    )
    with pytest.raises(ValueError, match="object array"):  # numbers expected: no pickle at all
        sl.datasets.mnist.load_data()


# -- CIFAR pickles --------------------------------------------------------------------------------
def cifar_batch(path, n, seed, label_keys=("labels",)):
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 256, (n, 3072), dtype=np.uint8)
    batch = {b"batch_label": b"test", b"data": data, b"filenames": [b"a.png"] * n}
    labels = {}
    for key in label_keys:
        labels[key] = rng.integers(0, 10, n).tolist()
        batch[key.encode()] = labels[key]
    with open(path, "wb") as f:
        pickle.dump(batch, f, protocol=2)
    return data, labels


def test_cifar10_from_keras_archive(keras_home):
    staging = keras_home.parent / "staging" / "cifar-10-batches-py"
    staging.mkdir(parents=True)
    written = [cifar_batch(staging / f"data_batch_{i}", 2, i) for i in range(1, 6)]
    test_data, test_labels = cifar_batch(staging / "test_batch", 3, 9)
    with tarfile.open(keras_home / "cifar-10-batches-py.tar.gz", "w:gz") as tar:
        tar.add(staging, arcname="cifar-10-batches-py")
    (x_train, y_train), (x_test, y_test) = sl.datasets.cifar10.load_data()
    assert x_train.shape == (10, 32, 32, 3) and x_train.dtype == np.uint8
    assert y_train.shape == (10, 1) and y_train.dtype == np.uint8 and y_test.shape == (3, 1)
    # channels_last: pixel (row 4, col 7) of channel 2 of the first image
    assert x_train[0, 4, 7, 2] == written[0][0][0, 2 * 1024 + 4 * 32 + 7]
    np.testing.assert_array_equal(y_train[:, 0], sum((w[1]["labels"] for w in written), []))
    np.testing.assert_array_equal(x_test.transpose(0, 3, 1, 2).reshape(3, -1), test_data)
    assert (keras_home / "cifar-10-batches-py" / "test_batch").is_file()  # extracted once


def test_cifar100_label_modes_and_refused_pickles(keras_home):
    folder = keras_home / "cifar-100-python"
    folder.mkdir()
    keys = ("fine_labels", "coarse_labels")
    _, train_labels = cifar_batch(folder / "train", 4, 1, keys)
    cifar_batch(folder / "test", 2, 2, keys)
    (_, fine), _ = sl.datasets.cifar100.load_data()
    (x_train, coarse), (x_test, _) = sl.datasets.cifar100.load_data(label_mode="coarse")
    assert fine[:, 0].tolist() == train_labels["fine_labels"]
    assert coarse[:, 0].tolist() == train_labels["coarse_labels"]
    assert x_train.shape == (4, 32, 32, 3) and x_test.shape == (2, 32, 32, 3)
    with pytest.raises(ValueError, match="label_mode"):
        sl.datasets.cifar100.load_data(label_mode="medium")
    with open(folder / "train", "wb") as f:
        pickle.dump({b"data": _Exploit()}, f, protocol=2)
    with pytest.raises(ValueError, match="Refusing to load"):
        sl.datasets.cifar100.load_data()


def test_safe_unpickler_builds_plain_values_and_arrays():
    value = {"a": [1, 2.5, b"x"], "b": np.arange(3)}
    loaded = safe_arrays.safe_pickle_load(io.BytesIO(pickle.dumps(value)))
    assert loaded["a"] == [1, 2.5, b"x"] and loaded["b"].tolist() == [0, 1, 2]
