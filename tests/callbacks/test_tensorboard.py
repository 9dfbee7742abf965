"""`TensorBoard`: the event files, read back record by record (TFRecord framing + the Event
proto tensorboardX ships), hold Keras 3's tags, steps and values in train/ and validation/."""

import glob
import json
import os
import struct
import sys
import zlib

import numpy as np
import pytest

import sluice as sl

event_pb2 = pytest.importorskip("tensorboardX.proto.event_pb2")


def read_events(folder):
    """Every Event of the event files in `folder`, in order."""
    events = []
    for path in sorted(glob.glob(os.path.join(folder, "events.out.tfevents.*"))):
        data = open(path, "rb").read()
        at = 0
        while at < len(data):
            (length,) = struct.unpack("<Q", data[at : at + 8])
            record = data[at + 12 : at + 12 + length]  # after the length and its crc
            at += 12 + length + 4  # then the record's crc
            event = event_pb2.Event()
            event.ParseFromString(record)
            events.append(event)
    return events


def decode_grey_png(data):
    """The pixels of an 8-bit grey PNG without filters (what the callback writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    at, chunks = 8, {}
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        chunks[data[at + 4 : at + 8]] = data[at + 8 : at + 8 + length]
        at += 12 + length
    width, height, depth, colour = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    assert (depth, colour) == (8, 0)
    rows = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), np.uint8).reshape(height, width + 1)
    assert not rows[:, 0].any()  # filter type 0 on every row
    return rows[:, 1:]


def summaries(folder):
    """{tag: [(step, value or the summary)]}."""
    out = {}
    for event in read_events(folder):
        for value in event.summary.value:
            got = value.simple_value if value.WhichOneof("value") == "simple_value" else value
            out.setdefault(value.tag, []).append((event.step, got))
    return out


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One small fit with every kind of summary; returns (log_dir, history, model)."""
    log_dir = tmp_path_factory.mktemp("tb") / "logs"
    x = np.random.default_rng(0).normal(size=(24, 3)).astype("float32")
    y = (x[:, :1] > 0).astype("int32")
    model = sl.Sequential([sl.Input((3,)), sl.layers.Dense(2, activation="softmax")])
    model.compile(sl.optimizers.SGD(0.1), "sparse_categorical_crossentropy", metrics=["accuracy"])
    board = sl.callbacks.TensorBoard(
        str(log_dir), histogram_freq=2, update_freq=2, write_images=True
    )
    history = model.fit(
        x, y, batch_size=8, epochs=3, validation_split=0.25, verbose=0, callbacks=[board]
    )
    return log_dir, history, model


def test_epoch_scalars_go_to_train_and_validation(run):
    log_dir, history, _ = run
    assert sorted(os.listdir(log_dir)) == ["train", "validation"]
    train, validation = summaries(log_dir / "train"), summaries(log_dir / "validation")
    for name in ("loss", "accuracy"):
        assert [s for s, _ in train[f"epoch_{name}"]] == [0, 1, 2]
        np.testing.assert_allclose(
            [v for _, v in train[f"epoch_{name}"]], history.history[name], rtol=1e-6
        )
        np.testing.assert_allclose(
            [v for _, v in validation[f"epoch_{name}"]], history.history[f"val_{name}"], rtol=1e-6
        )
    np.testing.assert_allclose([v for _, v in train["epoch_learning_rate"]], [0.1] * 3)
    # the training steps so far: 2 batches of 8 per epoch (18 samples, 6 held out)
    assert [s for s, _ in validation["evaluation_loss_vs_iterations"]] == [3, 6, 9]


def test_batch_scalars_every_update_freq_batches(run):
    train = summaries(run[0] / "train")
    assert [s for s, _ in train["batch_loss"]] == [2, 4, 6, 8]  # 9 batches in all, every 2nd


def test_histograms_images_and_model_config(run):
    log_dir, _, model = run
    train = summaries(log_dir / "train")
    kernel = model.layers[-1].weights[0].name.replace(":", "_")
    assert [s for s, _ in train[f"{kernel}/histogram"]] == [0, 2]  # histogram_freq=2
    histogram = train[f"{kernel}/histogram"][-1][1].histo
    assert histogram.num == 6
    np.testing.assert_allclose(histogram.sum, model.layers[-1].get_weights()[0].sum(), rtol=1e-5)
    image = train[f"{kernel}/image"][-1][1].image
    assert (image.height, image.width) == (2, 3)  # the 3x2 kernel, its longer side as width
    pixels = decode_grey_png(image.encoded_image_string)
    kernel_value = model.layers[-1].get_weights()[0].T  # the image of the last epoch's weights
    expected = (kernel_value - kernel_value.min()) / np.ptp(kernel_value) * 255
    np.testing.assert_allclose(pixels, expected, atol=0.51)
    ((step, config),) = train["keras"]
    assert config.metadata.plugin_data.plugin_name == "graph_keras_model"
    layers = json.loads(config.tensor.string_val[0])["config"]["layers"]
    assert [layer["class_name"] for layer in layers] == ["InputLayer", "Dense"]


def test_bad_arguments_and_missing_writer(monkeypatch, tmp_path):
    with pytest.raises(ValueError, match="update_freq"):
        sl.callbacks.TensorBoard(str(tmp_path), update_freq=0)
    with pytest.raises(NotImplementedError, match="profil"):
        sl.callbacks.TensorBoard(str(tmp_path), profile_batch=2)
    monkeypatch.setitem(sys.modules, "tensorboardX", None)  # as if not installed
    with pytest.raises(ImportError, match=r"pip install sluice\[tensorboard\]"):
        sl.callbacks.TensorBoard(str(tmp_path))
    assert os.listdir(tmp_path) == []


def test_weights_that_diverged_to_nan_or_inf_do_not_stop_fit(tmp_path):
    model = sl.Sequential([sl.Input((3,)), sl.layers.Dense(2)])
    kernel, bias = model.get_weights()
    kernel[0, 0], kernel[1, 1] = np.nan, np.inf
    model.set_weights([kernel, np.full_like(bias, np.nan)])
    board = sl.callbacks.TensorBoard(str(tmp_path), histogram_freq=1, write_images=True)
    board.set_model(model)  # the callback's own steps, without the cost of a fit
    board.on_train_begin()
    board.on_epoch_end(0, {"loss": float("nan")})
    board.on_train_end()
    train = summaries(tmp_path / "train")
    tag, bias_tag = [w.name.replace(":", "_") for w in model.layers[-1].weights]
    histogram = train[f"{tag}/histogram"][0][1].histo
    assert histogram.num == 4  # the finite values of the kernel; the all-NaN bias has none
    assert f"{tag}/image" in train and f"{bias_tag}/histogram" not in train
    pixels = decode_grey_png(train[f"{tag}/image"][0][1].image.encoded_image_string)
    finite = np.isfinite(kernel.T)
    assert (pixels[~finite] == 0).all() and pixels[finite].max() == 255
