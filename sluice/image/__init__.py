"""`sl.image`: TF1.15's `tf.image` basics: resizing, flips, rotations, crops and pads, dtype
conversion, standardization, brightness, contrast and grayscale.

Images are `[height, width, channels]` or batches `[batch, height, width, channels]`; every
function takes both, as in TF1. `resize_images` (= `resize`, TF 1.15's v1) maps pixels with
TF1's legacy coordinates (no half-pixel centers) unless `align_corners`; its numbers equal
TF1's. Pixel values of float images are in [0, 1], of integer images in [0, dtype max]
(`convert_image_dtype` moves between them).

>>> image = np.arange(4.0).reshape(2, 2, 1)
>>> sl.Session().run(sl.image.resize_images(image, [4, 4]))[..., 0]
array([[0. , 0.5, 1. , 1. ],
       [1. , 1.5, 2. , 2. ],
       [2. , 2.5, 3. , 3. ],
       [2. , 2.5, 3. , 3. ]], dtype=float32)
"""

from sluice._tf1.image.color import (
    adjust_brightness,
    adjust_contrast,
    convert_image_dtype,
    grayscale_to_rgb,
    per_image_standardization,
    rgb_to_grayscale,
)
from sluice._tf1.image.geometry import (
    central_crop,
    crop_to_bounding_box,
    flip_left_right,
    flip_up_down,
    pad_to_bounding_box,
    random_crop,
    random_flip_left_right,
    random_flip_up_down,
    resize_image_with_crop_or_pad,
    resize_with_crop_or_pad,
    rot90,
    transpose,
    transpose_image,
)
from sluice._tf1.image.resizing import (
    ResizeMethod,
    resize,
    resize_area,
    resize_bicubic,
    resize_bilinear,
    resize_images,
    resize_nearest_neighbor,
)

__all__ = [
    "ResizeMethod", "adjust_brightness", "adjust_contrast", "central_crop",
    "convert_image_dtype", "crop_to_bounding_box", "flip_left_right", "flip_up_down",
    "grayscale_to_rgb", "pad_to_bounding_box", "per_image_standardization", "random_crop",
    "random_flip_left_right", "random_flip_up_down", "resize", "resize_area", "resize_bicubic",
    "resize_bilinear", "resize_image_with_crop_or_pad", "resize_images",
    "resize_nearest_neighbor", "resize_with_crop_or_pad", "rgb_to_grayscale", "rot90",
    "transpose", "transpose_image",
]  # fmt: skip
