"""Two processes x 2 virtual CPU devices train as one job on 4 devices (mp_worker.py, next to
this file): an LSTM with `fit` under DataParallel, a CNN with `fit` under ModelParallel (its
dense kernels split over a "model" axis), and (slow) W1 in TF1 style in a `sl.Session` under
DataParallel.

The loss after every step equals, within rtol 1e-5 and atol 1e-6, that of the same training in
this process on 4 devices (the same distribution) and on one device (no distribution); both
processes report the same losses; only process 0 prints progress; what the 2 processes save
together (`save_weights`, `Saver.save`) restores in one process, and the CNN job starts from a
weights file written on one device.

Each job runs under `run_processes`, which stops every process and fails after its timeout, or
as soon as one of them fails: a test never hangs.
"""

import json
import pathlib

import numpy as np
import pytest

import sluice as sl
from tests.distribution import mp_worker
from tests.distribution.multiprocess import run_processes

RTOL, ATOL = 1e-5, 1e-6
TIMEOUT_S = 90


def run_job(mode: str, outdir: pathlib.Path) -> list:
    """Runs the 2-process job of `mode`; returns each process's Result."""
    return run_processes(
        mp_worker.__file__, [mode, str(outdir)], processes=2, cpu_devices=2, timeout=TIMEOUT_S
    )


def job_losses(outdir: pathlib.Path, name: str, steps: int) -> list[float]:
    """The losses the job recorded, after checking that both processes saw the same."""
    losses = [json.loads((outdir / f"losses_{name}_{i}.json").read_text()) for i in range(2)]
    assert len(losses[0]) == steps
    assert losses[1] == losses[0]  # every process reads the global loss
    return losses[0]


def assert_close(got, want, what: str = "") -> None:
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=what)


def assert_only_process_0_printed_progress(results: list, outdir: pathlib.Path) -> None:
    assert "Epoch 1/2" in results[0].stdout and "loss: " in results[0].stdout
    assert "Epoch" not in results[1].stdout and "loss: " not in results[1].stdout, (
        f"process 1 printed progress:\n{results[1].stdout}"
    )
    rows = (outdir / "log.csv").read_text().splitlines()  # CSVLogger: process 0 writes it
    assert [row.split(",")[0] for row in rows] == ["epoch", "0", "1"], rows


def check_fit(mode: str, outdir: pathlib.Path, start: pathlib.Path | None = None) -> sl.Model:
    """The job's `fit` losses against this process's 4-device and 1-device runs (from the
    weights file `start`, as the job); returns the model of the 1-device run."""
    assert len(sl.distribution.list_devices()) == 4  # conftest.py's virtual devices
    steps = mp_worker.EPOCHS * mp_worker.SAMPLES // mp_worker.BATCH_SIZE
    losses = job_losses(outdir, mode, steps)
    _, four_devices = mp_worker.train(mode, distribute=True, start=start)
    one_device_model, one_device = mp_worker.train(mode, distribute=False, start=start)
    assert_close(losses, four_devices)
    assert_close(losses, one_device)
    return one_device_model


def test_lstm_data_parallel_over_two_processes_and_its_weights_file_in_one(tmp_path):
    results = run_job("lstm_dp", tmp_path)
    assert_only_process_0_printed_progress(results, tmp_path)
    reference = check_fit("lstm_dp", tmp_path)

    saved = np.load(tmp_path / "final_weights.npz")
    final = [saved[f"arr_{i}"] for i in range(len(saved.files))]
    restored = mp_worker.build_model("lstm_dp")
    restored.load_weights(str(tmp_path / "model.weights.h5"))
    assert len(restored.get_weights()) == len(final)
    for got, want, one_device in zip(restored.get_weights(), final, reference.get_weights()):
        np.testing.assert_array_equal(got, want)
        assert_close(got, one_device)
    x, _ = mp_worker.data("lstm_dp")
    assert_close(restored.predict(x, verbose=0), reference.predict(x, verbose=0))


def test_cnn_model_parallel_over_two_processes_from_a_one_device_weights_file(tmp_path):
    start = tmp_path / "start.weights.h5"  # written on one device, read by both processes
    model = mp_worker.build_model("cnn_mp")
    rng = np.random.default_rng(5)
    model.set_weights(
        [rng.normal(scale=0.3, size=w.shape).astype(w.dtype) for w in model.get_weights()]
    )
    model.save_weights(str(start))
    results = run_job("cnn_mp", tmp_path)
    assert_only_process_0_printed_progress(results, tmp_path)
    check_fit("cnn_mp", tmp_path, start)


@pytest.mark.slow
def test_w1_in_a_session_over_two_processes_and_its_saver_checkpoint_in_one(tmp_path):
    run_job("w1_dp", tmp_path)
    losses = job_losses(tmp_path, "w1_dp", mp_worker.SAMPLES // mp_worker.BATCH_SIZE)
    one_device, one_device_values = mp_worker.train_w1(distribute=False)
    assert_close(losses, mp_worker.train_w1(distribute=True)[0])
    assert_close(losses, one_device)

    checkpoint = sl.train.latest_checkpoint(str(tmp_path / "w1"))
    assert checkpoint is not None and pathlib.Path(checkpoint).parent == tmp_path / "w1"
    restored = mp_worker.restore_w1(checkpoint)
    final = np.load(tmp_path / "final_values.npz")
    assert sorted(restored) == sorted(final.files) == sorted(one_device_values)
    for name, value in restored.items():
        np.testing.assert_array_equal(value, final[name], err_msg=name)
        assert_close(value, one_device_values[name], name)
