"""A functional model with residual arithmetic, after Keras's functional API guide (toy
ResNet): `layers.add`, `x + residual`, `x * 2`, `keras.ops` on symbolic tensors, trained,
saved, loaded, cloned and plotted."""

import numpy as np

import sluice as keras
from sluice import layers

inputs = keras.Input(shape=(8, 8, 3), name="img")
x = layers.Conv2D(8, 3, activation="relu")(inputs)
block_1_output = layers.MaxPooling2D(2)(x)

x = layers.Conv2D(8, 3, activation="relu", padding="same")(block_1_output)
x = layers.Conv2D(8, 3, activation="relu", padding="same")(x)
block_2_output = layers.add([x, block_1_output])

x = layers.Conv2D(8, 3, activation="relu", padding="same")(block_2_output)
x = x + block_2_output  # arithmetic on symbolic tensors builds layers, as in Keras
x = layers.GlobalAveragePooling2D()(x)
x = x * 2.0 - keras.ops.mean(x, axis=-1, keepdims=True)
x = keras.ops.concatenate([x, keras.ops.square(x)], axis=-1)
outputs = layers.Dense(4)(x)
model = keras.Model(inputs, outputs, name="toy_resnet")
model.summary()

rng = np.random.default_rng(3)
images = rng.uniform(size=(48, 8, 8, 3)).astype("float32")
labels = rng.integers(0, 4, size=48)
model.compile(
    optimizer=keras.optimizers.RMSprop(1e-3),
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=["acc"],
)
history = model.fit(images, labels, batch_size=16, epochs=2, validation_split=0.25, verbose=0)
assert history.history["loss"][-1] < history.history["loss"][0], history.history

model.save("toy_resnet.keras")
restored = keras.models.load_model("toy_resnet.keras")
np.testing.assert_allclose(
    restored.predict(images[:4], verbose=0), model.predict(images[:4], verbose=0), rtol=1e-5,
    atol=1e-6,
)  # fmt: skip

clone = keras.models.clone_model(model)
clone.set_weights(model.get_weights())
np.testing.assert_allclose(
    clone.predict(images[:4], verbose=0), model.predict(images[:4], verbose=0), rtol=1e-5,
    atol=1e-6,
)  # fmt: skip
keras.utils.plot_model(model, "toy_resnet.dot", show_shapes=True)
