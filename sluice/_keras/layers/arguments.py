"""Argument checks that layers of several families share."""

from __future__ import annotations

from typing import Any


def _check_no_constraint(**constraints: Any) -> None:
    given = [k for k, v in constraints.items() if v is not None]
    if given:
        raise NotImplementedError(f"Weight constraints are not supported ({', '.join(given)}).")


def _data_format(data_format: str | None) -> str:
    data_format = data_format or "channels_last"
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(
            f"data_format must be 'channels_last' or 'channels_first', got {data_format!r}."
        )
    return data_format
