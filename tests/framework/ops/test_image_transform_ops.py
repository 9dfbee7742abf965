"""ImageProjectiveTransformV3: values against NumPy references, fill modes as np.pad's,
gradient by central differences."""

import numpy as np
import pytest

import sluice as sl
from sluice.framework.ops.nn.image_transform_ops import image_projective_transform
from sluice.testing import check_gradients

RNG = np.random.default_rng(0)


def run(t):
    return sl.Session().run(t)


def numpy_bilinear(images, transform, fill):
    """The module docstring's maths with a plain loop: bilinear, constant fill."""
    batch, height, width, channels = images.shape
    out = np.zeros_like(images)
    a0, a1, a2, b0, b1, b2, c0, c1 = transform
    for b in range(batch):
        for y in range(height):
            for x in range(width):
                k = c0 * x + c1 * y + 1
                xi, yi = (a0 * x + a1 * y + a2) / k, (b0 * x + b1 * y + b2) / k
                x0, y0 = int(np.floor(xi)), int(np.floor(yi))
                total = np.zeros(channels)
                for yy, wy in ((y0, 1 - (yi - y0)), (y0 + 1, yi - y0)):
                    for xx, wx in ((x0, 1 - (xi - x0)), (x0 + 1, xi - x0)):
                        inside = 0 <= yy < height and 0 <= xx < width
                        total += wy * wx * (images[b, yy, xx] if inside else fill)
                out[b, y, x] = total
    return out


@pytest.mark.parametrize(
    "transform",
    [
        [1, 0, 0, 0, 1, 0, 0, 0],  # identity
        [0.8, 0.3, -0.6, -0.2, 1.1, 0.4, 0, 0],  # affine
        [1.0, 0.1, 0.2, 0.0, 0.9, 0.3, 0.05, -0.02],  # projective
    ],
)
def test_bilinear_constant_equals_a_numpy_loop(transform):
    images = RNG.uniform(size=(2, 4, 5, 2))
    got = run(image_projective_transform(images, [transform], fill_value=0.25))
    np.testing.assert_allclose(got, numpy_bilinear(images, np.array(transform), 0.25), atol=1e-6)


@pytest.mark.parametrize(
    "fill_mode, pad_mode",
    [("NEAREST", "edge"), ("WRAP", "wrap"), ("REFLECT", "symmetric"), ("MIRROR", "reflect")],
)
@pytest.mark.parametrize("interpolation", ["NEAREST", "BILINEAR"])
def test_integer_shifts_read_outside_pixels_as_np_pad(fill_mode, pad_mode, interpolation):
    images = RNG.uniform(size=(1, 5, 6, 1)).astype(np.float32)
    dx, dy = 3, -2  # output (x, y) reads input (x + 3, y - 2)
    t = image_projective_transform(
        images, [[1, 0, dx, 0, 1, dy, 0, 0]], interpolation=interpolation, fill_mode=fill_mode
    )
    padded = np.pad(images[0, :, :, 0], 6, mode=pad_mode)
    want = padded[6 + dy : 6 + dy + 5, 6 + dx : 6 + dx + 6]
    np.testing.assert_allclose(run(t)[0, :, :, 0], want, atol=1e-6)


def test_nearest_rounds_keeps_integer_dtype_and_output_shape():
    images = np.arange(12, dtype=np.int32).reshape(1, 3, 4, 1)
    t = image_projective_transform(
        images, [[1, 0, 0.6, 0, 1, 0, 0, 0]], output_shape=[2, 3], interpolation="nearest"
    )
    assert t.dtype == sl.int32 and t.shape.as_list() == [1, 2, 3, 1]
    # x + 0.6 rounds to the next column
    np.testing.assert_array_equal(run(t)[0, :, :, 0], [[1, 2, 3], [5, 6, 7]])


@pytest.mark.parametrize("mode", ["CONSTANT", pytest.param("REFLECT", marks=pytest.mark.slow)])
def test_the_gradient_of_the_images_matches_central_differences(mode):
    transforms = np.array([[0.9, 0.2, -0.4, -0.1, 1.05, 0.3, 0, 0]])
    check_gradients(
        lambda x: image_projective_transform(x, transforms, fill_mode=mode),
        [RNG.uniform(size=(1, 3, 3, 2))],
    )


def test_bad_arguments_are_refused_at_graph_construction():
    images = np.zeros((1, 3, 3, 1), np.float32)
    with pytest.raises(ValueError, match="fill_mode must be one of"):
        image_projective_transform(images, [[1, 0, 0, 0, 1, 0, 0, 0]], fill_mode="bogus")
    with pytest.raises(ValueError, match="8 columns"):
        image_projective_transform(images, [[1, 0, 0, 0, 1, 0]])
    with pytest.raises(ValueError, match="rank"):
        image_projective_transform(
            np.zeros((3, 3, 1), np.float32), [[1, 0, 0, 0, 1, 0, 0, 0]], [3, 3]
        )
