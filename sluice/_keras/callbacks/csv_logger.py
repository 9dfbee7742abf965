"""`CSVLogger`: one CSV row of logs per epoch, continued correctly by a resumed run."""

from __future__ import annotations

import csv
import os
from typing import Any

import numpy as np

from sluice._export import export
from sluice._keras.callbacks.callback import Callback
from sluice._tf1.checkpoints import atomic, regular_file
from sluice.framework.placement import processes


@export("callbacks.CSVLogger")
class CSVLogger(Callback):
    """Writes one CSV row per epoch: "epoch" then the logs, sorted by name.

    When the run does not start at epoch 0 (a BackupAndRestore resume, or `initial_epoch`) and
    the file exists, or with `append=True`, rows are appended under the existing header (no
    second header); rows of the epochs this run does again are dropped first.

    Args:
      filename: the CSV file.
      separator: the field separator.
      append: always append to an existing file.
    """

    def __init__(self, filename: str, separator: str = ",", append: bool = False):
        super().__init__()
        self.filename = os.fspath(filename)
        self.sep = separator
        self.append = append
        self._keys: list[str] | None = None
        self._first_epoch: int | None = None

    def on_train_begin(self, logs: dict | None = None) -> None:
        self._keys = None
        self._first_epoch = None

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        if self._first_epoch is None:
            self._first_epoch = epoch

    def _open(self, logs: dict) -> None:
        first = self._first_epoch or 0
        continuing = (self.append or first > 0) and os.path.exists(self.filename)
        if continuing:
            # a FIFO or a device there would block the read forever: refused, naming it
            with os.fdopen(regular_file.open_regular(self.filename), newline="") as fh:
                rows = list(csv.reader(fh, delimiter=self.sep))
            if rows:
                header, body = rows[0], rows[1:]
                kept = [r for r in body if r and _epoch_of(r) is not None and _epoch_of(r) < first]
                self._keys = header[1:]
                self._write_rows([header] + kept)
                return
        self._keys = sorted(logs)
        self._write_rows([["epoch"] + self._keys])

    def _write_rows(self, rows: list[list[str]]) -> None:
        def write(tmp: str) -> None:
            with open(tmp, "w", newline="") as fh:
                csv.writer(fh, delimiter=self.sep, lineterminator="\n").writerows(rows)

        directory = os.path.dirname(os.path.abspath(self.filename))
        os.makedirs(directory, exist_ok=True)
        atomic.write_atomically(self.filename, write)

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if not processes.is_chief():  # one file for a multi-process run: process 0 writes it
            return
        logs = dict(logs or {})
        if self._keys is None:
            self._open(logs)
        row = [str(epoch)] + [_csv_value(logs.get(k, "NA")) for k in self._keys]
        with open(self.filename, "a", newline="") as fh:
            csv.writer(fh, delimiter=self.sep, lineterminator="\n").writerow(row)


def _epoch_of(row: list[str]) -> int | None:
    try:
        return int(row[0])
    except (ValueError, IndexError):
        return None


def _csv_value(value: Any) -> str:
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    return str(value)
