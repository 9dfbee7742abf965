"""`sl.image` (issue 17, item 4): TF1's resize numbers (the expected values of TF's own
image_ops_test for the v1 methods), NumPy references for the rest, 3-D and 4-D inputs, both
engines, and gradients against finite differences."""

import numpy as np
import pytest

import sluice as sl

M = sl.image.ResizeMethod
ENGINES = ["compiled", "interpreted"]

# TF1's image_ops_test: a [1, 3, 2, 1] image resized to 6x4 (legacy) and 5x4 (align_corners).
DATA = [64, 32, 32, 64, 50, 100]
UP = {
    M.BILINEAR: [
        64,
        48,
        32,
        32,
        48,
        48,
        48,
        48,
        32,
        48,
        64,
        64,
        41,
        61.5,
        82,
        82,
        50,
        75,
        100,
        100,
        50,
        75,
        100,
        100,
    ],
    M.NEAREST_NEIGHBOR: [
        64,
        64,
        32,
        32,
        64,
        64,
        32,
        32,
        32,
        32,
        64,
        64,
        32,
        32,
        64,
        64,
        50,
        50,
        100,
        100,
        50,
        50,
        100,
        100,
    ],
    M.AREA: [
        64,
        64,
        32,
        32,
        64,
        64,
        32,
        32,
        32,
        32,
        64,
        64,
        32,
        32,
        64,
        64,
        50,
        50,
        100,
        100,
        50,
        50,
        100,
        100,
    ],
}
CORNERS_DATA = [6, 3, 3, 6, 6, 9]
UP_ALIGNED = {
    M.BILINEAR: [6, 5, 4, 3, 4.5, 4.5, 4.5, 4.5, 3, 4, 5, 6, 4.5, 5.5, 6.5, 7.5, 6, 7, 8, 9],
    M.NEAREST_NEIGHBOR: [6, 6, 3, 3, 3, 3, 6, 6, 3, 3, 6, 6, 6, 6, 9, 9, 6, 6, 9, 9],
    M.AREA: [6, 6, 6, 3, 6, 6, 6, 3, 3, 3, 3, 6, 3, 3, 3, 6, 6, 6, 6, 9],
}


def run(fetches, engine="compiled", feed=None):
    with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
        return sess.run(fetches, feed)


@pytest.mark.parametrize("engine, dtype", [("compiled", np.uint8), ("interpreted", np.float32)])
def test_resize_images_gives_tf1_numbers(engine, dtype):
    image = np.array(DATA, dtype).reshape(1, 3, 2, 1)
    aligned = np.array(CORNERS_DATA, dtype).reshape(1, 3, 2, 1)
    fetches = {f"{m}": sl.image.resize_images(image, [6, 4], m) for m in UP}
    fetches.update(
        {f"{m} aligned": sl.image.resize_images(aligned, [5, 4], m, True) for m in UP_ALIGNED}
    )
    got = run(fetches, engine)
    for m, want in UP.items():
        np.testing.assert_allclose(got[f"{m}"].ravel(), want, atol=1e-5)
        np.testing.assert_allclose(got[f"{m} aligned"].ravel(), UP_ALIGNED[m], atol=1e-5)
    assert got[f"{M.NEAREST_NEIGHBOR}"].dtype == dtype  # nearest keeps the dtype
    assert got[f"{M.BILINEAR}"].dtype == got[f"{M.AREA}"].dtype == np.float32


def test_half_pixel_bilinear_and_bicubic_give_tf_numbers():
    # TF's v2 expectations for this image, which TF checks against ResizeBilinear/ResizeBicubic
    # with half_pixel_centers=True
    image = np.array(DATA, np.float32).reshape(1, 3, 2, 1)
    bilinear = [
        64,
        56,
        40,
        32,
        56,
        52,
        44,
        40,
        40,
        44,
        52,
        56,
        36.5,
        45.625,
        63.875,
        73,
        45.5,
        56.875,
        79.625,
        91,
        50,
        62.5,
        87.5,
        100,
    ]
    bicubic = [
        70.1453,
        59.0252,
        36.9748,
        25.8547,
        59.3195,
        53.3386,
        41.4789,
        35.4981,
        36.383,
        41.285,
        51.0051,
        55.9071,
        30.2232,
        42.151,
        65.8032,
        77.731,
        41.6492,
        55.823,
        83.9288,
        98.1026,
        47.0363,
        62.2744,
        92.4903,
        107.7284,
    ]
    got = run(
        [
            sl.image.resize_bilinear(image, [6, 4], half_pixel_centers=True),
            sl.image.resize_bicubic(image, [6, 4], half_pixel_centers=True),
        ]
    )
    np.testing.assert_allclose(got[0].ravel(), bilinear, atol=1e-5)
    np.testing.assert_allclose(got[1].ravel(), bicubic, atol=1e-4)


def legacy_bicubic(image, out_h, out_w):
    """TF1's legacy ResizeBicubic, pixel by pixel: source y * scale, Keys' kernel with
    a = -0.75 at the fraction rounded to 1/1024, taps clamped to the edge."""

    def taps(in_size, out_size):
        result = []
        for y in range(out_size):
            where = np.float32(y) * np.float32(in_size / out_size)
            start = int(np.floor(where))
            t = np.round((where - start) * 1024) / 1024
            weights = []
            for x in (1 + t, t, 1 - t, 2 - t):
                a = -0.75
                weights.append(
                    ((a + 2) * x - (a + 3)) * x * x + 1
                    if x <= 1
                    else ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
                )
            result.append(
                [(min(max(start + k, 0), in_size - 1), w) for k, w in zip((-1, 0, 1, 2), weights)]
            )
        return result

    rows, cols = taps(image.shape[1], out_h), taps(image.shape[2], out_w)
    out = np.zeros((image.shape[0], out_h, out_w, image.shape[3]))
    for y, row in enumerate(rows):
        for x, col in enumerate(cols):
            for i, wy in row:
                for j, wx in col:
                    out[:, y, x] += wy * wx * image[:, i, j]
    return out


def test_legacy_bicubic_matches_tf1_kernel_loop():
    image = np.random.default_rng(0).uniform(0, 1, (2, 5, 4, 2)).astype(np.float32)
    got = run(sl.image.resize_images(image, [7, 3], M.BICUBIC))
    np.testing.assert_allclose(got, legacy_bicubic(image, 7, 3), rtol=1e-5, atol=1e-6)


def test_resize_takes_3d_images_and_keeps_an_unchanged_size_as_is():
    image = np.arange(24, dtype=np.uint8).reshape(4, 3, 2)
    same = sl.image.resize_images(image, [4, 3])
    small = sl.image.resize(image, [2, 3], M.NEAREST_NEIGHBOR)
    assert same.dtype == sl.uint8 and same.shape.as_list() == [4, 3, 2]
    assert small.shape.as_list() == [2, 3, 2]
    got_same, got_small = run([same, small])
    np.testing.assert_array_equal(got_same, image)
    np.testing.assert_array_equal(got_small, image[::2])


def test_preserve_aspect_ratio_scales_both_sides_by_the_smaller_ratio():
    image = np.zeros((1, 10, 20, 3), np.float32)
    assert sl.image.resize_images(image, [15, 15], preserve_aspect_ratio=True).shape.as_list() == [
        1,
        8,
        15,
        3,
    ]  # 10 * 0.75 = 7.5 rounds half to even
    assert sl.image.resize_images(image, [40, 100], preserve_aspect_ratio=True).shape.as_list() == [
        1,
        40,
        80,
        3,
    ]


def test_resize_errors():
    with pytest.raises(ValueError, match="3 or 4 dimensions"):
        sl.image.resize_images(np.zeros((2, 2)), [4, 4])
    with pytest.raises(ValueError, match="not implemented"):
        sl.image.resize_images(np.zeros((2, 2, 1)), [4, 4], method=7)
    with pytest.raises(ValueError, match="2 elements"):
        sl.image.resize_images(np.zeros((2, 2, 1)), [4, 4, 4])
    with pytest.raises(ValueError, match="4-D"):
        sl.image.resize_bilinear(np.zeros((2, 2, 1)), [4, 4])


@pytest.mark.parametrize("method", [M.BILINEAR, M.NEAREST_NEIGHBOR, M.BICUBIC])
def test_resize_gradients_match_finite_differences(method):
    # the kernels compute in float32 (as TF1's), so the differences carry float32 rounding
    image = np.random.default_rng(1).normal(size=(1, 3, 4, 2))
    sl.testing.check_gradients(
        lambda x: sl.image.resize_images(x, [5, 3], method, align_corners=method == M.BILINEAR),
        [image],
        rtol=1e-3,
        atol=1e-3,
        delta=1e-2,
    )


def test_area_resize_has_no_gradient_as_in_tf1():
    x = sl.placeholder(sl.float32, [1, 4, 4, 1])
    assert sl.gradients(sl.reduce_sum(sl.image.resize_area(x, [2, 2])), x) == [None]


# -- flips, rotations, crops, pads --------------------------------------------------------------
IMAGE = np.arange(2 * 4 * 5 * 3, dtype=np.float32).reshape(2, 4, 5, 3)


@pytest.mark.parametrize("engine", ENGINES)
def test_flips_transposes_and_rotations_on_3d_and_4d(engine):
    img = IMAGE[0]
    fetches = [
        sl.image.flip_left_right(IMAGE),
        sl.image.flip_up_down(img),
        sl.image.transpose_image(IMAGE),
        sl.image.transpose_image(img),
    ]
    fetches += [sl.image.rot90(img, k) for k in range(-1, 4)]
    got = run(fetches, engine)
    np.testing.assert_array_equal(got[0], IMAGE[:, :, ::-1])
    np.testing.assert_array_equal(got[1], img[::-1])
    np.testing.assert_array_equal(got[2], IMAGE.transpose(0, 2, 1, 3))
    np.testing.assert_array_equal(got[3], img.transpose(1, 0, 2))
    for k, value in zip(range(-1, 4), got[4:]):
        np.testing.assert_array_equal(value, np.rot90(img, k, axes=(0, 1)))


def test_random_flips_flip_each_image_or_leave_it():
    batch = np.random.default_rng(2).normal(size=(64, 2, 3, 1)).astype(np.float32)
    flipped = sl.image.random_flip_left_right(batch, seed=1)
    upside = sl.image.random_flip_up_down(batch[0], seed=1)
    got, got_up = run([flipped, upside])
    same = [np.array_equal(g, b) for g, b in zip(got, batch)]
    mirrored = [np.array_equal(g, b[:, ::-1]) for g, b in zip(got, batch)]
    assert all(s or m for s, m in zip(same, mirrored))
    assert 10 < sum(mirrored) < 54  # one coin per image
    assert np.array_equal(got_up, batch[0]) or np.array_equal(got_up, batch[0][::-1])


def test_crop_pad_and_crop_or_pad_match_numpy():
    img = IMAGE[0]
    got = run(
        [
            sl.image.crop_to_bounding_box(IMAGE, 1, 2, 2, 3),
            sl.image.pad_to_bounding_box(img, 1, 2, 6, 8),
            sl.image.resize_image_with_crop_or_pad(img, 2, 8),
            sl.image.central_crop(IMAGE, 0.5),
        ]
    )
    np.testing.assert_array_equal(got[0], IMAGE[:, 1:3, 2:5])
    np.testing.assert_array_equal(got[1], np.pad(img, [[1, 1], [2, 1], [0, 0]]))
    # height 4 -> 2 crops 1 row at the top; width 5 -> 8 pads 1 column on the left, 2 right
    np.testing.assert_array_equal(got[2], np.pad(img[1:3], [[0, 0], [1, 2], [0, 0]]))
    # TF 1.15's offsets: int((4 - 2) / 2) = 1 rows, int((5 - 2.5) / 2) = 1 column
    np.testing.assert_array_equal(got[3], IMAGE[:, 1:3, 1:4])


def test_crop_and_pad_errors_name_the_problem():
    with pytest.raises(ValueError, match="width must be >= target \\+ offset"):
        sl.image.crop_to_bounding_box(IMAGE, 0, 3, 2, 3)
    with pytest.raises(ValueError, match="offset_height must be >= 0"):
        sl.image.crop_to_bounding_box(IMAGE, -1, 0, 2, 3)
    with pytest.raises(ValueError, match="height must be <= target - offset"):
        sl.image.pad_to_bounding_box(IMAGE, 2, 0, 5, 5)
    with pytest.raises(ValueError, match="central_fraction"):
        sl.image.central_crop(IMAGE, 0.0)
    with pytest.raises(ValueError, match="value.shape >= size"):
        sl.image.random_crop(IMAGE, [2, 5, 5, 3])


def test_random_crop_takes_a_window_of_the_value():
    value = np.arange(30, dtype=np.int32).reshape(5, 6)
    crop = sl.image.random_crop(value, [2, 3], seed=3)
    windows = {value[i : i + 2, j : j + 3].tobytes() for i in range(4) for j in range(4)}
    with sl.Session() as sess:
        seen = [sess.run(crop).tobytes() for _ in range(8)]
    assert all(s in windows for s in seen) and len(set(seen)) > 1


def test_crop_and_flip_gradients_match_finite_differences():
    image = np.random.default_rng(3).normal(size=(4, 5, 2))
    sl.testing.check_gradients(
        lambda x: sl.image.flip_left_right(sl.image.resize_image_with_crop_or_pad(x, 3, 6)), [image]
    )


# -- values ---------------------------------------------------------------------------------------
def test_convert_image_dtype_scales_as_tf1():
    u8 = np.array([0, 1, 127, 255], np.uint8)
    floats = np.array([0.0, 0.5, 1.0, 1.5, -0.2], np.float32)
    got = run(
        [
            sl.image.convert_image_dtype(u8, sl.float32),
            sl.image.convert_image_dtype(floats, sl.uint8, saturate=True),
            sl.image.convert_image_dtype(floats[:3], sl.uint8),
            sl.image.convert_image_dtype(u8, sl.int32),
            sl.image.convert_image_dtype(np.array([2**31 - 1, 2**24], np.int32), sl.uint8),
            sl.image.convert_image_dtype(u8, sl.float64),
        ]
    )
    np.testing.assert_allclose(got[0], u8 / np.float32(255), rtol=1e-6)
    np.testing.assert_array_equal(got[1], [0, 127, 255, 255, 0])  # trunc(x * 255.5), clamped
    np.testing.assert_array_equal(got[2], [0, 127, 255])
    np.testing.assert_array_equal(got[3], u8.astype(np.int64) * 2**23)  # (2**31) // 256
    np.testing.assert_array_equal(got[4], [255, 2])
    assert got[5].dtype == np.float64
    with pytest.raises(AttributeError):
        sl.image.convert_image_dtype(u8, sl.bool)


def test_per_image_standardization_matches_numpy():
    images = np.random.default_rng(4).uniform(0, 255, (2, 3, 4, 3)).astype(np.uint8)
    flat = np.full((3, 4, 1), 7.0, np.float32)  # zero variance: divided by 1/sqrt(N)
    got, got_flat = run(
        [sl.image.per_image_standardization(images), sl.image.per_image_standardization(flat)]
    )
    x = images.astype(np.float64)
    mean = x.mean(axis=(1, 2, 3), keepdims=True)
    scale = np.maximum(x.std(axis=(1, 2, 3), keepdims=True), 1 / np.sqrt(36))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, (x - mean) / scale, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got_flat, np.zeros_like(flat))


def test_standardization_gradient_matches_finite_differences():
    image = np.random.default_rng(5).normal(size=(3, 2, 2)).astype(np.float32)
    sl.testing.check_gradients(
        sl.image.per_image_standardization, [image], rtol=2e-2, atol=2e-3, delta=1e-2
    )


def test_brightness_contrast_and_grayscale():
    rng = np.random.default_rng(6)
    u8 = rng.integers(0, 256, (2, 3, 3)).astype(np.uint8)
    rgb = rng.uniform(0, 1, (2, 2, 2, 3)).astype(np.float32)
    got = run(
        [
            sl.image.adjust_brightness(u8, 0.2),
            sl.image.adjust_brightness(rgb, -0.1),
            sl.image.adjust_contrast(rgb, 1.5),
            sl.image.rgb_to_grayscale(rgb),
            sl.image.grayscale_to_rgb(rgb[..., :1]),
            sl.image.rgb_to_grayscale(u8),
        ]
    )
    as_float = u8 / np.float32(255) + np.float32(0.2)
    np.testing.assert_array_equal(got[0], np.clip(as_float * 255.5, 0, 255).astype(np.uint8))
    np.testing.assert_allclose(got[1], rgb - 0.1, rtol=1e-6, atol=1e-7)  # floats: no clipping
    mean = rgb.mean(axis=(1, 2), keepdims=True)
    np.testing.assert_allclose(got[2], (rgb - mean) * 1.5 + mean, rtol=1e-5, atol=1e-6)
    gray = rgb @ np.float32([0.2989, 0.5870, 0.1140])
    np.testing.assert_allclose(got[3], gray[..., None], rtol=1e-6)
    np.testing.assert_array_equal(got[4], np.repeat(rgb[..., :1], 3, axis=-1))
    gray_u8 = (u8 / np.float32(255)) @ np.float32([0.2989, 0.5870, 0.1140]) * np.float32(255.5)
    np.testing.assert_array_equal(got[5], gray_u8.astype(np.uint8)[..., None])
    with pytest.raises(ValueError, match="last dimension"):
        sl.image.grayscale_to_rgb(rgb)
