"""Keras 3's default names of objects (keras/src/utils/naming.py): `auto_name("AUC")` gives
"auc", then "auc_1", "auc_2", ..., counted per name in one table with `sl.backend.get_uid`'s
counters, which `clear_session` (`reset_uids`) starts again.

>>> reset_uids()
>>> auto_name("AUC"), auto_name("AUC"), get_uid("auc")
('auc', 'auc_1', 3)
"""

from __future__ import annotations

import collections
import re

# name or prefix -> how many numbers it has had
_uids: collections.defaultdict[str, int] = collections.defaultdict(int)


def to_snake_case(name: str) -> str:
    """'MeanIoU' -> 'mean_io_u', as Keras (characters that are not word characters dropped)."""
    name = re.sub(r"\W+", "", name)
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


def auto_name(class_name: str) -> str:
    """The default name of a new object of `class_name`: its snake case the first time, then
    `<it>_1`, `<it>_2`, ..."""
    base = to_snake_case(class_name)
    count = _uids[base]
    _uids[base] += 1
    return base if count == 0 else f"{base}_{count}"


def get_uid(prefix: str = "") -> int:
    """A counter per `prefix`: 1 at the first call, then 2, 3, ..."""
    _uids[prefix] += 1
    return _uids[prefix]


def reset_uids() -> None:
    """Starts every counter again (what `clear_session` does to names)."""
    _uids.clear()
