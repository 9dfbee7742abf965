"""`sl.summary` ops, as TF1's summary tests check them: fetching gives a serialized `Summary`;
tags follow name scopes, families and uniquified names; scalar values, histogram buckets by
TF1's algorithm, images scaled and PNG-encoded as TF1's kernel does, WAV audio, text as a
string tensor; merge and merge_all; summaries in cond branches and while loops; in both
engines, the compiled one staying compiled."""

import bisect
import sys

import numpy as np
import pytest

import sluice as sl
from sluice.framework.ops.host.summary_ops import default_bucket_limits
from tests.summary.readers import decode_png, decode_wav

summary_pb2 = pytest.importorskip("tensorboardX.proto.summary_pb2")

ENGINES = ["compiled", "interpreted"]


def session(engine, graph=None):
    return sl.Session(graph=graph, config=sl.SessionConfig(engine=engine))


HIST_VALUES = np.array([0.0, 1e-13, 1.0, 1.0, -2.5, 3e5, 7.25, -1e-14], np.float64)
rng = np.random.RandomState(0)
IMAGES = np.stack(
    [
        rng.uniform(0.0, 2.0, (2, 3, 3)),  # all >= 0: largest becomes 255
        rng.uniform(-1.5, 0.5, (2, 3, 3)),  # negatives: centred on 128
        rng.uniform(0.0, 1.0, (2, 3, 3)),  # beyond max_outputs
    ]
).astype(np.float32)
IMAGES[1, 0, 1, 2] = np.nan  # one bad pixel: red
CLIPS = rng.uniform(-1.2, 1.2, (3, 5, 2)).astype(np.float32)


@pytest.fixture(scope="module")
def model():
    g = sl.Graph()
    with g.as_default():
        images = sl.placeholder(sl.float32, [None, 2, 3, 3], name="images")
        values = sl.placeholder(sl.float64, [None], name="values")
        clips = sl.placeholder(sl.float32, [None, 5, 2], name="clips")
        summaries = {
            "loss": sl.summary.scalar("loss", sl.reduce_sum(values)),
            "loss_again": sl.summary.scalar("loss", sl.reduce_max(values)),
            "hist": sl.summary.histogram("weights", values),
            "images": sl.summary.image("pictures", images, max_outputs=2),
            "first": sl.summary.image("first", images, max_outputs=1),
            "sound": sl.summary.audio("sound", clips, 8000.0, max_outputs=2),
            "notes": sl.summary.text("notes", [["a", "b"], ["c", "**d**"]]),
        }
        with sl.name_scope("train"):
            summaries["lr"] = sl.summary.scalar("lr", 0.5, family="optim")
        merged = sl.summary.merge_all()
    feeds = {images: IMAGES, values: HIST_VALUES, clips: CLIPS}
    return g, feeds, summaries, merged


@pytest.fixture(scope="module", params=ENGINES)
def fetched(request, model):
    g, feeds, summaries, merged = model
    metadata = sl.RunMetadata()
    with session(request.param, g) as sess:
        sess.run(merged, feeds)
        out = sess.run({"each": summaries, "merged": merged}, feeds, run_metadata=metadata)
    return out, metadata, request.param


def parse(data):
    return summary_pb2.Summary.FromString(data)


def test_fetching_a_summary_gives_serialized_summary_bytes(fetched):
    out = fetched[0]
    assert isinstance(out["merged"], bytes)
    assert all(isinstance(v, bytes) for v in out["each"].values())
    assert parse(out["each"]["loss"]).value[0].WhichOneof("value") == "simple_value"


def test_each_engine_runs_summaries_in_its_own_way(fetched):
    """The compiled engine computes them in its jitted step (one program per fetch set)."""
    _, metadata, engine = fetched
    assert metadata.engine == engine
    if engine == "compiled":
        assert metadata.compiles == 1 and metadata.nodes_in_plan > 8


def test_tags_and_names_follow_scopes_families_and_uniquified_names(model, fetched):
    _, _, summaries, merged = model
    tags = {k: [v.tag for v in parse(s).value] for k, s in fetched[0]["each"].items()}
    assert tags["loss"] == ["loss"] and tags["loss_again"] == ["loss_1"]
    assert tags["lr"] == ["optim/train/optim/lr"]
    assert summaries["loss_again"].op.name == "loss_1"
    assert summaries["lr"].op.name == "train/optim/lr"
    assert merged.op.name == "Merge/MergeSummary"
    assert tags["images"] == ["pictures/image/0", "pictures/image/1"]
    assert tags["first"] == ["first/image"]
    assert tags["sound"] == ["sound/audio/0", "sound/audio/1"]
    assert tags["notes"] == ["notes"]


def test_scalar_values(fetched):
    each = fetched[0]["each"]
    assert parse(each["loss"]).value[0].simple_value == np.float32(HIST_VALUES.sum())
    assert parse(each["loss_again"]).value[0].simple_value == np.float32(3e5)
    assert parse(each["lr"]).value[0].simple_value == 0.5


def tf1_histogram(values):
    """TF1's Histogram::Add then EncodeToProto(preserve_zero_buckets=False), written plainly:
    (min, max, num, sum, sum_squares, bucket_limit, bucket)."""
    limits = list(default_bucket_limits())
    counts = [0.0] * len(limits)
    for v in values:
        counts[bisect.bisect_right(limits, v)] += 1
    out_limits, out_counts, i = [], [], 0
    while i < len(counts):
        end, count, i = limits[i], counts[i], i + 1
        while count == 0 and i < len(counts) and counts[i] == 0:
            end, i = limits[i], i + 1
        out_limits.append(end)
        out_counts.append(count)
    return (
        min(values),
        max(values),
        len(values),
        float(np.sum(values)),
        float(np.sum(np.square(values))),
        out_limits,
        out_counts,
    )


def test_histogram_matches_tf1_algorithm(fetched):
    histo = parse(fetched[0]["each"]["hist"]).value[0].histo
    low, high, num, total, squares, limits, counts = tf1_histogram(HIST_VALUES)
    assert (histo.min, histo.max, histo.num) == (low, high, num)
    np.testing.assert_allclose([histo.sum, histo.sum_squares], [total, squares], rtol=1e-6)
    assert list(histo.bucket_limit) == limits and list(histo.bucket) == counts


def test_histogram_buckets_are_tf1_defaults(fetched):
    limits = default_bucket_limits()
    dbl_max = np.finfo(np.float64).max
    # 774 limits from 1e-12 by factors of 1.1 below 1e20, mirrored, with 0 and +-DBL_MAX
    assert limits.size == 1551 and limits[0] == -dbl_max and limits[-1] == dbl_max
    assert limits[775] == 0.0 and limits[776] == 1e-12 and limits[774] == -1e-12
    np.testing.assert_allclose(limits[777] / limits[776], 1.1)
    assert limits[-2] < 1e20 <= limits[-2] * 1.1
    histo = parse(fetched[0]["each"]["hist"]).value[0].histo
    # a value counts in the bucket of the first limit above it: 0.0 and 1e-13 in the bucket
    # ending at 1e-12, -1e-14 in the one ending at 0
    counts = dict(zip(histo.bucket_limit, histo.bucket))
    assert counts[1e-12] == 2.0 and counts[0.0] == 1.0
    assert histo.bucket_limit[-1] == dbl_max and histo.bucket[-1] == 0.0


def tf1_image(image):
    """TF1's NormalizeFloatImage for a float32 image [h, w, c]."""
    finite = np.all(np.isfinite(image), axis=-1)
    low, high = image[finite].min(), image[finite].max()
    if low < 0:
        scale, offset = np.float32(127.0) / max(abs(low), abs(high)), np.float32(128.0)
    else:
        scale, offset = np.float32(255.0) / high, np.float32(0.0)
    out = (np.where(finite[..., None], image, 0) * scale + offset).astype(np.uint8)
    out[~finite] = [255, 0, 0][: image.shape[-1]]
    return out


def test_images_scaled_as_tf1_and_encoded_as_png(fetched):
    values = parse(fetched[0]["each"]["images"]).value
    assert len(values) == 2
    for value, expected in zip(values, IMAGES):
        image = value.image
        assert (image.height, image.width, image.colorspace) == (2, 3, 3)
        np.testing.assert_array_equal(decode_png(image.encoded_image_string), tf1_image(expected))
    pixels = decode_png(values[1].image.encoded_image_string)
    np.testing.assert_array_equal(pixels[0, 1], [255, 0, 0])
    assert pixels[~np.isnan(IMAGES[1]).any(-1)].max() <= 255


@pytest.mark.parametrize("engine", ENGINES)
def test_uint8_grey_and_rgba_images_are_written_as_they_are(engine):
    g = sl.Graph()
    pictures = np.arange(2 * 4 * 5 * 4, dtype=np.uint8).reshape(2, 4, 5, 4)
    with g.as_default():
        rgba = sl.summary.image("rgba", sl.constant(pictures), max_outputs=5)
        grey = sl.summary.image("grey", sl.constant(pictures[..., :1]))
    with session(engine, g) as sess:
        rgba_out, grey_out = sess.run([rgba, grey])
    assert [v.image.colorspace for v in parse(rgba_out).value] == [4, 4]
    for value, expected in zip(parse(rgba_out).value, pictures):
        np.testing.assert_array_equal(decode_png(value.image.encoded_image_string), expected)
    first = parse(grey_out).value[1].image
    np.testing.assert_array_equal(decode_png(first.encoded_image_string), pictures[1, ..., :1])


def test_audio_as_16_bit_wav(fetched):
    values = parse(fetched[0]["each"]["sound"]).value
    assert len(values) == 2
    for value, clip in zip(values, CLIPS):
        audio = value.audio
        assert (audio.sample_rate, audio.num_channels, audio.length_frames) == (8000.0, 2, 5)
        assert audio.content_type == "audio/wav"
        rate, samples = decode_wav(audio.encoded_audio_string)
        scaled = clip.astype(np.float32) * np.float32(32768)
        expected = np.clip(np.sign(scaled) * np.floor(np.abs(scaled) + 0.5), -32768, 32767)
        assert rate == 8000
        np.testing.assert_array_equal(samples, expected.astype(np.int16))


def test_text_is_a_string_tensor_for_the_text_plugin(fetched):
    value = parse(fetched[0]["each"]["notes"]).value[0]
    assert value.metadata.plugin_data.plugin_name == "text"
    assert [d.size for d in value.tensor.tensor_shape.dim] == [2, 2]
    assert list(value.tensor.string_val) == [b"a", b"b", b"c", b"**d**"]


def test_merge_all_holds_every_value_in_collection_order(fetched):
    out = fetched[0]
    merged = parse(out["merged"])
    keys = ["loss", "loss_again", "hist", "images", "first", "sound", "notes", "lr"]
    expected = [v for k in keys for v in parse(out["each"][k]).value]
    assert list(merged.value) == expected


@pytest.mark.parametrize("engine", ENGINES)
def test_nested_merge_and_duplicate_tags(engine):
    g = sl.Graph()
    with g.as_default():
        a = sl.summary.scalar("a", 1.0, collections=[])
        b = sl.summary.scalar("b", 2.0, collections=[])
        nested = sl.summary.merge([sl.summary.merge([b, a], name="inner"), a], name="outer")
        twice = sl.summary.merge([a, a])
    assert nested.op.name == "outer/outer"
    assert g.get_collection(sl.GraphKeys.SUMMARIES) == []
    with session(engine, g) as sess:
        with pytest.raises(sl.errors.InvalidArgumentError, match="Duplicate tag a found"):
            sess.run(nested)
        with pytest.raises(sl.errors.InvalidArgumentError, match="Duplicate tag a found"):
            sess.run(twice)
        inner = parse(sess.run(nested.op.inputs[0]))
    assert [(v.tag, v.simple_value) for v in inner.value] == [("b", 2.0), ("a", 1.0)]


def test_collections_and_merge_all_scope():
    g = sl.Graph()
    with g.as_default():
        assert sl.summary.merge_all() is None
        kept = sl.summary.scalar("kept", 1.0)
        sl.summary.scalar("nowhere", 1.0, collections=[])
        mine = sl.summary.scalar("mine", 1.0, collections=["mine", "also"])
        with sl.name_scope("eval"):
            evaluated = sl.summary.scalar("acc", 1.0)
        assert g.get_collection(sl.GraphKeys.SUMMARIES) == [kept, evaluated]
        assert g.get_collection("mine") == [mine] and g.get_collection("also") == [mine]
        assert sl.summary.merge_all("mine").op.inputs == (mine,)
        assert sl.summary.merge_all(scope="eval").op.inputs == (evaluated,)
        odd = sl.summary.scalar("bad name (%)", 1.0, family="/fam ily")
    assert odd.op.name == "fam_ily/bad_name____"


def test_bad_arguments_fail_when_the_graph_is_built():
    with sl.Graph().as_default():
        with pytest.raises(ValueError, match=r"tags and values not the same shape: \[\] != "):
            sl.summary.scalar("s", sl.zeros([2]))
        with pytest.raises(TypeError, match="real numeric"):
            sl.summary.histogram("h", sl.constant([True]))
        with pytest.raises(ValueError, match="rank 4"):
            sl.summary.image("i", sl.zeros([2, 3, 3]))
        with pytest.raises(ValueError, match="last dim 1, 3, or 4"):
            sl.summary.image("i", sl.zeros([1, 2, 3, 2]))
        with pytest.raises(TypeError, match="uint8 or floating"):
            sl.summary.image("i", sl.zeros([1, 2, 3, 3], sl.int32))
        with pytest.raises(ValueError, match="max_outputs must be >= 1"):
            sl.summary.image("i", sl.zeros([1, 2, 3, 3]), max_outputs=0)
        with pytest.raises(TypeError, match="float32"):
            sl.summary.audio("a", sl.zeros([1, 4], sl.float64), 100)
        with pytest.raises(TypeError, match="takes the text as Python strings"):
            sl.summary.text("t", sl.zeros([2]))
        with pytest.raises(TypeError, match="expected strings"):
            sl.summary.text("t", ["a", 3])
        with pytest.raises(TypeError, match="summary tensors"):
            sl.summary.merge([sl.zeros([2])])
        with pytest.raises(ValueError, match="at least one summary"):
            sl.summary.merge([])


@pytest.mark.parametrize("engine", ENGINES)
def test_bad_values_fail_when_run(engine):
    g = sl.Graph()
    with g.as_default():
        x = sl.placeholder(sl.float32, None)
        s = sl.summary.scalar("s", x)
        h = sl.summary.histogram("weights", x)
    with session(engine, g) as sess:
        with pytest.raises(sl.errors.InvalidArgumentError, match="not the same shape"):
            sess.run(s, {x: [1.0, 2.0]})
        with pytest.raises(
            sl.errors.InvalidArgumentError, match="Nan in summary histogram for: weights"
        ):
            sess.run(h, {x: [1.0, np.nan]})
        assert parse(sess.run(h, {x: [1.0, 2.0]})).value[0].histo.num == 2
        empty = parse(sess.run(h, {x: np.zeros([0], np.float32)})).value[0].histo
    dbl_max = np.finfo(np.float64).max
    assert (empty.num, empty.min, empty.max, empty.sum) == (0, dbl_max, -dbl_max, 0)
    assert list(empty.bucket_limit) == [dbl_max] and list(empty.bucket) == [0.0]


@pytest.mark.parametrize("engine", ENGINES)
def test_summary_in_a_cond_branch_has_a_value_only_when_taken(engine):
    g = sl.Graph()
    with g.as_default():
        p = sl.placeholder(sl.bool, [])
        x = sl.placeholder(sl.float32, [])

        def taken():
            sl.summary.scalar("in_branch", x * 2.0)
            return x + 1.0

        y = sl.cond(p, taken, lambda: x)
        merged = sl.summary.merge_all()
    with session(engine, g) as sess:
        out, y_value = sess.run([merged, y], {p: True, x: 3.0})
        assert y_value == 4.0
        assert [(v.tag, v.simple_value) for v in parse(out).value] == [("cond/in_branch", 6.0)]
        with pytest.raises(sl.errors.InvalidArgumentError, match="dead|not taken"):
            sess.run(merged, {p: False, x: 3.0})


def test_summary_in_a_while_loop_cannot_be_used_outside():
    with sl.Graph().as_default():

        def body(i):
            sl.summary.scalar("in_loop", i)
            return i + 1

        sl.while_loop(lambda i: i < 3, body, [sl.constant(0)])
        with pytest.raises(ValueError, match="while loop"):
            sl.summary.merge_all()


def test_graphs_build_without_tensorboardx_and_fetching_says_what_to_install(monkeypatch):
    for module in (
        "tensorboardX",
        "tensorboardX.proto",
        "tensorboardX.proto.summary_pb2",
        "tensorboardX.record_writer",
    ):
        monkeypatch.setitem(sys.modules, module, None)
    g = sl.Graph()
    with g.as_default():
        s = sl.summary.scalar("s", 1.0)
    with session("interpreted", g) as sess:
        with pytest.raises(ImportError, match=r"pip install sluice\[tensorboard\]"):
            sess.run(s)
    with pytest.raises(ImportError, match=r"pip install sluice\[tensorboard\]"):
        sl.summary.Summary


def test_summaries_and_their_collection_survive_a_meta_graph_round_trip():
    g = sl.Graph()
    with g.as_default():
        x = sl.placeholder(sl.float32, [None], name="x")
        sl.summary.scalar("average", sl.reduce_mean(x))
        sl.summary.histogram("values", x)
        sl.summary.text("note", [["a"], ["b"]])
        meta = sl.train.export_meta_graph()
    rebuilt = sl.Graph()
    with rebuilt.as_default():
        sl.train.import_meta_graph(meta)
        merged = sl.summary.merge_all()
    outputs = []
    for graph, fetch in ((g, g.get_collection(sl.GraphKeys.SUMMARIES)), (rebuilt, merged)):
        with session("interpreted", graph) as sess:
            out = sess.run(fetch, {"x:0": [1.0, 3.0]})
        values = out if isinstance(out, list) else [out]
        outputs.append([v for s in values for v in parse(s).value])
    assert outputs[0] == outputs[1]
    assert [v.tag for v in outputs[1]] == ["average", "values", "note"]
