"""A training loop written from scratch in JAX, after the Keras guide "Writing a training loop
from scratch in JAX": the loss of model.stateless_call differentiated by jax.value_and_grad, the
update by optimizer.stateless_apply, the whole step under jax.jit on a state tuple, the new
values assigned back to the model's variables, then model.save. The same model is then driven
by optax, as any JAX library drives a pure function. Tiny: 16 features instead of MNIST's 784.
Loaded in a new process and trained on.

The guide loads batches with TensorFlow 2's eager tf.data; sluice's tf.data is TF1's (iterated
in a session), so the batches here come from NumPy, as a JAX user without TensorFlow writes."""

import subprocess
import sys

import jax
import numpy as np
import optax

import sluice as keras


def get_model():
    inputs = keras.Input(shape=(16,), name="digits")
    x1 = keras.layers.Dense(32, activation="relu")(inputs)
    x2 = keras.layers.Dense(32, activation="relu")(x1)
    outputs = keras.layers.Dense(4, name="predictions")(x2)
    model = keras.Model(inputs=inputs, outputs=outputs)
    return model


def load_data(n, seed):
    """Stand-ins for MNIST: four clusters, labels one-hot."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 4, size=n)
    centres = np.random.default_rng(99).normal(size=(4, 16))
    x = (centres[labels] + 0.8 * rng.normal(size=(n, 16))).astype("float32")
    return x, keras.utils.to_categorical(labels, 4)


batch_size = 16
x_train, y_train = load_data(128, seed=0)
x_val, y_val = load_data(32, seed=1)


def batches(x, y, seed):
    """The training dataset: shuffled batches of NumPy arrays."""
    order = np.random.default_rng(seed).permutation(len(x))
    for start in range(0, len(x), batch_size):
        take = order[start : start + batch_size]
        yield x[take], y[take]


# Instantiate a loss function.
loss_fn = keras.losses.CategoricalCrossentropy(from_logits=True)

if "--resume" in sys.argv:
    path = sys.argv[-1]
    model = keras.models.load_model(path)
    np.testing.assert_allclose(
        model.predict(x_val, verbose=0), np.load(path + ".npy"), rtol=1e-5, atol=1e-6
    )
else:
    model = get_model()

# Instantiate an optimizer.
optimizer = keras.optimizers.Adam(learning_rate=1e-2)


def compute_loss_and_updates(trainable_variables, non_trainable_variables, x, y):
    y_pred, non_trainable_variables = model.stateless_call(
        trainable_variables, non_trainable_variables, x
    )
    loss = loss_fn(y, y_pred)
    return loss, non_trainable_variables


grad_fn = jax.value_and_grad(compute_loss_and_updates, has_aux=True)


@jax.jit
def train_step(state, data):
    trainable_variables, non_trainable_variables, optimizer_variables = state
    x, y = data
    (loss, non_trainable_variables), grads = grad_fn(
        trainable_variables, non_trainable_variables, x, y
    )
    trainable_variables, optimizer_variables = optimizer.stateless_apply(
        optimizer_variables, grads, trainable_variables
    )
    # Return updated state
    return loss, (
        trainable_variables,
        non_trainable_variables,
        optimizer_variables,
    )


def full_loss():
    return float(loss_fn(y_train, model.predict(x_train, verbose=0)))


# Build optimizer variables.
optimizer.build(model.trainable_variables)

# JAX >= 0.10 takes no Keras variable into jax.jit (with Keras 3 on JAX neither): the loop
# starts from the variables' values, which `.value` gives.
trainable_variables = [v.value for v in model.trainable_variables]
non_trainable_variables = [v.value for v in model.non_trainable_variables]
optimizer_variables = [v.value for v in optimizer.variables]
state = trainable_variables, non_trainable_variables, optimizer_variables

start = full_loss()
# Training loop
for epoch in range(3):
    for step, data in enumerate(batches(x_train, y_train, seed=epoch)):
        loss, state = train_step(state, data)
        if step % 4 == 0:
            print(f"Training loss (for 1 batch) at step {step}: {float(loss):.4f}")

# The loop is stateless: the model's variables did not move until the values are assigned back.
assert full_loss() == start
trainable_variables, non_trainable_variables, optimizer_variables = state
for variable, value in zip(model.trainable_variables, trainable_variables):
    variable.assign(value)
for variable, value in zip(model.non_trainable_variables, non_trainable_variables):
    variable.assign(value)
trained = full_loss()
print("loss before and after", start, trained)
assert trained < start

if "--resume" in sys.argv:
    sys.exit(0)

# optax drives the same pure function: the weights as a list of JAX arrays.
tx = optax.adam(1e-2)
params = [v.value for v in model.trainable_variables]
opt_state = tx.init(params)


@jax.jit
def optax_step(params, non_trainable, opt_state, x, y):
    (loss, non_trainable), grads = grad_fn(params, non_trainable, x, y)
    updates, opt_state = tx.update(grads, opt_state, params)
    return loss, optax.apply_updates(params, updates), non_trainable, opt_state


before = full_loss()
non_trainable = [v.value for v in model.non_trainable_variables]
for x, y in batches(x_train, y_train, seed=4):
    loss, params, non_trainable, opt_state = optax_step(params, non_trainable, opt_state, x, y)
for variable, value in zip(model.trainable_variables, params):
    variable.assign(value)
after = full_loss()
print("optax: loss before and after", before, after)
assert after < before

model.save("jax_loop.keras")
np.save("jax_loop.keras.npy", model.predict(x_val, verbose=0))
subprocess.run([sys.executable, __file__, "--resume", "jax_loop.keras"], check=True)
