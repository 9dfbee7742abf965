"""Attention, AdditiveAttention and MultiHeadAttention: values against NumPy versions of Keras 3's
formulas (scores, masks, causal masks, scaling, heads), gradients against central differences,
Keras's weight names and shapes, config round trips, and a small transformer block trained by
fit."""

import json

import numpy as np
import pytest

import sluice as sl
from sluice import layers as L
from sluice._keras.layers.attention.additive_attention import AdditiveAttention
from sluice._keras.layers.attention.attention import Attention
from sluice._keras.layers.attention.multi_head_attention import MultiHeadAttention
from sluice._keras.layers.tracking import get_mask
from sluice.testing.gradient_checker import central_difference

# layers with several inputs, which run_layer_test does not take: tested below
MULTI_INPUT_LAYERS = [Attention, AdditiveAttention, MultiHeadAttention]

RNG = np.random.default_rng(0)


# -- NumPy references ------------------------------------------------------------------------
def _np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _np_causal(t, s):
    return np.arange(t)[:, None] >= np.arange(s)[None, :]


def _np_attention(q, v, k=None, q_mask=None, v_mask=None, causal=False, mode="dot", scale=None,
                  concat_weight=1.0):  # fmt: skip
    k = v if k is None else k
    if mode == "dot":
        scores = q @ k.transpose(0, 2, 1) * (1.0 if scale is None else scale)
    else:
        pairs = q[:, :, None, :] + k[:, None, :, :]
        if mode == "concat":
            pairs = pairs * (1.0 if scale is None else scale)
            scores = concat_weight * np.tanh(pairs).sum(-1)
        else:  # additive
            scores = (np.tanh(pairs) * (1.0 if scale is None else scale)).sum(-1)
    allowed = np.ones(scores.shape, bool)
    if v_mask is not None:
        allowed &= v_mask[:, None, :]
    if causal:
        allowed &= _np_causal(q.shape[1], v.shape[1])[None]
    weights = _np_softmax(scores - 1e9 * ~allowed)
    out = weights @ v
    if q_mask is not None:
        out = out * q_mask[:, :, None]
    return out, weights


def _np_mha(weights, q, v, k=None, mask=None, key_dim=None):
    qk, qb, kk, kb, vk, vb, ok, ob = weights
    k = v if k is None else k
    query = np.einsum("btd,dnh->btnh", q, qk) + qb
    key = np.einsum("bsd,dnh->bsnh", k, kk) + kb
    value = np.einsum("bsd,dnh->bsnh", v, vk) + vb
    scores = np.einsum("btnh,bsnh->bnts", query, key) / np.sqrt(key_dim)
    if mask is not None:
        scores = scores - 1e9 * (1.0 - mask[:, None])
    probs = _np_softmax(scores)
    if mask is not None:
        probs = probs * mask[:, None]
    heads = np.einsum("bnts,bsnh->btnh", probs, value)
    return np.einsum("btnh,nh...->bt...", heads, ok) + ob, probs


def _run(build, arrays, weights=None, randomize=False):
    """`build(*constants) -> (outputs, layers)` in a new graph, run once with the layers'
    weights set to `weights` ({layer: values}), or random values with `randomize`: the outputs
    and the values of each layer's weights."""
    with sl.Graph().as_default():
        tensors = [sl.constant(a) for a in arrays]
        outputs, layers = build(*tensors)
        with sl.Session(config=sl.SessionConfig(engine="interpreted")) as sess:
            sess.run(sl.global_variables_initializer())
            for layer in layers:
                values = (weights or {}).get(layer)
                if values is None and randomize:
                    values = [RNG.normal(scale=0.5, size=w.shape.as_list()) for w in layer.weights]
                for variable, value in zip(layer.weights, values or []):
                    variable.load(np.asarray(value, np.float32), sess)
            # one run (small graphs: interpreted, which compiles nothing)
            return sess.run([outputs, [layer.weights for layer in layers]])


# -- Attention and AdditiveAttention ----------------------------------------------------------
Q = RNG.normal(size=(2, 3, 4)).astype(np.float32)
V = RNG.normal(size=(2, 5, 4)).astype(np.float32)
K = RNG.normal(size=(2, 5, 4)).astype(np.float32)
Q_MASK = np.array([[True, True, False], [True, False, True]])
V_MASK = np.array([[True, True, True, False, False], [True, False, True, True, True]])

ATTENTION_CASES = {
    # id: (layer kwargs, use key, masks, causal, reference kwargs)
    "dot_key_masks": ({}, True, True, False, {}),
    "dot_causal_masks": ({}, False, True, True, {}),
    "scaled": ({"use_scale": True}, True, False, False, {"scale": 1.0}),
    "concat": ({"score_mode": "concat"}, True, True, False, {"mode": "concat"}),
    "concat_scaled": ({"score_mode": "concat", "use_scale": True}, False, False, True,
                      {"mode": "concat", "scale": 1.0}),
}  # fmt: skip


def test_attention_values_against_numpy():
    layers = {name: Attention(**case[0]) for name, case in ATTENTION_CASES.items()}
    dropping = Attention(dropout=0.5, seed=3)

    def build(q, v, k, q_mask, v_mask):
        outputs = []
        for name, (_, use_key, masked, causal, _) in ATTENTION_CASES.items():
            inputs = [q, v, k] if use_key else [q, v]
            mask = [q_mask, v_mask] if masked else None
            outputs.append(layers[name](inputs, mask=mask, use_causal_mask=causal,
                                        return_attention_scores=True))  # fmt: skip
        outputs.append([dropping([q, v], training=t) for t in (True, False)])
        return outputs, []

    results, _ = _run(build, [Q, V, K, Q_MASK, V_MASK])
    trained, inferred = results.pop()
    np.testing.assert_allclose(inferred, _np_attention(Q, V)[0], rtol=1e-5)
    assert not np.allclose(trained, inferred)  # dropout only in training
    for (name, (_, use_key, masked, causal, ref)), (out, scores) in zip(
        ATTENTION_CASES.items(), results
    ):
        expected_out, expected_scores = _np_attention(
            Q, V, K if use_key else None, Q_MASK if masked else None, V_MASK if masked else None,
            causal, **ref,
        )  # fmt: skip
        np.testing.assert_allclose(out, expected_out, rtol=1e-5, atol=1e-6, err_msg=name)
        np.testing.assert_allclose(scores, expected_scores, rtol=1e-5, atol=1e-6, err_msg=name)


def test_attention_weights_and_their_effect():
    scaled, concat = Attention(use_scale=True), Attention(score_mode="concat", use_scale=True)

    def build(q, v):
        return [scaled([q, v]), concat([q, v])], [scaled, concat]

    (out_scaled, out_concat), (w_scaled, w_concat) = _run(
        build, [Q, V], weights={scaled: [np.float32(0.5)], concat: [0.3, 2.0]}
    )
    assert [w.name for w in scaled.weights] == ["attention/scale:0"]
    assert [w.name.split("/")[-1] for w in concat.weights] == ["scale:0", "concat_score_weight:0"]
    np.testing.assert_allclose(out_scaled, _np_attention(Q, V, scale=0.5)[0], rtol=1e-5)
    expected = _np_attention(Q, V, mode="concat", scale=0.3, concat_weight=2.0)[0]
    np.testing.assert_allclose(out_concat, expected, rtol=1e-5, atol=1e-6)


def test_additive_attention_values_and_weight():
    layer, plain = AdditiveAttention(), AdditiveAttention(use_scale=False)
    scale = RNG.normal(size=(4,)).astype(np.float32)

    def build(q, v, q_mask, v_mask):
        return [layer([q, v], mask=[q_mask, v_mask]), plain([q, v])], [layer]

    (masked, unscaled), _ = _run(build, [Q, V, Q_MASK, V_MASK], weights={layer: [scale]})
    assert [w.shape.as_list() for w in layer.weights] == [[4]] and plain.weights == []
    expected = _np_attention(Q, V, q_mask=Q_MASK, v_mask=V_MASK, mode="additive", scale=scale)
    np.testing.assert_allclose(masked, expected[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(unscaled, _np_attention(Q, V, mode="additive")[0], rtol=1e-5)


def test_the_inputs_keras_masks_apply_and_the_querys_is_kept():
    tokens = np.array([[1, 2, 0, 0], [3, 0, 4, 5]])
    attention = Attention()
    mha = MultiHeadAttention(num_heads=2, key_dim=2, kernel_initializer="zeros")
    embedding = L.Embedding(6, 4, mask_zero=True, embeddings_initializer="zeros")

    def build(tokens):
        embedded = embedding(tokens)
        outputs = [attention([embedded, embedded]), mha(embedded, embedded)]
        assert all(get_mask(t) is not None for t in outputs)
        return outputs, [embedding, mha]

    (by_attention, by_mha), ((table,), weights) = _run(build, [tokens], randomize=True)
    e, m = table[tokens], tokens != 0
    np.testing.assert_allclose(by_attention, _np_attention(e, e, q_mask=m, v_mask=m)[0],
                               rtol=1e-5, atol=1e-6)  # fmt: skip
    mask = (m[:, :, None] & m[:, None, :]).astype(np.float32)
    np.testing.assert_allclose(by_mha, _np_mha(weights, e, e, mask=mask, key_dim=2)[0],
                               rtol=1e-4, atol=1e-5)  # fmt: skip


@pytest.mark.parametrize("make, inputs, match", [
    (lambda: Attention(), [Q], "list \\[query, value\\]"),
    (lambda: Attention(), [Q, V[:, :, :3]], "same last dim"),
    (lambda: Attention(), [Q, V, K[:, :4]], "same steps"),
    (lambda: Attention(), [Q[0], V[0]], "rank 3"),
])  # fmt: skip
def test_attention_shape_errors(make, inputs, match):
    with sl.Graph().as_default(), pytest.raises(ValueError, match=match):
        make()([sl.constant(a) for a in inputs])


def test_attention_argument_errors():
    with pytest.raises(ValueError, match="score_mode"):
        Attention(score_mode="general")
    with pytest.raises(ValueError, match="dropout"):
        Attention(dropout=1.0)


def test_attention_configs_round_trip():
    for layer in (Attention(use_scale=True, score_mode="concat", dropout=0.1, seed=2),
                  AdditiveAttention(use_scale=False, dropout=0.2)):  # fmt: skip
        config = json.loads(json.dumps(layer.get_config()))
        assert type(layer).from_config(config).get_config() == layer.get_config()
    assert "score_mode" not in AdditiveAttention().get_config()


# -- MultiHeadAttention ----------------------------------------------------------------------
def test_mha_weight_names_and_shapes_are_keras_3s():
    with sl.Graph().as_default():
        q, v = sl.Input((3, 8)), sl.Input((5, 6))
        layer = MultiHeadAttention(num_heads=2, key_dim=4, value_dim=3, output_shape=(2, 5))
        out = layer(q, v, key=sl.Input((5, 7)))
        no_bias = MultiHeadAttention(num_heads=2, key_dim=4, use_bias=False, name="plain")
        no_bias(q, q)
    assert out.shape.as_list() == [None, 3, 2, 5]
    assert [(w.name, w.shape.as_list()) for w in layer.weights] == [
        ("multi_head_attention/query/kernel:0", [8, 2, 4]),
        ("multi_head_attention/query/bias:0", [2, 4]),
        ("multi_head_attention/key/kernel:0", [7, 2, 4]),
        ("multi_head_attention/key/bias:0", [2, 4]),
        ("multi_head_attention/value/kernel:0", [6, 2, 3]),
        ("multi_head_attention/value/bias:0", [2, 3]),
        ("multi_head_attention/attention_output/kernel:0", [2, 3, 2, 5]),
        ("multi_head_attention/attention_output/bias:0", [2, 5]),
    ]
    assert [w.name for w in no_bias.weights] == [
        f"plain/{p}/kernel:0" for p in ("query", "key", "value", "attention_output")
    ]
    assert layer.compute_output_shape((None, 3, 8), (None, 5, 6)) == (None, 3, 2, 5)


def test_mha_values_against_numpy():
    q = RNG.normal(size=(2, 3, 6)).astype(np.float32)
    v = RNG.normal(size=(2, 4, 5)).astype(np.float32)
    k = RNG.normal(size=(2, 4, 7)).astype(np.float32)
    att_mask = RNG.random(size=(2, 3, 3)) > 0.3
    att_mask[:, :, 0] = True  # every query attends to something
    zeros = {"kernel_initializer": "zeros"}  # random values are loaded: no random initializer
    self_att = MultiHeadAttention(num_heads=2, key_dim=3, **zeros)
    cross = MultiHeadAttention(num_heads=3, key_dim=2, value_dim=4, output_shape=5, **zeros)
    masked = MultiHeadAttention(num_heads=2, key_dim=3, name="masked", **zeros)
    dropping = MultiHeadAttention(num_heads=2, key_dim=2, dropout=0.5, seed=1, **zeros)

    def build(q, v, k, att_mask):
        outputs = [self_att(q, q, return_attention_scores=True), cross(q, v, key=k),
                   masked(q, q, attention_mask=att_mask, use_causal_mask=True),
                   [dropping(q, q, training=t) for t in (True, False, None)]]  # fmt: skip
        return outputs, [self_att, cross, masked, dropping]

    results, weights = _run(build, [q, v, k, att_mask], randomize=True)
    (out_self, probs_self), out_cross, out_masked, (trained, inferred, default) = results
    w_self, w_cross, w_masked, w_dropping = weights
    expected, expected_probs = _np_mha(w_self, q, q, key_dim=3)
    np.testing.assert_allclose(out_self, expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(probs_self, expected_probs, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(out_cross, _np_mha(w_cross, q, v, k, key_dim=2)[0], rtol=1e-4,
                               atol=1e-5)  # fmt: skip
    mask = (att_mask & _np_causal(3, 3)[None]).astype(np.float32)
    np.testing.assert_allclose(out_masked, _np_mha(w_masked, q, q, mask=mask, key_dim=3)[0],
                               rtol=1e-4, atol=1e-5)  # fmt: skip
    # dropout only in training (a call without `training` outside fit is inference)
    np.testing.assert_allclose(inferred, _np_mha(w_dropping, q, q, key_dim=2)[0], rtol=1e-4,
                               atol=1e-5)  # fmt: skip
    np.testing.assert_array_equal(default, inferred)
    assert not np.allclose(trained, inferred)


def test_mha_argument_and_shape_errors():
    with pytest.raises(NotImplementedError, match="attention_axes"):
        MultiHeadAttention(2, 4, attention_axes=(1, 2))
    with pytest.raises(ValueError, match="num_heads"):
        MultiHeadAttention(0, 4)
    with sl.Graph().as_default():
        with pytest.raises(NotImplementedError, match="batch, steps, dim"):
            MultiHeadAttention(2, 4)(sl.constant(np.ones((2, 3, 3, 4), np.float32)),
                                     sl.constant(np.ones((2, 3, 3, 4), np.float32)))  # fmt: skip
        with pytest.raises(ValueError, match="value.*key"):
            MultiHeadAttention(2, 4)(sl.constant(Q), sl.constant(V), key=sl.constant(K[:, :2]))
    assert MultiHeadAttention(2, 4, attention_axes=1).attention_axes == (1,)


def test_mha_config_round_trips():
    layer = MultiHeadAttention(
        num_heads=3,
        key_dim=2,
        value_dim=5,
        dropout=0.1,
        use_bias=False,
        output_shape=(4,),
        kernel_initializer="he_normal",
        seed=7,
    )
    config = json.loads(json.dumps(layer.get_config()))
    assert config["output_shape"] == [4] and config["value_dim"] == 5
    assert MultiHeadAttention.from_config(config).get_config() == layer.get_config()


# -- gradients ---------------------------------------------------------------------------------
def _check_gradients(make_layer, call, arrays, entries=3, delta=1e-6):
    """d(sum(output * w)) / d(inputs and weights) against central differences (float64)."""
    rng = np.random.default_rng(1)
    with sl.Graph().as_default():
        layer = make_layer()
        xs = [sl.placeholder("float64", a.shape) for a in arrays]
        out = call(layer, *xs)
        loss = sl.reduce_sum(out * rng.normal(size=out.shape.as_list()))
        targets = xs + layer.trainable_weights
        grads = sl.gradients(loss, targets)
        with sl.Session() as sess:
            sess.run(sl.global_variables_initializer())
            values = {v: rng.normal(scale=0.5, size=v.shape.as_list())
                      for v in layer.trainable_weights}  # fmt: skip
            for v, value in values.items():
                v.load(value, sess)
            feed = dict(zip(xs, arrays))
            symbolic = sess.run(grads, feed)
            for target, grad in zip(targets, symbolic):
                base = feed[target] if target in feed else values[target]

                def loss_at(shifted, target=target, base=base):
                    if target in feed:
                        return sess.run(loss, {**feed, target: shifted.reshape(base.shape)})
                    target.load(shifted.reshape(base.shape), sess)
                    return sess.run(loss, feed)

                flat = np.asarray(base, np.float64).reshape(-1)
                for k in rng.choice(flat.size, size=min(entries, flat.size), replace=False):
                    slope = central_difference(loss_at, flat, k, delta)
                    if target not in feed:
                        target.load(base, sess)
                    np.testing.assert_allclose(np.reshape(grad, -1)[k], slope, rtol=1e-5,
                                               atol=1e-7, err_msg=target.name)  # fmt: skip


def test_attention_gradients():
    q, v = Q.astype(np.float64), V.astype(np.float64)
    _check_gradients(lambda: Attention(use_scale=True, score_mode="concat", dtype="float64"),
                     lambda layer, q, v: layer([q, v], mask=[None, sl.constant(V_MASK)]),
                     [q, v])  # fmt: skip
    _check_gradients(
        lambda: AdditiveAttention(dtype="float64"),
        lambda layer, q, v: layer([q, v], use_causal_mask=True),
        [q, v[:, :3]],
    )


def test_mha_gradients():
    q = RNG.normal(size=(2, 3, 4))
    _check_gradients(lambda: MultiHeadAttention(2, 3, value_dim=2, dtype="float64",
                                                kernel_initializer="zeros"),
                     lambda layer, q: layer(q, q, use_causal_mask=True), [q])  # fmt: skip


# -- in functional models ----------------------------------------------------------------
def _block(tokens, initializer):
    x = L.Embedding(8, 8, embeddings_initializer=initializer)(tokens)
    attended = MultiHeadAttention(num_heads=2, key_dim=4, kernel_initializer=initializer)(
        x, x, use_causal_mask=True
    )
    x = L.LayerNormalization()(x + attended)  # the residual: a GraphOpLayer
    hidden = L.Dense(16, activation="relu", kernel_initializer=initializer)(x)
    x = L.LayerNormalization()(x + L.Dense(8, kernel_initializer=initializer)(hidden))
    pooled = L.GlobalAveragePooling1D()(x)
    return L.Dense(2, activation="softmax", kernel_initializer=initializer)(pooled)


def test_a_transformer_block_config_round_trips_through_json():
    with sl.Graph().as_default():
        tokens = sl.Input((6,), dtype="int32")
        model = sl.Model(tokens, _block(tokens, "zeros"))  # values are loaded below
    model.set_weights([RNG.normal(scale=0.5, size=w.shape) for w in model.get_weights()])
    config = json.loads(json.dumps(model.get_config()))
    with sl.Graph().as_default():
        rebuilt = sl.Model.from_config(config)
    rebuilt.set_weights(model.get_weights())
    x = RNG.integers(0, 8, size=(4, 6))
    np.testing.assert_allclose(rebuilt.predict(x, verbose=0), model.predict(x, verbose=0),
                               rtol=1e-6)  # fmt: skip


@pytest.mark.slow  # about 20 s of CPU, most of it compiling the random initializers
def test_a_transformer_block_learns():
    sl.utils.set_random_seed(0)
    with sl.Graph().as_default():
        tokens = sl.Input((6,), dtype="int32")
        model = sl.Model(tokens, _block(tokens, "glorot_uniform"))
    x = RNG.integers(0, 8, size=(64, 6))
    y = (x == 3).any(axis=1).astype(np.int32)  # does token 3 occur?
    model.compile(sl.optimizers.Adam(0.01), "sparse_categorical_crossentropy")
    history = model.fit(x, y, batch_size=32, epochs=8, verbose=0)
    assert history.history["loss"][-1] < 0.8 * history.history["loss"][0]
