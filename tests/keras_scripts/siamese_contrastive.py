"""A siamese network with a contrastive loss, after Keras's "Image similarity estimation using a
Siamese Network with a contrastive loss": one embedding tower (a functional model) called on two
inputs, a Lambda distance, trained on pairs of tiny images; saved, loaded in a new process (the
Lambda needs safe_mode=False, as in Keras) and trained on."""

import subprocess
import sys

import numpy as np

import sluice as keras
from sluice import layers, ops


def euclidean_distance(vects):
    x, y = vects
    sum_square = ops.sum(ops.square(x - y), axis=1, keepdims=True)
    return ops.sqrt(ops.maximum(sum_square, keras.backend.epsilon()))


def loss(margin=1):
    def contrastive_loss(y_true, y_pred):
        square_pred = ops.square(y_pred)
        margin_square = ops.square(ops.maximum(margin - (y_pred), 0))
        return ops.mean((1 - y_true) * square_pred + (y_true) * margin_square)

    return contrastive_loss


def make_pairs(rng, n=64):
    """Pairs of 12x12 images of two digits-like classes; label 1 for a pair of the same class."""
    labels = rng.integers(0, 2, size=(n, 2))
    images = rng.uniform(size=(n, 2, 12, 12, 1)).astype("float32") * 0.3
    for i in range(n):
        for j in range(2):
            images[i, j, 3 + 5 * labels[i, j], :, 0] += 1.0  # a bar whose row is the class
    same = (labels[:, 0] == labels[:, 1]).astype("float32")
    return images[:, 0], images[:, 1], same


rng = np.random.default_rng(0)
x1, x2, y = make_pairs(rng)
custom = {"contrastive_loss": loss(margin=1), "euclidean_distance": euclidean_distance}

if "--resume" in sys.argv:
    path = sys.argv[-1]
    siamese = keras.models.load_model(path, custom_objects=custom, safe_mode=False)
    before = siamese.evaluate([x1, x2], y, verbose=0)[0]
    history = siamese.fit([x1, x2], y, batch_size=16, epochs=2, verbose=0)
    print("resumed", before, history.history["loss"])
    # the loaded model trains on from where it was saved: its training losses stay below the
    # inference loss it started from (its BatchNormalization statistics lag the weights)
    losses = history.history["loss"]
    assert min(losses) < before
    sys.exit(0)

inputs = keras.Input((12, 12, 1))
x = layers.BatchNormalization()(inputs)
x = layers.Conv2D(4, (3, 3), activation="tanh")(x)
x = layers.AveragePooling2D(pool_size=(2, 2))(x)
x = layers.Flatten()(x)
x = layers.BatchNormalization()(x)
x = layers.Dense(8, activation="tanh")(x)
embedding_network = keras.Model(inputs, x)

input_1 = keras.Input((12, 12, 1))
input_2 = keras.Input((12, 12, 1))
tower_1 = embedding_network(input_1)
tower_2 = embedding_network(input_2)
merge_layer = layers.Lambda(euclidean_distance, output_shape=(1,))([tower_1, tower_2])
normal_layer = layers.BatchNormalization()(merge_layer)
output_layer = layers.Dense(1, activation="sigmoid")(normal_layer)
siamese = keras.Model(inputs=[input_1, input_2], outputs=output_layer)
siamese.compile(loss=loss(margin=1), optimizer="RMSprop", metrics=["accuracy"])
assert len(siamese.trainable_weights) == len(embedding_network.trainable_weights) + 4

history = siamese.fit([x1, x2], y, batch_size=16, epochs=6, verbose=0)
losses = history.history["loss"]
print("losses", losses)
assert losses[-1] < losses[0]

# the tower is shared: its own predictions give the distances the siamese model used
e1, e2 = embedding_network.predict(x1, verbose=0), embedding_network.predict(x2, verbose=0)
distance = keras.Model(siamese.inputs, merge_layer).predict([x1, x2], verbose=0)
np.testing.assert_allclose(
    distance[:, 0], np.sqrt(np.maximum(((e1 - e2) ** 2).sum(1), 1e-7)), rtol=1e-4
)

siamese.save("siamese.keras")
subprocess.run([sys.executable, __file__, "--resume", "siamese.keras"], check=True)
