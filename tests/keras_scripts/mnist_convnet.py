"""A simple MNIST convnet, after Keras's mnist_convnet example: `keras.datasets.mnist`
(from the Keras cache; the test writes a tiny mnist.npz there), `to_categorical`, Conv2D,
MaxPooling2D, Dropout, and a ModelCheckpoint of the weights."""

import numpy as np

import sluice as keras
from sluice import layers

num_classes = 10
input_shape = (28, 28, 1)
(x_train, y_train), (x_test, y_test) = keras.datasets.mnist.load_data()
x_train = x_train.astype("float32") / 255
x_test = x_test.astype("float32") / 255
x_train = np.expand_dims(x_train, -1)
x_test = np.expand_dims(x_test, -1)
print("x_train shape:", x_train.shape)
y_train = keras.utils.to_categorical(y_train, num_classes)
y_test = keras.utils.to_categorical(y_test, num_classes)

model = keras.Sequential(
    [
        keras.Input(shape=input_shape),
        layers.Conv2D(4, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Conv2D(8, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Flatten(),
        layers.Dropout(0.5),
        layers.Dense(num_classes, activation="softmax"),
    ]
)
model.summary()
model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
checkpoint = keras.callbacks.ModelCheckpoint("mnist.weights.h5", save_weights_only=True)
model.fit(x_train, y_train, batch_size=16, epochs=2, validation_split=0.1, callbacks=[checkpoint])
score = model.evaluate(x_test, y_test, verbose=0)
print("Test loss:", score[0], "Test accuracy:", score[1])
model.load_weights("mnist.weights.h5")
assert np.isclose(model.evaluate(x_test, y_test, verbose=0)[0], score[0], rtol=1e-5)
