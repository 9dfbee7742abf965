"""`TensorBoard`: Keras 3's callback, writing event files that TensorBoard reads.

The files are written with tensorboardX (pip install sluice[tensorboard]): a small, pure-Python
writer of TensorBoard's own event format and protos, kept up to date with TensorBoard, which
needs neither TensorFlow nor the (much larger) tensorboard package to write logs.

What is written where, as Keras 3 does:

    log_dir/train/       epoch_<name> (each training log, e.g. epoch_loss) and
                         epoch_learning_rate at step = epoch;
                         batch_<name> at step = global batch, every `update_freq` batches;
                         <weight name>/histogram (and /image) every `histogram_freq` epochs;
                         the model's config (tag "keras", TensorBoard's graph_keras_model plugin)
    log_dir/validation/  epoch_<name> of each val_<name> log at step = epoch;
                         evaluation_<name>_vs_iterations at step = training iterations

fit already brings each step's logs to the host, so batch summaries add no device work; an
epoch adds one read of the learning rate (and of the weights when histograms are due).

    model.fit(x, y, epochs=5, callbacks=[sl.callbacks.TensorBoard("logs", histogram_freq=1)])
    # then: tensorboard --logdir logs
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import numpy as np

from sluice._export import export
from sluice._keras.callbacks.callback import Callback
from sluice._keras.utils.png import encode_png


def _summary_writer_class() -> Any:
    try:
        from tensorboardX import SummaryWriter
    except ImportError as e:
        raise ImportError(
            "sl.callbacks.TensorBoard writes its event files with tensorboardX, which is not "
            "installed: pip install sluice[tensorboard] (or pip install tensorboardX)."
        ) from e
    return SummaryWriter


def weight_image(value: np.ndarray) -> np.ndarray | None:
    """A weight as a batch of grey images [n, h, w, 1], by Keras's rule (a bias is one row, a
    kernel one image with its longer side as width, a 3-D conv kernel one image per output
    channel); None for the shapes Keras does not draw."""
    w = np.squeeze(value)
    if w.ndim == 1:
        return w.reshape(1, 1, w.shape[0], 1)
    if w.ndim == 2:
        if w.shape[0] > w.shape[1]:
            w = w.T
        return w.reshape(1, w.shape[0], w.shape[1], 1)
    if w.ndim == 3:
        return np.transpose(w, (2, 0, 1))[..., None]
    return None


@export("callbacks.TensorBoard")
class TensorBoard(Callback):
    """Logs scalars, weight histograms and the model for TensorBoard.

    Args:
      log_dir: the folder of the logs (train/ and validation/ are made in it).
      histogram_freq: write weight histograms every this many epochs (0: never).
      write_graph: write the model's config at the start (TensorBoard's graph tab shows it).
      write_images: with `histogram_freq`, also write the weights as images.
      write_steps_per_second: also log the training steps per second (per epoch, and per
        batch with `update_freq`).
      update_freq: "epoch", or "batch" / an int N: also write the batch logs every N batches
        (Keras 3 itself writes every batch for any int: here N is honoured).
      profile_batch: 0 (profiling is not supported; any other value raises).
      embeddings_freq: 0 (the projector is not supported; any other value raises).
      embeddings_metadata: None.

    Raises:
      ImportError: tensorboardX is not installed (`pip install sluice[tensorboard]`).
      ValueError: a bad `update_freq` or `histogram_freq`.
      NotImplementedError: profiling or embeddings asked for.
    """

    def __init__(
        self,
        log_dir: str = "logs",
        histogram_freq: int = 0,
        write_graph: bool = True,
        write_images: bool = False,
        write_steps_per_second: bool = False,
        update_freq: str | int = "epoch",
        profile_batch: int = 0,
        embeddings_freq: int = 0,
        embeddings_metadata: Any = None,
    ) -> None:
        super().__init__()
        self._writer_class = _summary_writer_class()
        if update_freq == "batch":
            update_freq = 1
        if update_freq != "epoch" and not (isinstance(update_freq, int) and update_freq > 0):
            raise ValueError(
                f"TensorBoard: update_freq must be 'epoch', 'batch' or a positive "
                f"int, got {update_freq!r}."
            )
        if not isinstance(histogram_freq, int) or histogram_freq < 0:
            raise ValueError(
                f"TensorBoard: histogram_freq must be an int >= 0, got {histogram_freq!r}."
            )
        if profile_batch:
            raise NotImplementedError(
                "TensorBoard: profiling (profile_batch) is not supported "
                "by sluice; use RunOptions(trace_level=FULL_TRACE) for per-op times."
            )
        if embeddings_freq or embeddings_metadata is not None:
            raise NotImplementedError("TensorBoard: the embeddings projector is not supported.")
        self.log_dir = os.fspath(log_dir)
        self.histogram_freq = histogram_freq
        self.write_graph = write_graph
        self.write_images = write_images
        self.write_steps_per_second = write_steps_per_second
        self.update_freq = update_freq
        self._writers: dict[str, Any] = {}
        self._global_train_batch = 0
        self._batch_start = 0.0
        self._epoch_start = 0.0
        self._epoch_batches = 0

    # -- writers ----------------------------------------------------------------------------
    def _writer(self, which: str) -> Any:
        """The writer of log_dir/train or log_dir/validation, made on first use (no empty
        event files)."""
        if which not in self._writers:
            self._writers[which] = self._writer_class(os.path.join(self.log_dir, which))
        return self._writers[which]

    def _close_writers(self) -> None:
        for writer in self._writers.values():
            writer.close()
        self._writers = {}

    # -- fit --------------------------------------------------------------------------------
    def on_train_begin(self, logs: dict | None = None) -> None:
        self._global_train_batch = 0
        if self.write_graph:
            self._write_model_config()

    def on_train_end(self, logs: dict | None = None) -> None:
        self._close_writers()

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self._epoch_start = time.time()
        self._epoch_batches = 0

    def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        self._global_train_batch += 1
        self._epoch_batches += 1
        self._batch_start = time.time()

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        if self.update_freq == "epoch" or self._global_train_batch % self.update_freq:
            return
        writer, step = self._writer("train"), self._global_train_batch
        if self.write_steps_per_second:
            elapsed = max(time.time() - self._batch_start, 1e-9)
            writer.add_scalar("batch_steps_per_second", 1.0 / elapsed, step)
        for name, value in _scalars(logs).items():
            writer.add_scalar("batch_" + name, value, step)

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        logs = _scalars(logs)
        train = {k: v for k, v in logs.items() if not k.startswith("val_")}
        validation = {k[len("val_") :]: v for k, v in logs.items() if k.startswith("val_")}
        rate = self._learning_rate()
        if rate is not None:
            train["learning_rate"] = rate
        if self.write_steps_per_second:
            elapsed = max(time.time() - self._epoch_start, 1e-9)
            train["steps_per_second"] = self._epoch_batches / elapsed
        for which, values in (("train", train), ("validation", validation)):
            if values:
                writer = self._writer(which)
                for name, value in values.items():
                    writer.add_scalar("epoch_" + name, value, epoch)
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            self._write_weights(epoch)
        for writer in self._writers.values():
            writer.flush()

    def on_test_end(self, logs: dict | None = None) -> None:
        iterations = getattr(self.model, "steps_trained", None)
        if iterations is None or not logs:
            return
        step = iterations()
        writer = self._writer("validation")
        for name, value in _scalars(logs).items():
            writer.add_scalar(f"evaluation_{name}_vs_iterations", value, step)

    # -- what is written --------------------------------------------------------------------
    def _learning_rate(self) -> float | None:
        """The optimizer's current rate; None when it is a schedule, not a Variable."""
        read = getattr(self.model, "get_learning_rate", None)
        if read is None:
            return None
        try:
            return read()
        except ValueError:  # a schedule or a constant: nothing to read
            return None

    def _write_weights(self, epoch: int) -> None:
        writer = self._writer("train")
        for layer in self.model.layers:
            for weight, value in zip(layer.weights, layer.get_weights()):
                tag = weight.name.replace(":", "_")
                finite = value[np.isfinite(value)]  # tensorboardX cannot bin NaN or inf
                if finite.size:  # (a diverged weight: its finite values, fit goes on)
                    writer.add_histogram(f"{tag}/histogram", finite, epoch)
                images = weight_image(np.asarray(value)) if self.write_images else None
                if images is not None:
                    self._write_images(f"{tag}/image", images, epoch)

    def _write_images(self, tag: str, images: np.ndarray, step: int) -> None:
        """Grey PNG images (one per weight image; `tag/i` when there are several), encoded
        here so that writing images needs no imaging library."""
        from tensorboardX.proto.summary_pb2 import Summary

        values = []
        for i, image in enumerate(_to_grey_bytes(images)):
            height, width = image.shape
            encoded = Summary.Image(
                height=height, width=width, colorspace=1, encoded_image_string=encode_png(image)
            )
            values.append(
                Summary.Value(tag=tag if len(images) == 1 else f"{tag}/{i}", image=encoded)
            )
        self._writer("train").file_writer.add_summary(Summary(value=values), step)

    def _write_model_config(self) -> None:
        """The model's config as TensorBoard's graph_keras_model plugin reads it (Keras's
        `keras_model_summary`): the graph tab then draws the layers."""
        from tensorboardX.proto.summary_pb2 import Summary, SummaryMetadata
        from tensorboardX.proto.tensor_pb2 import TensorProto

        get_config = getattr(self.model, "get_config", None)
        if get_config is None:
            return
        config = {"class_name": type(self.model).__name__, "config": get_config()}
        text = json.dumps(config, default=str).encode("utf-8")
        metadata = SummaryMetadata(
            plugin_data=SummaryMetadata.PluginData(plugin_name="graph_keras_model", content=b"1")
        )
        tensor = TensorProto(dtype=7, string_val=[text])  # 7: DT_STRING
        summary = Summary(value=[Summary.Value(tag="keras", metadata=metadata, tensor=tensor)])
        self._writer("train").file_writer.add_summary(summary, 0)


def _scalars(logs: dict | None) -> dict[str, float]:
    out = {}
    for name, value in (logs or {}).items():
        try:
            out[name] = float(value)
        except (TypeError, ValueError):
            continue
    return out


def _to_grey_bytes(images: np.ndarray) -> np.ndarray:
    """[n, h, w, 1] weights as uint8 [n, h, w], each image scaled from the min to the max of
    its finite values (NaN and inf are black)."""
    finite = np.isfinite(images)
    axes = (1, 2, 3)
    low = np.where(finite, images, np.inf).min(axis=axes, keepdims=True)
    high = np.where(finite, images, -np.inf).max(axis=axes, keepdims=True)
    low = np.where(np.isfinite(low), low, 0.0)
    span = np.where(high > low, high - low, 1.0)
    unit = np.where(finite, (np.where(finite, images, low) - low) / span, 0.0)
    return np.round(unit[..., 0] * 255).astype(np.uint8)
