"""A convolutional variational autoencoder, after Keras's "Variational AutoEncoder" (vae.py): a
Sampling layer drawing from keras.random.normal with its own SeedGenerator, encoder and decoder
models, a VAE model with loss trackers and a custom train_step (reconstruction and KL losses
under a GradientTape), trained by fit(x) with no targets. Tiny: 8x8 images instead of MNIST's
28x28. Saved as .keras, loaded in a new process and trained on."""

import json
import subprocess
import sys

import numpy as np

import sluice as keras
import sluice as tf
from sluice import layers, ops

keras.utils.set_random_seed(0)


@keras.saving.register_keras_serializable()
class Sampling(layers.Layer):
    """Uses (z_mean, z_log_var) to sample z, the vector encoding a digit."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seed_generator = keras.random.SeedGenerator(1337)

    def call(self, inputs):
        z_mean, z_log_var = inputs
        batch = ops.shape(z_mean)[0]
        dim = ops.shape(z_mean)[1]
        epsilon = keras.random.normal(shape=(batch, dim), seed=self.seed_generator)
        return z_mean + ops.exp(0.5 * z_log_var) * epsilon


@keras.saving.register_keras_serializable()
class VAE(keras.Model):
    def __init__(self, encoder, decoder, **kwargs):
        super().__init__(**kwargs)
        self.encoder = encoder
        self.decoder = decoder
        self.total_loss_tracker = keras.metrics.Mean(name="total_loss")
        self.reconstruction_loss_tracker = keras.metrics.Mean(name="reconstruction_loss")
        self.kl_loss_tracker = keras.metrics.Mean(name="kl_loss")

    @property
    def metrics(self):
        return [
            self.total_loss_tracker,
            self.reconstruction_loss_tracker,
            self.kl_loss_tracker,
        ]

    def train_step(self, data):
        with tf.GradientTape() as tape:
            z_mean, z_log_var, z = self.encoder(data)
            reconstruction = self.decoder(z)
            reconstruction_loss = ops.mean(
                ops.sum(keras.losses.binary_crossentropy(data, reconstruction), axis=(1, 2))
            )
            kl_loss = -0.5 * (1 + z_log_var - ops.square(z_mean) - ops.exp(z_log_var))
            kl_loss = ops.mean(ops.sum(kl_loss, axis=1))
            total_loss = reconstruction_loss + kl_loss
        grads = tape.gradient(total_loss, self.trainable_weights)
        self.optimizer.apply_gradients(zip(grads, self.trainable_weights))
        self.total_loss_tracker.update_state(total_loss)
        self.reconstruction_loss_tracker.update_state(reconstruction_loss)
        self.kl_loss_tracker.update_state(kl_loss)
        return {
            "loss": self.total_loss_tracker.result(),
            "reconstruction_loss": self.reconstruction_loss_tracker.result(),
            "kl_loss": self.kl_loss_tracker.result(),
        }

    def call(self, x):
        z_mean, z_log_var, z = self.encoder(x)
        return self.decoder(z)

    def get_config(self):
        config = super().get_config()
        config.update(
            encoder=keras.saving.serialize_keras_object(self.encoder),
            decoder=keras.saving.serialize_keras_object(self.decoder),
        )
        return config

    @classmethod
    def from_config(cls, config):
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        config["decoder"] = keras.saving.deserialize_keras_object(config["decoder"])
        return cls(**config)


def load_digits(n=64, size=8, seed=0):
    """Stand-ins for MNIST: a bright bar, across or down, at a random place."""
    rng = np.random.default_rng(seed)
    digits = np.zeros((n, size, size), dtype="uint8")
    for digit, across, place in zip(digits, rng.integers(0, 2, n), rng.integers(1, size - 1, n)):
        if across:
            digit[place, 1:-1] = 255
        else:
            digit[1:-1, place] = 255
    return digits


mnist_digits = np.expand_dims(load_digits(), -1).astype("float32") / 255

if "--resume" in sys.argv:
    path = sys.argv[-1]
    vae = keras.models.load_model(path)
    with open(path + ".json") as f:
        saved = json.load(f)
    z_mean, _, _ = vae.encoder.predict(mnist_digits[:8], verbose=0)
    np.testing.assert_allclose(z_mean, saved["z_mean"], rtol=1e-5, atol=1e-6)
    history = vae.fit(mnist_digits, epochs=2, batch_size=16, verbose=0)
    print("resumed", history.history)
    assert history.history["loss"][-1] < saved["losses"][-1]  # it goes on learning
    sys.exit(0)

latent_dim = 2

encoder_inputs = keras.Input(shape=(8, 8, 1))
x = layers.Conv2D(8, 3, activation="relu", strides=2, padding="same")(encoder_inputs)
x = layers.Conv2D(16, 3, activation="relu", strides=2, padding="same")(x)
x = layers.Flatten()(x)
x = layers.Dense(16, activation="relu")(x)
z_mean = layers.Dense(latent_dim, name="z_mean")(x)
z_log_var = layers.Dense(latent_dim, name="z_log_var")(x)
z = Sampling()([z_mean, z_log_var])
encoder = keras.Model(encoder_inputs, [z_mean, z_log_var, z], name="encoder")

latent_inputs = keras.Input(shape=(latent_dim,))
x = layers.Dense(2 * 2 * 16, activation="relu")(latent_inputs)
x = layers.Reshape((2, 2, 16))(x)
x = layers.Conv2DTranspose(16, 3, activation="relu", strides=2, padding="same")(x)
x = layers.Conv2DTranspose(8, 3, activation="relu", strides=2, padding="same")(x)
decoder_outputs = layers.Conv2DTranspose(1, 3, activation="sigmoid", padding="same")(x)
decoder = keras.Model(latent_inputs, decoder_outputs, name="decoder")

vae = VAE(encoder, decoder)
vae.compile(optimizer=keras.optimizers.Adam(learning_rate=0.01))
history = vae.fit(mnist_digits, epochs=5, batch_size=16, verbose=0)
losses = history.history["loss"]
print("history", history.history)
assert set(history.history) == {"loss", "reconstruction_loss", "kl_loss"}
assert losses[-1] < losses[0], losses

# The decoder maps points of the latent plane to images (the example plots a grid of them).
grid = np.array([[x, y] for x in (-1.0, 0.0, 1.0) for y in (-1.0, 0.0, 1.0)], dtype="float32")
images = vae.decoder.predict(grid, verbose=0)
assert images.shape == (9, 8, 8, 1) and np.all((images >= 0) & (images <= 1))

vae.save("vae.keras")
z_mean, _, _ = vae.encoder.predict(mnist_digits[:8], verbose=0)
with open("vae.keras.json", "w") as f:
    json.dump({"z_mean": z_mean.tolist(), "losses": losses}, f)
subprocess.run([sys.executable, __file__, "--resume", "vae.keras"], check=True)
