"""Reading values out of an untrusted h5 weights file (Keras 3's or Keras 2's).

A weights file may come from anywhere: objects are reached one hard link at a time (a soft or
external link could lead into another file), and a dataset is read only once it is known to be
a plain numeric array of the expected shape whose values are stored in this file and are no
bigger than the file. Every problem is a ValueError naming the object at fault.
"""

from __future__ import annotations

from typing import Any

import h5py
import numpy as np

from sluice.framework.variables import Variable


def hard_child(group: Any, name: str) -> Any:
    """`group[name]` when it is a hard link inside the file (None when absent); raises for a
    soft or external link, which could point into another file."""
    if group is None or not isinstance(group, h5py.Group):
        return None
    link = group.get(name, getlink=True)
    if link is None:
        return None
    if not isinstance(link, h5py.HardLink):
        raise ValueError(
            f"{group.name}/{name} is an h5py {type(link).__name__}, not an object of this file; "
            "weights files are read through hard links only."
        )
    return group[name]


def find_group(root: h5py.Group, path: str) -> h5py.Group | None:
    """The group at `path` (parts separated by "/") below `root`, following hard links only;
    None when there is none."""
    obj = root
    for part in [p for p in path.split("/") if p]:
        obj = hard_child(obj, part)
        if obj is None:
            return None
    return obj if isinstance(obj, h5py.Group) else None


def checked_array(ds: Any, where: str, variable: Variable, any_shape: bool = False) -> np.ndarray:
    """The value of dataset `ds` for `variable`, after checking that it is a dataset of this
    file, of a plain numeric type that fits the variable's dtype, of the variable's shape
    (unless `any_shape`: a value to convert first), and no bigger than the file (so a hostile
    file cannot make the reader allocate more).

    Raises:
      ValueError: naming `where` (the layer and the dataset's path) and what differs.
    """
    if not isinstance(ds, h5py.Dataset):
        raise ValueError(f"{where}: expected a dataset, found an h5py {type(ds).__name__}.")
    found = tuple(ds.shape or ())
    expected = found if any_shape else tuple(variable.shape.as_list())
    want = np.dtype(variable.dtype.name) if variable.dtype.name != "bfloat16" else None
    dtype = ds.dtype
    if dtype.fields or dtype.subdtype or dtype.kind not in "biuf":
        raise ValueError(
            f"{where}: the dataset has type {dtype}, not a plain numeric type; the weight "
            f"{variable.op.name} is {variable.dtype.name}."
        )
    fits = {"f": "fiu", "i": "iu", "u": "iu", "b": "b"}
    if want is not None and dtype.kind not in fits.get(want.kind, want.kind):
        raise ValueError(
            f"{where}: the dataset holds {dtype} values; the weight {variable.op.name} is "
            f"{variable.dtype.name}."
        )
    if ds.shape is None or found != expected:
        raise ValueError(
            f"{where}: the dataset has shape {found}; the weight "
            f"{variable.op.name} has shape {expected}."
        )
    plist = ds.id.get_create_plist()
    if ds.is_virtual or plist.get_external_count():
        raise ValueError(f"{where}: the dataset keeps its values in another file.")
    file_size = ds.file.id.get_filesize()
    if int(np.prod(expected, dtype=np.int64)) * dtype.itemsize > file_size:
        raise ValueError(
            f"{where}: the dataset declares more bytes of values than the whole file holds."
        )
    value = np.asarray(ds[()])
    if want is None or value.dtype == want:
        return value
    with np.errstate(over="ignore", invalid="ignore"):
        cast = value.astype(want)
    if _out_of_range(value, want, cast):
        raise ValueError(
            f"{where}: the dataset's {dtype} values do not fit the weight "
            f"{variable.op.name} ({want}): casting would turn them into inf or wrap them."
        )
    return cast


def _out_of_range(value: np.ndarray, want: np.dtype, cast: np.ndarray) -> bool:
    """Whether casting `value` to `want` changed finite floats into infinities or integers
    into others (precision lost to rounding is fine, as in Keras's assign)."""
    if want.kind == "f" and value.dtype.kind == "f":
        return bool(np.any(np.isfinite(value) & ~np.isfinite(cast)))
    if want.kind in "iu" and value.dtype.kind in "iu" and value.size:
        info = np.iinfo(want)
        return bool(value.min() < info.min or value.max() > info.max)
    return False


def has_datasets(group: h5py.Group) -> bool:
    """Whether a dataset of this file lies anywhere below `group`."""
    links: list[tuple[str, Any]] = []
    group.visititems_links(lambda name, link: links.append((name, link)))
    return any(
        isinstance(link, h5py.HardLink) and isinstance(group[name], h5py.Dataset)
        for name, link in links
    )
