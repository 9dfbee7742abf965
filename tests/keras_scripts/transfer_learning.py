"""Transfer learning and fine-tuning, after Keras's guide of that name: a pretrained-style base
(here VGG16 without weights, as this machine cannot download ImageNet's) frozen under a new
head, trained; then unfrozen and fine-tuned with a low learning rate; saved, loaded in a new
process and fine-tuned on."""

import subprocess
import sys

import numpy as np

import sluice as keras

rng = np.random.default_rng(0)
labels = rng.integers(0, 2, size=(16, 1)).astype("float32")
images = rng.uniform(0, 80, size=(16, 32, 32, 3)).astype("float32")
images[labels[:, 0] == 1, :16] += 150.0  # the top half is bright in class 1

if "--resume" in sys.argv:
    model = keras.models.load_model(sys.argv[-1])
    before = model.evaluate(images, labels, verbose=0)[0]
    history = model.fit(images, labels, epochs=2, batch_size=8, verbose=0)
    print("resumed", before, history.history["loss"])
    losses = history.history["loss"]
    assert losses[-1] < losses[0]  # the loaded model trains on
    sys.exit(0)

base_model = keras.applications.VGG16(weights=None, input_shape=(32, 32, 3), include_top=False)
base_model.trainable = False  # Freeze the base_model

inputs = keras.Input(shape=(32, 32, 3))
scale_layer = keras.layers.Rescaling(scale=1 / 127.5, offset=-1)
x = scale_layer(inputs)
# The base model contains batchnorm layers in Keras's guide; training=False keeps it in
# inference mode when it is unfrozen for fine-tuning.
x = base_model(x, training=False)
x = keras.layers.GlobalAveragePooling2D()(x)
x = keras.layers.Dropout(0.2)(x)  # Regularize with dropout
outputs = keras.layers.Dense(1)(x)
model = keras.Model(inputs, outputs)
assert model.trainable_weights == model.layers[-1].trainable_weights  # only the head

model.compile(
    optimizer=keras.optimizers.Adam(1e-2),
    loss=keras.losses.BinaryCrossentropy(from_logits=True),
    metrics=[keras.metrics.BinaryAccuracy()],
)
frozen = base_model.get_weights()
history = model.fit(images, labels, epochs=4, batch_size=8, verbose=0)
losses = history.history["loss"]
print("head", losses)
assert losses[-1] < losses[0]
assert all(np.array_equal(a, b) for a, b in zip(frozen, base_model.get_weights()))

# Unfreeze the base_model and fine-tune end to end with a low learning rate.
base_model.trainable = True
model.compile(
    optimizer=keras.optimizers.Adam(1e-5),
    loss=keras.losses.BinaryCrossentropy(from_logits=True),
    metrics=[keras.metrics.BinaryAccuracy()],
)
history = model.fit(images, labels, epochs=1, batch_size=8, verbose=0)
print("fine-tuned", history.history["loss"])
assert not np.array_equal(frozen[0], base_model.get_weights()[0])

model.save("transfer.keras")
subprocess.run([sys.executable, __file__, "--resume", "transfer.keras"], check=True)
