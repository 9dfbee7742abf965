"""Time-series classification from scratch, after Keras's example: a fully convolutional
Conv1D network, trained with ModelCheckpoint("best_model.keras"), ReduceLROnPlateau,
EarlyStopping and TensorBoard, then the best model is loaded back with load_model."""

import os

import numpy as np

import sluice as keras

rng = np.random.default_rng(1)
n, length = 96, 32
t = np.linspace(0, 4 * np.pi, length)
y = rng.integers(0, 2, size=n)
frequency = np.where(y == 1, 2.0, 1.0)[:, None]
phase = rng.uniform(0, np.pi, (n, 1))
x = np.sin(frequency * t[None, :] + phase) + 0.3 * rng.normal(size=(n, length))
x = x.reshape((n, length, 1)).astype("float32")
x_train, y_train, x_test, y_test = x[:64], y[:64], x[64:], y[64:]
num_classes = len(np.unique(y_train))


def make_model(input_shape):
    input_layer = keras.layers.Input(input_shape)
    conv1 = keras.layers.Conv1D(filters=8, kernel_size=3, padding="same")(input_layer)
    conv1 = keras.layers.BatchNormalization()(conv1)
    conv1 = keras.layers.ReLU()(conv1)
    conv2 = keras.layers.Conv1D(filters=8, kernel_size=3, padding="same")(conv1)
    conv2 = keras.layers.BatchNormalization()(conv2)
    conv2 = keras.layers.ReLU()(conv2)
    gap = keras.layers.GlobalAveragePooling1D()(conv2)
    output_layer = keras.layers.Dense(num_classes, activation="softmax")(gap)
    return keras.models.Model(inputs=input_layer, outputs=output_layer)


model = make_model(input_shape=x_train.shape[1:])
keras.utils.plot_model(model, to_file="model.dot", show_shapes=True)

callbacks = [
    keras.callbacks.ModelCheckpoint("best_model.keras", save_best_only=True, monitor="val_loss"),
    keras.callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=2, min_lr=0.0001),
    keras.callbacks.EarlyStopping(monitor="val_loss", patience=5, verbose=1),
    keras.callbacks.TensorBoard(log_dir="logs"),
]
model.compile(
    optimizer="adam",
    loss="sparse_categorical_crossentropy",
    metrics=["sparse_categorical_accuracy"],
)
history = model.fit(
    x_train, y_train, batch_size=16, epochs=3, callbacks=callbacks, validation_split=0.25,
    verbose=1,
)  # fmt: skip

model = keras.models.load_model("best_model.keras")
test_loss, test_acc = model.evaluate(x_test, y_test)
print("Test accuracy", test_acc, "Test loss", test_loss)
best = int(np.argmin(history.history["val_loss"]))
assert np.isclose(
    model.evaluate(x_train[48:], y_train[48:], verbose=0)[0], history.history["val_loss"][best],
    rtol=1e-4,
)  # fmt: skip
assert os.path.exists("model.dot") and os.listdir("logs")
