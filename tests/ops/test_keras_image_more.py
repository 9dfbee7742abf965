"""`sl.ops.image` rgb_to_grayscale, crop_images and pad_images against NumPy, on arrays and on
graph tensors."""

import numpy as np
import pytest

import sluice as sl
from tests.ops.table import check_graph, check_values

image = sl.ops.image
RNG = np.random.default_rng(0)
IMG = RNG.random((2, 5, 6, 3)).astype(np.float32)
GRAY = (IMG @ np.array([0.2989, 0.5870, 0.1140], np.float32))[..., None]

CASES = [
    ("rgb_to_grayscale", image.rgb_to_grayscale, (IMG,), {}, GRAY),
    ("rgb_to_grayscale_first", image.rgb_to_grayscale, (np.transpose(IMG, (0, 3, 1, 2)),),
     {"data_format": "channels_first"}, np.transpose(GRAY, (0, 3, 1, 2))),
    ("pad_images", image.pad_images, (IMG, 1, 2), {"target_height": 8, "target_width": 9},
     np.pad(IMG, ((0, 0), (1, 2), (2, 1), (0, 0)))),
    ("pad_images_one", image.pad_images, (IMG[0], 0, 1, 2, 1), {},
     np.pad(IMG[0], ((0, 2), (1, 1), (0, 0)))),
    ("crop_images", image.crop_images, (IMG, 1, 2), {"target_height": 3, "target_width": 3},
     IMG[:, 1:4, 2:5]),
    ("crop_images_first", image.crop_images, (np.transpose(IMG, (0, 3, 1, 2)), 0, 1, 2, 1),
     {"data_format": "channels_first"}, np.transpose(IMG, (0, 3, 1, 2))[:, :, :3, 1:5]),
]  # fmt: skip


@pytest.mark.parametrize(
    "fn, args, kwargs, want", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_on_values(fn, args, kwargs, want):
    check_values(fn, args, kwargs, want, rtol=1e-6, atol=1e-6)


def test_on_graph_tensors():
    check_graph(CASES)


def test_bad_arguments_say_what_is_wrong():
    with pytest.raises(ValueError, match="exactly two"):
        image.pad_images(IMG, 1)
    with pytest.raises(ValueError, match=">= 0"):
        image.crop_images(IMG, 1, 1, target_height=9, target_width=2)
    with pytest.raises(ValueError, match="3-D"):
        image.rgb_to_grayscale(IMG[0, 0])
