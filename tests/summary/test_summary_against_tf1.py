"""`sl.summary` values checked against references written from TF 1.15's kernels
(`histogram.cc`, `summary_image_op.cc`, `summary_audio_op.cc`, `wav_io.cc`), independently of
sluice's code: histogram statistics and compacted buckets, image scaling for every float dtype
and channel count, WAV bytes; TF1's run-time errors (Inf vs NaN in a histogram, a sample rate
that is not > 0); a summary passed on by a cond, an identity or a while loop still fetched as a
serialized `Summary`; both engines giving the same bytes, the compiled one staying compiled."""

import bisect
import struct

import numpy as np
import pytest

import sluice as sl
from tests.summary.readers import decode_png

summary_pb2 = pytest.importorskip("tensorboardX.proto.summary_pb2")

ENGINES = ["compiled", "interpreted"]
DBL_MAX = np.finfo(np.float64).max


def session(engine, graph):
    return sl.Session(graph=graph, config=sl.SessionConfig(engine=engine))


def parse(data):
    return summary_pb2.Summary.FromString(data)


# -- references, from TF1's C++ ------------------------------------------------------------------
def tf1_bucket_limits():
    """`InitDefaultBucketsInner`: 1e-12 growing by 10% below 1e20, mirrored, 0 in the middle,
    closed by -DBL_MAX and DBL_MAX."""
    positive, v = [], 1.0e-12
    while v < 1.0e20:
        positive.append(v)
        v *= 1.1
    return [-DBL_MAX] + [-x for x in reversed(positive)] + [0.0] + positive + [DBL_MAX]


LIMITS = tf1_bucket_limits()


def tf1_histogram(values):
    """`Histogram::Add` (upper_bound: a value on a limit counts in the next bucket) for each
    value, then `EncodeToProto(preserve_zero_buckets=false)`."""
    counts = [0.0] * len(LIMITS)
    low, high, total, squares = LIMITS[-1], -DBL_MAX, 0.0, 0.0
    for v in map(float, np.ravel(values)):
        counts[bisect.bisect_right(LIMITS, v)] += 1.0
        low, high, total, squares = min(low, v), max(high, v), total + v, squares + v * v
    limits, buckets, i = [], [], 0
    while i < len(counts):
        end, count = LIMITS[i], counts[i]
        i += 1
        if count <= 0.0:
            while i < len(counts) and counts[i] <= 0.0:
                end, count = LIMITS[i], counts[i]
                i += 1
        limits.append(end)
        buckets.append(count)
    return low, high, float(np.size(values)), total, squares, limits, buckets


def tf1_image(image):
    """`NormalizeFloatImage` of one image [h, w, c]: range of the finite pixels in float32;
    scale and offset as T; `value * scale + offset` in T, truncated to uint8; a pixel with a
    non-finite channel is the bad colour (255, 0, 0, 255)[:c]."""
    t = image.dtype.type
    pixels = image.reshape(-1, image.shape[-1])
    finite = np.all(np.isfinite(pixels), axis=1)
    kept = pixels[finite].astype(np.float32)
    low = kept.min() if kept.size else np.float32(np.inf)
    high = kept.max() if kept.size else np.float32(-np.inf)
    if low < 0:
        largest = max(abs(low), abs(high))
        scale = t(0.0 if largest < np.float32(1e-6) else np.float32(127.0) / largest)
        offset = t(128.0)
    else:
        scale, offset = t(0.0 if high < np.float32(1e-6) else np.float32(255.0) / high), t(0.0)
    out = np.empty(pixels.shape, np.uint8)
    for i, (pixel, ok) in enumerate(zip(pixels, finite)):
        if not ok:
            out[i] = [255, 0, 0, 255][: pixels.shape[1]]
            continue
        if t is np.float16:  # Eigen::half rounds each product and sum to half
            scaled = [
                np.float16(
                    np.float32(np.float16(np.float32(v) * np.float32(scale))) + np.float32(offset)
                )
                for v in pixel
            ]
        else:
            scaled = [t(t(v * scale) + offset) for v in pixel]
        out[i] = [int(float(s)) for s in scaled]
    return out.reshape(image.shape)


def tf1_wav(clip, sample_rate):
    """`EncodeAudioAsS16LEWav`: the 44-byte RIFF header, then roundf(x * 32768) clamped to
    int16 (`FloatToInt16Sample`), frames interleaved."""
    frames, channels = clip.shape
    samples = [
        min(max(np.sign(v) * np.floor(abs(v) + 0.5), -32768), 32767)
        for v in (clip.astype(np.float32) * np.float32(32768)).astype(np.float64).ravel()
    ]
    data = np.asarray(samples).astype("<i2").tobytes()
    return (
        b"RIFF"
        + struct.pack("<I", 36 + len(data))
        + b"WAVEfmt "
        + struct.pack(
            "<IHHIIHH", 16, 1, channels, sample_rate, sample_rate * channels * 2, channels * 2, 16
        )
        + b"data"
        + struct.pack("<I", len(data))
        + data
    )


# -- scalars -------------------------------------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_scalar_of_every_real_dtype_is_its_float32_value(engine):
    """ScalarSummary's kernel writes `float(value)`: float32 rounding, inf beyond its range."""
    values = {
        "half": np.float16(1.5),
        "double": np.float64(1e40),
        "int": np.int32(-7),
        "long": np.int64(2**40 + 1),
        "byte": np.uint8(200),
    }
    g = sl.Graph()
    with g.as_default():
        inputs = {k: sl.placeholder(v.dtype, []) for k, v in values.items()}
        ops = {k: sl.summary.scalar(k, t) for k, t in inputs.items()}
    with session(engine, g) as sess:
        out = sess.run(ops, {inputs[k]: v for k, v in values.items()})
    for k, v in values.items():
        (value,) = parse(out[k]).value
        assert value.tag == k
        with np.errstate(over="ignore"):
            assert value.simple_value == np.float32(v)


# -- histograms ----------------------------------------------------------------------------------
rng = np.random.RandomState(7)
HISTOGRAM_CASES = {
    "normal": rng.randn(200).astype(np.float32),
    "float64": np.concatenate(
        [  # wide values, values on limits, subnormal, huge
            rng.randn(20) * 1e5,
            LIMITS[1:-1:41],
            [0.0, -0.0, 1e-13, -1e-13, 5e-324, 1e25, -1e30, 1e300, -1.7e308],
        ]
    ),
    "ints": rng.randint(-100, 100, 60).astype(np.int32),
    "all_equal": np.full([4, 3], 3.25, np.float32),
}


def run_both_engines(cases, build):
    """{engine: {case: summary bytes}} of `build(name, placeholder)` for every case, fed (a
    constant would be folded op by op, much slower to compile)."""
    g = sl.Graph()
    with g.as_default():
        inputs = {k: sl.placeholder(v.dtype, v.shape) for k, v in cases.items()}
        ops = {k: build(k, inputs[k]) for k in cases}
    feed = {inputs[k]: v for k, v in cases.items()}
    out = {}
    for engine in ENGINES:
        with session(engine, g) as sess:
            out[engine] = sess.run(ops, feed)
    return out


@pytest.fixture(scope="module")
def histograms():
    return run_both_engines(HISTOGRAM_CASES, sl.summary.histogram)


@pytest.mark.parametrize("case", sorted(HISTOGRAM_CASES))
def test_histogram_equals_tf1_reference(histograms, case):
    assert histograms["compiled"][case] == histograms["interpreted"][case]
    histo = parse(histograms["compiled"][case]).value[0].histo
    low, high, num, total, squares, limits, buckets = tf1_histogram(HISTOGRAM_CASES[case])
    assert (histo.min, histo.max, histo.num) == (low, high, num)
    np.testing.assert_allclose([histo.sum, histo.sum_squares], [total, squares], rtol=1e-12)
    assert list(histo.bucket_limit) == limits
    assert list(histo.bucket) == buckets


@pytest.mark.parametrize("engine", ENGINES)
def test_histogram_names_the_first_non_finite_value_as_tf1(engine):
    g = sl.Graph()
    with g.as_default():
        x = sl.placeholder(sl.float64, [None])
        h = sl.summary.histogram("weights", x)
    with session(engine, g) as sess:
        for values, kind in [
            ([1.0, np.inf, np.nan], "Infinity"),
            ([np.nan, -np.inf], "Nan"),
            ([-np.inf], "Infinity"),
        ]:
            with pytest.raises(
                sl.errors.InvalidArgumentError, match=f"^{kind} in summary histogram for: weights"
            ):
                sess.run(h, {x: values})


# -- images --------------------------------------------------------------------------------------
def _image_cases():
    cases = {}
    for dtype, channels in ((np.float16, 3), (np.float32, 1), (np.float64, 4)):
        images = rng.uniform(-2.2, 2.2, (5, 2, 3, channels)).astype(dtype)
        images[0] = np.abs(images[0]) * 3  # no negative value: largest becomes 255
        images[1, 0, 0, 0] = -2.2058923  # x * (127 / |x|) rounds to -127, is just below:
        images[1, 1, 2, 0] = np.nan  # TF1's 1, not 0 (no FMA); the bad colour
        images[2, 0, 1, -1] = np.inf
        images[3] = -5e-7 if channels == 3 else 0  # below the zero threshold: scale 0
        images[4] = np.nan
        cases[f"{np.dtype(dtype).name}_{channels}"] = images
    return cases


IMAGE_CASES = _image_cases()


@pytest.fixture(scope="module")
def images():
    return run_both_engines(IMAGE_CASES, lambda k, x: sl.summary.image(k, x, max_outputs=5))


@pytest.mark.parametrize("case", sorted(IMAGE_CASES))
def test_image_pixels_equal_tf1_reference(images, case):
    assert images["compiled"][case] == images["interpreted"][case]
    batch = IMAGE_CASES[case]
    values = parse(images["compiled"][case]).value
    assert [v.tag for v in values] == [f"{case}/image/{i}" for i in range(len(batch))]
    for value, image in zip(values, batch):
        assert (value.image.height, value.image.width, value.image.colorspace) == image.shape
        np.testing.assert_array_equal(
            decode_png(value.image.encoded_image_string), tf1_image(image)
        )


# -- audio ---------------------------------------------------------------------------------------
CLIPS = rng.uniform(-1.3, 1.3, (3, 6, 2)).astype(np.float32)
CLIPS[0, :4, 0] = [0.5 / 32768, -0.5 / 32768, 1.5 / 32768, -1.0]  # halves round away from 0


@pytest.mark.parametrize("engine", ENGINES)
def test_audio_wav_bytes_and_sample_rate_as_tf1(engine):
    g = sl.Graph()
    with g.as_default():
        rate = sl.placeholder(sl.float32, [], name="rate")
        clips = sl.summary.audio("clips", CLIPS, 8000.5, max_outputs=2)
        mono = sl.summary.audio("mono", CLIPS[:, :, 0], rate, max_outputs=1)
    with session(engine, g) as sess:
        out_clips, out_mono = sess.run([clips, mono], {rate: 0.4})
        for bad in (0.0, -8000.0, np.nan):
            with pytest.raises(sl.errors.InvalidArgumentError, match="sample_rate must be > 0"):
                sess.run(mono, {rate: bad})
    values = parse(out_clips).value
    assert [v.tag for v in values] == ["clips/audio/0", "clips/audio/1"]
    for value, clip in zip(values, CLIPS):
        audio = value.audio
        assert (audio.sample_rate, audio.num_channels, audio.length_frames) == (8000.5, 2, 6)
        assert audio.encoded_audio_string == tf1_wav(clip, 8000)  # lrintf: ties to even
    (value,) = parse(out_mono).value
    assert value.tag == "mono/audio" and value.audio.sample_rate == np.float32(0.4)
    assert value.audio.encoded_audio_string == tf1_wav(CLIPS[0, :, :1], 1)  # rounds to 0: 1


def test_audio_sample_rate_errors_when_built():
    with sl.Graph().as_default():
        with pytest.raises(ValueError, match="sl.summary.audio: sample_rate must be > 0"):
            sl.summary.audio("a", np.zeros([1, 3], np.float32), 0)
        with pytest.raises(TypeError, match="sample_rate must be a float32 scalar, got the int32"):
            sl.summary.audio("a", np.zeros([1, 3], np.float32), sl.constant(8000))


# -- names, merges, pass-through -----------------------------------------------------------------
def test_merge_cleans_its_name_and_a_summary_needs_one():
    with sl.Graph().as_default():
        a = sl.summary.scalar("a", 1.0)
        assert sl.summary.merge([a], name="my merge").op.name == "my_merge/my_merge"
        assert sl.summary.scalar("has space", 1.0).op.name == "has_space"
        with pytest.raises(ValueError, match="ScalarSummary: a summary needs a name"):
            sl.summary.scalar(None, 1.0)
        assert sl.summary.histogram(None, [1.0]).op.name == "HistogramSummary"  # TF1's default


@pytest.mark.parametrize("engine", ENGINES)
def test_merging_a_tensor_that_is_no_summary_fails_when_run_as_tf1(engine):
    g = sl.Graph()
    with g.as_default():
        merged = sl.summary.merge([sl.constant(np.zeros([3], np.uint8))])
    with session(engine, g) as sess:
        with pytest.raises(
            sl.errors.InvalidArgumentError, match="Could not parse one of the summary inputs"
        ):
            sess.run(merged)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_summary_passed_on_by_cond_identity_or_loop_is_fetched_as_summary_bytes(engine):
    g = sl.Graph()
    with g.as_default():
        p = sl.placeholder(sl.bool, [])
        x = sl.placeholder(sl.float32, [])
        train, evaluate = sl.summary.scalar("tr", x), sl.summary.scalar("ev", x * 2.0)
        chosen = sl.cond(p, lambda: train, lambda: evaluate)
        inner = sl.cond(p, lambda: sl.summary.scalar("t", x), lambda: sl.summary.scalar("f", -x))
        same = sl.identity(train)
        looped = sl.while_loop(lambda i, s: i < 2, lambda i, s: (i + 1, s), [0, train])[1]
        merged = sl.summary.merge([chosen, inner])
    with session(engine, g) as sess:
        for pred, expected in (
            (True, [("tr", 3.0), ("cond_1/t", 3.0)]),
            (False, [("ev", 6.0), ("cond_1/f", -3.0)]),
        ):
            out = sess.run(
                {
                    "chosen": chosen,
                    "inner": inner,
                    "same": same,
                    "looped": looped,
                    "merged": merged,
                },
                {p: pred, x: 3.0},
            )
            assert all(isinstance(v, bytes) for v in out.values())
            tags = {k: [(v.tag, v.simple_value) for v in parse(b).value] for k, b in out.items()}
            assert tags["chosen"] == expected[:1] and tags["inner"] == expected[1:]
            assert tags["same"] == tags["looped"] == [("tr", 3.0)]
            assert tags["merged"] == expected


@pytest.mark.parametrize("engine", ["interpreted", "auto"])
def test_a_cond_choosing_summaries_of_different_sizes(engine):
    """The branches' payloads differ in size, which one jitted step cannot select between: the
    default engine runs such a graph interpreted (it used to fail in jnp.where)."""
    g = sl.Graph()
    with g.as_default():
        p = sl.placeholder(sl.bool, [])
        x = sl.placeholder(sl.float32, [])
        chosen = sl.cond(
            p,
            lambda: sl.summary.scalar("loss", x),
            lambda: sl.summary.histogram("weights", sl.stack([x, x])),
        )
    with session(engine, g) as sess:
        assert parse(sess.run(chosen, {p: True, x: 1.0})).value[0].tag == "cond/loss"
        assert parse(sess.run(chosen, {p: False, x: 1.0})).value[0].histo.num == 2


# -- both engines --------------------------------------------------------------------------------
def test_both_engines_write_the_same_bytes_and_compiled_stays_compiled():
    g = sl.Graph()
    with g.as_default():
        x = sl.placeholder(sl.float32, [2, 3], name="x")
        w = sl.Variable(np.linspace(-1.0, 1.0, 6, dtype=np.float32).reshape(3, 2), name="w")
        loss = sl.reduce_mean(sl.square(sl.matmul(x, w)))
        train = sl.train.GradientDescentOptimizer(0.1).minimize(loss)
        sl.summary.scalar("loss", loss)
        sl.summary.histogram("w", w)
        sl.summary.image("w_image", sl.reshape(w, [1, 3, 2, 1]))
        sl.summary.audio("x_audio", x, 100.0)
        sl.summary.text("note", "*step*")
        merged = sl.summary.merge_all()
        init = sl.global_variables_initializer()
    feed = {x: np.arange(6, dtype=np.float32).reshape(2, 3) / 6.0}
    runs = {}
    for engine in ("auto", "interpreted"):
        metadata = sl.RunMetadata()
        with sl.Session(graph=g, config=sl.SessionConfig(engine=engine)) as sess:
            sess.run(init)
            runs[engine] = [
                sess.run([merged, train], feed, run_metadata=metadata)[0] for _ in range(2)
            ]
        assert metadata.engine == ("compiled" if engine == "auto" else "interpreted")
    assert runs["auto"] == runs["interpreted"]
    first, second = (parse(s).value[0].simple_value for s in runs["auto"])
    assert second < first  # each run's own value, after the step before it
