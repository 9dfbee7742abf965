"""A DCGAN trained by fit() with an overridden train_step, after Keras's "DCGAN to generate face
images" (dcgan_overriding_train_step.py): a discriminator and a generator as Sequentials from
keras.Input, a GAN model whose compile takes two optimizers and a loss, keras.random.normal with
a SeedGenerator, two GradientTapes per step and Mean trackers, fed a dataset of images alone.
Tiny: 8x8 images of bright squares instead of CelebA's 64x64 faces. Saved as .keras, loaded in a
new process (the custom compile is called again, as Keras asks) and trained on."""

import subprocess
import sys

import numpy as np

import sluice as keras
import sluice as tf
from sluice import layers, ops

latent_dim = 8
batch_size = 16


def make_faces(n=64, size=8, seed=0):
    """Stand-ins for the faces: a bright square at a random place on a dark, noisy image."""
    rng = np.random.default_rng(seed)
    images = 0.1 * rng.uniform(size=(n, size, size, 1))
    for image, (row, col) in zip(images, rng.integers(0, size - 3, size=(n, 2))):
        image[row : row + 3, col : col + 3] = 0.9
    return images.astype("float32")


dataset = tf.data.Dataset.from_tensor_slices(make_faces())
dataset = dataset.shuffle(buffer_size=64, seed=0).batch(batch_size)


@keras.saving.register_keras_serializable()
class GAN(keras.Model):
    def __init__(self, discriminator, generator, latent_dim, **kwargs):
        super().__init__(**kwargs)
        self.discriminator = discriminator
        self.generator = generator
        self.latent_dim = latent_dim
        self.seed_generator = keras.random.SeedGenerator(1337)

    def compile(self, d_optimizer, g_optimizer, loss_fn):
        super().compile()
        self.d_optimizer = d_optimizer
        self.g_optimizer = g_optimizer
        self.loss_fn = loss_fn
        self.d_loss_metric = keras.metrics.Mean(name="d_loss")
        self.g_loss_metric = keras.metrics.Mean(name="g_loss")

    @property
    def metrics(self):
        return [self.d_loss_metric, self.g_loss_metric]

    def train_step(self, real_images):
        # Sample random points in the latent space
        batch_size = ops.shape(real_images)[0]
        random_latent_vectors = keras.random.normal(
            shape=(batch_size, self.latent_dim), seed=self.seed_generator
        )

        # Decode them to fake images
        generated_images = self.generator(random_latent_vectors)

        # Combine them with real images
        combined_images = ops.concatenate([generated_images, real_images], axis=0)

        # Assemble labels discriminating real from fake images
        labels = ops.concatenate([ops.ones((batch_size, 1)), ops.zeros((batch_size, 1))], axis=0)
        # Add random noise to the labels - important trick!
        labels += 0.05 * tf.random.uniform(tf.shape(labels))

        # Train the discriminator
        with tf.GradientTape() as tape:
            predictions = self.discriminator(combined_images)
            d_loss = self.loss_fn(labels, predictions)
        grads = tape.gradient(d_loss, self.discriminator.trainable_weights)
        self.d_optimizer.apply_gradients(zip(grads, self.discriminator.trainable_weights))

        # Sample random points in the latent space
        random_latent_vectors = keras.random.normal(
            shape=(batch_size, self.latent_dim), seed=self.seed_generator
        )

        # Assemble labels that say "all real images"
        misleading_labels = ops.zeros((batch_size, 1))

        # Train the generator (note that we should *not* update the weights
        # of the discriminator)!
        with tf.GradientTape() as tape:
            predictions = self.discriminator(self.generator(random_latent_vectors))
            g_loss = self.loss_fn(misleading_labels, predictions)
        grads = tape.gradient(g_loss, self.generator.trainable_weights)
        self.g_optimizer.apply_gradients(zip(grads, self.generator.trainable_weights))

        # Update metrics
        self.d_loss_metric.update_state(d_loss)
        self.g_loss_metric.update_state(g_loss)
        return {
            "d_loss": self.d_loss_metric.result(),
            "g_loss": self.g_loss_metric.result(),
        }

    def get_config(self):
        config = super().get_config()
        config.update(
            discriminator=keras.saving.serialize_keras_object(self.discriminator),
            generator=keras.saving.serialize_keras_object(self.generator),
            latent_dim=self.latent_dim,
        )
        return config

    @classmethod
    def from_config(cls, config):
        config["discriminator"] = keras.saving.deserialize_keras_object(config["discriminator"])
        config["generator"] = keras.saving.deserialize_keras_object(config["generator"])
        return cls(**config)


class GANMonitor(keras.callbacks.Callback):
    """Generates images at each epoch's end (the example writes them out as PNG files)."""

    def __init__(self, num_img=3, latent_dim=128):
        self.num_img = num_img
        self.latent_dim = latent_dim
        self.seed_generator = keras.random.SeedGenerator(42)
        self.images = []

    def on_epoch_end(self, epoch, logs=None):
        random_latent_vectors = keras.random.normal(
            shape=(self.num_img, self.latent_dim), seed=self.seed_generator
        )
        generated_images = self.model.generator(random_latent_vectors)
        generated_images *= 255
        self.images.append(generated_images.numpy())


def compile_gan(gan):
    gan.compile(
        d_optimizer=keras.optimizers.Adam(learning_rate=0.002),
        g_optimizer=keras.optimizers.Adam(learning_rate=0.002),
        loss_fn=keras.losses.BinaryCrossentropy(),
    )


probe = np.random.default_rng(1).normal(size=(4, latent_dim)).astype("float32")

if "--resume" in sys.argv:
    path = sys.argv[-1]
    gan = keras.models.load_model(path)
    np.testing.assert_allclose(
        gan.generator.predict(probe, verbose=0), np.load(path + ".probe.npy"), rtol=1e-5, atol=1e-6
    )
    compile_gan(gan)  # the custom compile() is not part of the saved file
    kernel = gan.discriminator.get_weights()[0]
    history = gan.fit(dataset, epochs=2, verbose=0)
    print("resumed", history.history)
    assert all(np.isfinite(history.history["d_loss"] + history.history["g_loss"]))
    assert not np.allclose(kernel, gan.discriminator.get_weights()[0])
    sys.exit(0)

discriminator = keras.Sequential(
    [
        keras.Input(shape=(8, 8, 1)),
        layers.Conv2D(16, kernel_size=4, strides=2, padding="same"),
        layers.LeakyReLU(negative_slope=0.2),
        layers.Conv2D(32, kernel_size=4, strides=2, padding="same"),
        layers.LeakyReLU(negative_slope=0.2),
        layers.Flatten(),
        layers.Dropout(0.2),
        layers.Dense(1, activation="sigmoid"),
    ],
    name="discriminator",
)

generator = keras.Sequential(
    [
        keras.Input(shape=(latent_dim,)),
        layers.Dense(2 * 2 * 32),
        layers.Reshape((2, 2, 32)),
        layers.Conv2DTranspose(32, kernel_size=4, strides=2, padding="same"),
        layers.LeakyReLU(negative_slope=0.2),
        layers.Conv2DTranspose(16, kernel_size=4, strides=2, padding="same"),
        layers.LeakyReLU(negative_slope=0.2),
        layers.Conv2D(1, kernel_size=3, padding="same", activation="sigmoid"),
    ],
    name="generator",
)

gan = GAN(discriminator=discriminator, generator=generator, latent_dim=latent_dim)
compile_gan(gan)
monitor = GANMonitor(num_img=3, latent_dim=latent_dim)
history = gan.fit(dataset, epochs=4, callbacks=[monitor], verbose=0)
print("history", history.history)
d_loss, g_loss = history.history["d_loss"], history.history["g_loss"]
assert len(d_loss) == len(g_loss) == 4
assert d_loss[-1] < d_loss[0], d_loss  # the discriminator learns to tell the squares apart
assert len(monitor.images) == 4 and monitor.images[-1].shape == (3, 8, 8, 1)

gan.save("dcgan.keras")
np.save("dcgan.keras.probe.npy", gan.generator.predict(probe, verbose=0))
subprocess.run([sys.executable, __file__, "--resume", "dcgan.keras"], check=True)
