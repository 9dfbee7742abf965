"""Knowledge distillation, after Keras's "Knowledge Distillation" example: a teacher trained as
usual, a Distiller(keras.Model) holding the teacher and a student, whose compile takes the
student's loss, keras.losses.KLDivergence() as distillation loss, alpha and temperature, and
whose compute_loss mixes the two (the example's Keras 3 form; fit and evaluate use it); a
student trained from scratch by a clone for comparison. Tiny: 12x12 images of 4 classes, small
convolutions. The Distiller is saved as .keras, loaded in a new process (its custom compile is
called again, as Keras asks) and distils on."""

import json
import subprocess
import sys

import numpy as np

import sluice as keras
from sluice import layers, ops


@keras.saving.register_keras_serializable()
class Distiller(keras.Model):
    def __init__(self, student, teacher, **kwargs):
        super().__init__(**kwargs)
        self.teacher = teacher
        self.student = student

    def compile(
        self,
        optimizer,
        metrics,
        student_loss_fn,
        distillation_loss_fn,
        alpha=0.1,
        temperature=3,
    ):
        """Configure the distiller.

        Args:
            optimizer: Keras optimizer for the student weights
            metrics: Keras metrics for evaluation
            student_loss_fn: Loss function of difference between student
                predictions and ground-truth
            distillation_loss_fn: Loss function of difference between soft
                student predictions and soft teacher predictions
            alpha: weight to student_loss_fn and 1-alpha to distillation_loss_fn
            temperature: Temperature for softening probability distributions.
                Larger temperature gives softer distributions.
        """
        super().compile(optimizer=optimizer, metrics=metrics)
        self.student_loss_fn = student_loss_fn
        self.distillation_loss_fn = distillation_loss_fn
        self.alpha = alpha
        self.temperature = temperature

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, allow_empty=False):
        teacher_pred = self.teacher(x, training=False)
        student_loss = self.student_loss_fn(y, y_pred)

        distillation_loss = self.distillation_loss_fn(
            ops.softmax(teacher_pred / self.temperature, axis=1),
            ops.softmax(y_pred / self.temperature, axis=1),
        ) * (self.temperature**2)

        loss = self.alpha * student_loss + (1 - self.alpha) * distillation_loss
        return loss

    def call(self, x):
        return self.student(x)

    def get_config(self):
        config = super().get_config()
        config.update(
            student=keras.saving.serialize_keras_object(self.student),
            teacher=keras.saving.serialize_keras_object(self.teacher),
        )
        return config

    @classmethod
    def from_config(cls, config):
        config["student"] = keras.saving.deserialize_keras_object(config["student"])
        config["teacher"] = keras.saving.deserialize_keras_object(config["teacher"])
        return cls(**config)


def load_data(n, size=12, classes=4, seed=0):
    """Stand-ins for MNIST: the row of a bright bar tells the class."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, size=n)
    x = (rng.uniform(size=(n, size, size)) * 60).astype("uint8")
    x[np.arange(n), 2 * y + 2, 2:-2] = 255
    return x, y


def compile_distiller(distiller):
    distiller.compile(
        optimizer=keras.optimizers.Adam(learning_rate=0.01),
        metrics=[keras.metrics.SparseCategoricalAccuracy()],
        student_loss_fn=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        distillation_loss_fn=keras.losses.KLDivergence(),
        alpha=0.1,
        temperature=10,
    )


# Prepare the train and test dataset.
batch_size = 16
(x_train, y_train), (x_test, y_test) = load_data(64), load_data(32, seed=1)

# Normalize data
x_train = x_train.astype("float32") / 255.0
x_train = np.reshape(x_train, (-1, 12, 12, 1))

x_test = x_test.astype("float32") / 255.0
x_test = np.reshape(x_test, (-1, 12, 12, 1))

if "--resume" in sys.argv:
    path = sys.argv[-1]
    distiller = keras.models.load_model(path)
    with open(path + ".json") as f:
        saved = json.load(f)
    np.testing.assert_allclose(
        distiller.student.predict(x_test[:4], verbose=0), saved["student"], rtol=1e-5, atol=1e-6
    )
    compile_distiller(distiller)  # the custom compile() is not part of the saved file
    before, _ = distiller.evaluate(x_train, y_train, verbose=0)
    history = distiller.fit(x_train, y_train, epochs=2, batch_size=batch_size, verbose=0)
    after, _ = distiller.evaluate(x_train, y_train, verbose=0)
    print("resumed", before, history.history, after)
    assert after < before
    sys.exit(0)

# Create the teacher
teacher = keras.Sequential(
    [
        keras.Input(shape=(12, 12, 1)),
        layers.Conv2D(16, (3, 3), strides=(2, 2), padding="same"),
        layers.LeakyReLU(negative_slope=0.2),
        layers.MaxPooling2D(pool_size=(2, 2), strides=(1, 1), padding="same"),
        layers.Conv2D(32, (3, 3), strides=(2, 2), padding="same"),
        layers.Flatten(),
        layers.Dense(4),
    ],
    name="teacher",
)

# Create the student
student = keras.Sequential(
    [
        keras.Input(shape=(12, 12, 1)),
        layers.Conv2D(4, (3, 3), strides=(2, 2), padding="same"),
        layers.LeakyReLU(negative_slope=0.2),
        layers.MaxPooling2D(pool_size=(2, 2), strides=(1, 1), padding="same"),
        layers.Conv2D(8, (3, 3), strides=(2, 2), padding="same"),
        layers.Flatten(),
        layers.Dense(4),
    ],
    name="student",
)

# Clone student for later comparison
student_scratch = keras.models.clone_model(student)

# Train teacher as usual
teacher.compile(
    optimizer=keras.optimizers.Adam(learning_rate=0.01),
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=[keras.metrics.SparseCategoricalAccuracy()],
)

# Train and evaluate teacher on data.
teacher.fit(x_train, y_train, epochs=5, batch_size=batch_size, verbose=0)
teacher_loss, teacher_accuracy = teacher.evaluate(x_test, y_test, verbose=0)
print("teacher", teacher_loss, teacher_accuracy)
assert teacher_accuracy > 0.5

# Initialize and compile distiller
distiller = Distiller(student=student, teacher=teacher)
compile_distiller(distiller)
teacher_weights = teacher.get_weights()

# Distill teacher to student
history = distiller.fit(x_train, y_train, epochs=4, batch_size=batch_size, verbose=0)
losses = history.history["loss"]
print("distiller", history.history)
assert losses[-1] < losses[0], losses
# As in Keras, fit's step differentiates compute_loss by all the distiller's trainable weights:
# the example leaves the teacher trainable, so the distillation loss moves it too.
assert not np.allclose(teacher_weights[0], teacher.get_weights()[0])

# Evaluate student on test dataset
loss, accuracy = distiller.evaluate(x_test, y_test, verbose=0)
print("distilled student", loss, accuracy)

# The distiller's loss, computed here by hand from the two models' logits.
t = teacher.predict(x_test, verbose=0) / 10
s = student.predict(x_test, verbose=0)
soft_t = np.exp(t - t.max(1, keepdims=True))
soft_t /= soft_t.sum(1, keepdims=True)
soft_s = np.exp(s / 10 - (s / 10).max(1, keepdims=True))
soft_s /= soft_s.sum(1, keepdims=True)
kl = np.mean(np.sum(soft_t * np.log(np.clip(soft_t, 1e-7, 1) / np.clip(soft_s, 1e-7, 1)), 1))
log_p = s - s.max(1, keepdims=True)
log_p -= np.log(np.exp(log_p).sum(1, keepdims=True))
cross_entropy = -np.mean(log_p[np.arange(len(y_test)), y_test])
np.testing.assert_allclose(loss, 0.1 * cross_entropy + 0.9 * 100 * kl, rtol=1e-4)

# Train student as done usually
student_scratch.compile(
    optimizer=keras.optimizers.Adam(learning_rate=0.01),
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=[keras.metrics.SparseCategoricalAccuracy()],
)

# Train and evaluate student trained from scratch.
student_scratch.fit(x_train, y_train, epochs=4, batch_size=batch_size, verbose=0)
print("student from scratch", student_scratch.evaluate(x_test, y_test, verbose=0))

distiller.save("distiller.keras")
with open("distiller.keras.json", "w") as f:
    json.dump({"student": student.predict(x_test[:4], verbose=0).tolist()}, f)
subprocess.run([sys.executable, __file__, "--resume", "distiller.keras"], check=True)
