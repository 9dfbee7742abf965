"""Argument checks that layers of several families share."""

from __future__ import annotations

from sluice._keras import config


def _data_format(data_format: str | None) -> str:
    """Keras's `standardize_data_format`: None means `sl.config.image_data_format()`."""
    if data_format is None:
        return config.image_data_format()
    data_format = str(data_format).lower()
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(
            f"data_format must be 'channels_last' or 'channels_first', got {data_format!r}."
        )
    return data_format
