"""`Resizing` and `CenterCrop` (Keras 3's `image_preprocessing/resizing.py` and
`center_crop.py`), on images of rank 3 or 4 with static height and width."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.layers.base import Layer
from sluice._keras.layers.preprocessing import image_utils
from sluice.framework.ir import dtypes
from sluice.framework.ops.array import fill_ops


def _output_shape(input_shape: Any, height: int, width: int, data_format: str) -> tuple:
    shape = list(input_shape)
    if len(shape) not in (3, 4):
        raise ValueError(
            "`input_shape` must be a non-nested tuple or list of rank-1 with size 3 "
            f"(unbatched) or 4 (batched), got {tuple(input_shape)}."
        )
    first = len(shape) - 3 + (1 if data_format == "channels_first" else 0)
    shape[first], shape[first + 1] = height, width
    return tuple(shape)


@export("layers.Resizing")
class Resizing(Layer):
    """Resizes images to (`height`, `width`) by `interpolation` ("bilinear", "nearest",
    "bicubic"; half-pixel centres, as Keras 3 on JAX; bicubic weights come from TF1's table
    of 1/1024 steps, within about 2e-3 of JAX's), optionally after a centred crop to the
    target's aspect ratio (`crop_to_aspect_ratio`). The output keeps the input's dtype (integer
    images are rounded and clipped to their range), as Keras 3's layer.

    Args:
      height, width: the output size.
      interpolation: "bilinear", "nearest" or "bicubic".
      crop_to_aspect_ratio: crop the largest centred window of the target's aspect ratio first.
      data_format: "channels_last" (default: `keras.config.image_data_format()`) or
        "channels_first".

    Raises:
      NotImplementedError: `pad_to_aspect_ratio` or `antialias` (not supported).

    >>> layer = sl.layers.Resizing(2, 2)
    >>> np.asarray(layer(np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)))[0, :, :, 0]
    array([[ 2.5,  4.5],
           [10.5, 12.5]], dtype=float32)
    """

    def __init__(
        self,
        height: int,
        width: int,
        interpolation: str = "bilinear",
        crop_to_aspect_ratio: bool = False,
        pad_to_aspect_ratio: bool = False,
        fill_mode: str = "constant",
        fill_value: float = 0.0,
        antialias: bool = False,
        data_format: str | None = None,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        if pad_to_aspect_ratio or antialias:
            raise NotImplementedError(
                "Resizing: pad_to_aspect_ratio and antialias are not supported."
            )
        if interpolation not in image_utils.RESIZE_OPS:
            raise ValueError(
                f"Resizing: interpolation must be one of {sorted(image_utils.RESIZE_OPS)}, got "
                f"{interpolation!r}."
            )
        self.height, self.width = int(height), int(width)
        self.interpolation = interpolation
        self.crop_to_aspect_ratio = bool(crop_to_aspect_ratio)
        self.pad_to_aspect_ratio = False
        self.fill_mode, self.fill_value = fill_mode, fill_value
        self.antialias = False
        self.data_format = image_utils.data_format_arg("Resizing", data_format)

    def call(self, inputs: Any) -> Any:
        x, single = image_utils.as_batch(self.name, inputs, self.data_format)
        if self.crop_to_aspect_ratio:
            x = image_utils.crop_to_aspect_ratio(x, self.height, self.width, self.name)
        resized = image_utils.resize(x, self.height, self.width, self.interpolation, self.name)
        resized = image_utils.saturate_cast(resized, x.dtype)
        return image_utils.restore(resized, single, self.data_format)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return _output_shape(input_shape, self.height, self.width, self.data_format)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "height": self.height,
            "width": self.width,
            "interpolation": self.interpolation,
            "crop_to_aspect_ratio": self.crop_to_aspect_ratio,
            "pad_to_aspect_ratio": self.pad_to_aspect_ratio,
            "fill_mode": self.fill_mode,
            "fill_value": self.fill_value,
            "antialias": self.antialias,
            "data_format": self.data_format,
        }


@export("layers.CenterCrop")
class CenterCrop(Layer):
    """The centred (`height`, `width`) window of each image, in the layer's dtype. An image
    smaller than the window in either direction is resized instead, after a centred crop to
    the window's aspect ratio (Keras's `smart_resize`, bilinear).

    Args:
      height, width: the output size.
      data_format: "channels_last" (default: `keras.config.image_data_format()`) or
        "channels_first".

    >>> layer = sl.layers.CenterCrop(2, 2)
    >>> np.asarray(layer(np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)))[0, :, :, 0]
    array([[ 5.,  6.],
           [ 9., 10.]], dtype=float32)
    """

    def __init__(self, height: int, width: int, data_format: str | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.height, self.width = int(height), int(width)
        self.data_format = image_utils.data_format_arg("CenterCrop", data_format)

    def call(self, inputs: Any) -> Any:
        x, single = image_utils.as_batch(self.name, inputs, self.data_format)
        x = x if x.dtype == self._dtype else fill_ops.cast(x, self._dtype)
        in_h, in_w = image_utils.static_hw(self.name, x)
        if in_h >= self.height and in_w >= self.width:
            top, left = (in_h - self.height) // 2, (in_w - self.width) // 2
            out = image_utils.crop(x, top, left, self.height, self.width)
        else:
            x = image_utils.crop_to_aspect_ratio(x, self.height, self.width, self.name)
            out = image_utils.resize(x, self.height, self.width, "bilinear", self.name)
            if not dtypes.is_floating(self._dtype):
                out = image_utils.saturate_cast(out, self._dtype)
        return image_utils.restore(out, single, self.data_format)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return _output_shape(input_shape, self.height, self.width, self.data_format)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "height": self.height,
            "width": self.width,
            "data_format": self.data_format,
        }
