"""`Progbar` on a terminal draws Keras 3's line (count, coloured bar, ETA, time per step, running
averages); `ProgbarLogger` orders the logs as Keras 3 does there; off a terminal: one line."""

import io
import re
import sys

import numpy as np
import pytest

import sluice as sl
from sluice._keras.callbacks import progbar as progbar_lib
from sluice._keras.callbacks.progbar import Progbar, format_eta
from sluice._keras.callbacks.progbar_logger import keras_order

ANSI = re.compile(r"\x1b\[\d+m")
# a value as Keras prints it: 0.6528, or 0.0000e+00 / 1.2345e-04 below 1e-3
KERAS_NUMBER = r"[\d.]+(?:e[+-]\d+)?"


class FakeClock:
    def __init__(self, now=100.0):
        self.now = now

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(progbar_lib.time, "time", fake)
    return fake


def frames(out):
    """The successive redraws of one terminal line, escapes, backspaces and padding removed."""
    out = out.replace("\n", "").replace("\b", "")
    return [ANSI.sub("", f).rstrip() for f in out.split("\r") if f]


def test_terminal_line_is_keras_3s(clock):
    stream = io.StringIO()
    bar = Progbar(4, stream=stream, dynamic=True, interval=0.0)
    clock.now += 10.0  # the first step compiles: left out of the time per step
    bar.update(1, {"loss": 1.0})
    for step, loss in ((2, 0.5), (3, 0.3)):
        clock.now += 1.5
        bar.update(step, {"loss": loss})
    clock.now += 1.5
    bar.update(4, {"loss": 0.25})
    out = stream.getvalue()
    assert out.count("\r") == 4 and out.endswith("\n")
    assert frames(out) == [
        "1/4 █████━━━━━━━━━━━━━━━ 30s 10s/step - loss: 1.0000".replace("█", "━"),
        "2/4 ━━━━━━━━━━━━━━━━━━━━ 3s 2s/step - loss: 0.7500",  # ETA 2 x 1.5s; mean of 1, .5
        "3/4 ━━━━━━━━━━━━━━━━━━━━ 1s 2s/step - loss: 0.6000",
        "4/4 ━━━━━━━━━━━━━━━━━━━━ 14s 2s/step - loss: 0.2500",  # elapsed; the epoch's value
    ]
    # the count in bold, the done part green, the rest grey
    assert "\x1b[1m2/4\x1b[0m \x1b[32m" + "━" * 10 + "\x1b[0m\x1b[37m" + "━" * 10 in out
    # as Keras 3.6 in a terminal: each redraw but the first backs over the previous line's
    # visible width ("1/4 " + 20 bar characters + " 30s 10s/step - loss: 1.0000" is 52)
    assert out.startswith("\r\x1b[1m1/4")
    assert out.count("\b" * 52 + "\r\x1b[1m2/4") == 1


def test_eta_format_and_unknown_target(clock):
    assert [format_eta(s) for s in (0.4, 59.9, 61, 3725)] == ["0s", "59s", "1:01", "1:02:05"]
    stream = io.StringIO()
    bar = Progbar(None, stream=stream, dynamic=True, interval=0.0)
    clock.now += 0.002
    bar.update(3, {"acc": 0.0001})
    assert frames(stream.getvalue()) == ["      3/Unknown 0s 667us/step - acc: 1.0000e-04"]


def test_stateful_metrics_are_shown_as_given(clock):
    stream = io.StringIO()
    bar = Progbar(4, stream=stream, dynamic=True, interval=0.0, stateful_metrics=["lr"])
    bar.update(1, {"lr": 0.5, "loss": 1.0})
    bar.update(2, {"lr": 0.1, "loss": 0.0})
    assert frames(stream.getvalue())[-1].endswith("- lr: 0.1000 - loss: 0.5000")


def test_piped_output_is_one_line_per_epoch_unchanged(clock):
    stream = io.StringIO()
    bar = Progbar(2, stream=stream, dynamic=False)
    bar.update(1, {"loss": 1.0, "accuracy": 0.5})
    clock.now += 3.0
    bar.update(2, {"loss": 0.5, "accuracy": 0.75})
    assert stream.getvalue() == "2/2 - 3s - 3s/step - loss: 0.5000 - accuracy: 0.7500\n"


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_fit_on_a_terminal_orders_logs_as_keras_3(monkeypatch):
    assert list(keras_order({"loss": 0, "val_loss": 0, "mae": 0, "val_mae": 0})) == [
        "loss",
        "mae",
        "val_loss",
        "val_mae",
    ]
    x = np.random.default_rng(0).normal(size=(16, 3)).astype("float32")
    y = (x[:, :1] > 0).astype("int32")
    model = sl.Sequential([sl.Input((3,)), sl.layers.Dense(2, activation="softmax")])
    model.compile("sgd", "sparse_categorical_crossentropy", metrics=["accuracy"])
    terminal = Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    model.fit(x, y, batch_size=8, epochs=1, validation_data=(x, y))
    last = frames(terminal.getvalue())[-1]
    assert re.fullmatch(
        (
            r"2/2 ━{20} \d+s \d+m?s/step - accuracy: {V} - loss: {V}"
            r" - val_accuracy: {V} - val_loss: {V}"
        ).replace("{V}", KERAS_NUMBER),
        last,
    ), last


def test_verbose_2_orders_logs_as_keras_3(monkeypatch):
    # Keras 3.6, fit(..., verbose=2) with metrics=["accuracy"] and validation data, per epoch:
    # "5/5 - 3s - 624ms/step - accuracy: 0.6528 - loss: 0.6021 - val_accuracy: 0.5833 - ..."
    x = np.random.default_rng(0).normal(size=(16, 3)).astype("float32")
    y = (x[:, :1] > 0).astype("int32")
    model = sl.Sequential([sl.Input((3,)), sl.layers.Dense(2, activation="softmax")])
    model.compile("sgd", "sparse_categorical_crossentropy", metrics=["accuracy"])
    piped = io.StringIO()
    monkeypatch.setattr(sys, "stdout", piped)
    model.fit(x, y, batch_size=8, epochs=1, validation_data=(x, y), verbose=2)
    assert re.fullmatch(
        (
            r"2/2 - \d+s - \d+[mu]?s/step - accuracy: {V} - loss: {V}"
            r" - val_accuracy: {V} - val_loss: {V}\n"
        ).replace("{V}", KERAS_NUMBER),
        piped.getvalue(),
    ), piped.getvalue()
