"""What CIFAR-10 and CIFAR-100 share: finding the extracted batches in the Keras cache (or
extracting Keras's archive), and reading one batch file safely.

Keras has left the data in two places over its versions; both are looked for:
`datasets/<folder>/data_batch_1` (archive `<folder>.tar.gz`, extracted in `datasets/`) and
`datasets/<folder>/<folder>/data_batch_1` (archive `<folder>_archive`, extracted in
`datasets/<folder>/`). A download goes the first way.
"""

from __future__ import annotations

import os
import pickle

import numpy as np

from sluice._keras import config
from sluice._keras.datasets import files, safe_arrays


def batches_folder(folder: str, origin: str, file_hash: str, first_file: str) -> str:
    """The folder holding `first_file` of the data set `folder`, extracted or downloaded first
    when needed."""
    datasets = files.cache_dir()
    layouts = [
        (os.path.join(datasets, folder), os.path.join(datasets, folder + ".tar.gz"), datasets),
        (
            os.path.join(datasets, folder, folder),
            os.path.join(datasets, folder + "_archive"),
            os.path.join(datasets, folder),
        ),
    ]
    for extracted, _, _ in layouts:
        if os.path.isfile(os.path.join(extracted, first_file)):
            return extracted
    for extracted, archive, destination in layouts:
        if os.path.isfile(archive):
            files.extract_tar(archive, destination, folder)
            if os.path.isfile(os.path.join(extracted, first_file)):
                return extracted
            raise ValueError(f"{archive} holds no {folder}/{first_file}: not Keras's archive.")
    extracted, archive, destination = layouts[0]
    files.download(origin, archive, file_hash)
    files.extract_tar(archive, destination, folder)
    if not os.path.isfile(os.path.join(extracted, first_file)):
        raise ValueError(f"{archive} (from {origin}) holds no {folder}/{first_file}.")
    return extracted


def load_batch(path: str, label_key: str = "labels") -> tuple[np.ndarray, np.ndarray]:
    """(images uint8 (n, 3, 32, 32), labels uint8 (n,)) from one CIFAR batch file (a Python 2
    pickle of a dict, read by `SafeUnpickler`: plain values and NumPy arrays only)."""
    with open(path, "rb") as f:
        try:
            batch = safe_arrays.safe_pickle_load(f, encoding="bytes")
        except (
            pickle.UnpicklingError,
            EOFError,
            ValueError,
            TypeError,
            AttributeError,
            IndexError,
            KeyError,
        ) as e:  # what a malformed pickle raises
            raise ValueError(f"{path} is not a CIFAR batch file ({type(e).__name__}: {e}).") from e
    if not isinstance(batch, dict):
        raise ValueError(
            f"{path} is not a CIFAR batch file (a dict), it is a {type(batch).__name__}."
        )
    batch = {k.decode("utf8") if isinstance(k, bytes) else k: v for k, v in batch.items()}
    if "data" not in batch or label_key not in batch:
        raise ValueError(f"{path} lacks 'data' or {label_key!r}; it has {sorted(map(str, batch))}.")
    data = np.asarray(batch["data"])
    labels = np.asarray(batch[label_key])
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3 * 32 * 32:
        raise ValueError(f"{path}: 'data' is {data.dtype} {data.shape}, not uint8 (n, 3072).")
    if labels.ndim != 1 or len(labels) != len(data) or labels.dtype.kind not in "iu":
        raise ValueError(f"{path}: {label_key!r} is not {len(data)} integer labels.")
    return data.reshape(len(data), 3, 32, 32), labels.astype(np.uint8)


def to_image_data_format(x: np.ndarray) -> np.ndarray:
    """(n, 3, 32, 32) batches as `sl.config.image_data_format()` wants them."""
    return x.transpose(0, 2, 3, 1) if config.image_data_format() == "channels_last" else x
