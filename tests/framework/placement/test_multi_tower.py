"""The classic TF1 multi-tower training script (the shape of TensorFlow's
cifar10_multi_gpu_train.py: variables on /cpu:0 through `get_variable` and
`reuse_variables()`, one tower per device under a name scope, gradients averaged on the
parameter device), with `import sluice as tf` and a small dense model on fixed data.

It runs as written with `/gpu:%d` towers and `allow_soft_placement=True` (on a machine without
GPUs they land on the CPU, as in TF1), and with `/cpu:%d` towers on separate devices, where it
gives the same losses as one device computing the same average.
"""

import numpy as np

import sluice as tf

NUM_TOWERS = 2
BATCH = 16


def _variable_on_cpu(name, shape, initializer):
    with tf.device("/cpu:0"):
        var = tf.get_variable(name, shape, initializer=initializer, dtype=tf.float32)
    return var


def inference(images):
    with tf.variable_scope("local1"):
        weights = _variable_on_cpu(
            "weights", [8, 16], tf.truncated_normal_initializer(stddev=0.3, seed=1)
        )
        biases = _variable_on_cpu("biases", [16], tf.constant_initializer(0.1))
        local1 = tf.nn.relu(tf.matmul(images, weights) + biases)
    with tf.variable_scope("softmax_linear"):
        weights = _variable_on_cpu(
            "weights", [16, 3], tf.truncated_normal_initializer(stddev=0.3, seed=2)
        )
        biases = _variable_on_cpu("biases", [3], tf.constant_initializer(0.0))
        logits = tf.add(tf.matmul(local1, weights), biases)
    return logits


def tower_loss(images, labels):
    logits = inference(images)
    return tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    )


def average_gradients(tower_grads):
    average_grads = []
    for grad_and_vars in zip(*tower_grads):
        grads = []
        for g, _ in grad_and_vars:
            grads.append(tf.expand_dims(g, 0))
        grad = tf.reduce_mean(tf.concat(axis=0, values=grads), 0)
        average_grads.append((grad, grad_and_vars[0][1]))
    return average_grads


def train(tower_device, steps=4):
    """Builds the script's graph in a new graph and returns the losses of `steps` steps."""
    with tf.Graph().as_default(), tf.device("/cpu:0"):
        global_step = tf.get_variable(
            "global_step", [], initializer=tf.constant_initializer(0), trainable=False
        )
        opt = tf.train.GradientDescentOptimizer(0.5)
        images = tf.placeholder(tf.float32, [BATCH * NUM_TOWERS, 8])
        labels = tf.placeholder(tf.int32, [BATCH * NUM_TOWERS])
        images_split = tf.split(images, NUM_TOWERS)
        labels_split = tf.split(labels, NUM_TOWERS)
        tower_grads, losses = [], []
        with tf.variable_scope(tf.get_variable_scope()):
            for i in range(NUM_TOWERS):
                where = tower_device % i if "%" in tower_device else tower_device
                with tf.device(where), tf.name_scope("tower_%d" % i):
                    loss = tower_loss(images_split[i], labels_split[i])
                    tf.get_variable_scope().reuse_variables()
                    grads = opt.compute_gradients(loss)
                    tower_grads.append(grads)
                    losses.append(loss)
        grads = average_gradients(tower_grads)
        train_op = opt.apply_gradients(grads, global_step=global_step)
        mean_loss = tf.add_n(losses) / NUM_TOWERS
        init = tf.global_variables_initializer()
        assert len(tf.trainable_variables()) == 4  # shared by the towers, not one set per tower
        sess = tf.Session(
            config=tf.ConfigProto(allow_soft_placement=True, log_device_placement=False)
        )
        sess.run(init)
        rng = np.random.default_rng(0)
        x = rng.normal(size=(BATCH * NUM_TOWERS, 8)).astype(np.float32)
        y = (x[:, 0] > 0).astype(np.int32) + (x[:, 1] > 0.5).astype(np.int32)
        meta = tf.RunMetadata()
        out = [
            sess.run([train_op, mean_loss], {images: x, labels: y}, run_metadata=meta)[1]
            for _ in range(steps)
        ]
        assert sess.run(global_step) == steps
        sess.close()
        return out, meta


def test_towers_on_separate_devices_train_as_one_device():
    split, meta = train("/cpu:%d")  # tower i on cpu:i (the parameters on cpu:0)
    together, single = train("/cpu:0")
    assert [p.device[-5:] for p in meta.partitions] == ["CPU:0", "CPU:1"]
    assert [(p.device[-5:], p.sends, p.recvs) for p in single.partitions] == [("CPU:0", 0, 0)]
    np.testing.assert_allclose(split, together, rtol=1e-5)
    assert split[-1] < split[0]


def test_the_gpu_script_runs_unchanged_with_soft_placement():
    losses, _ = train("/gpu:%d", steps=2)
    assert np.all(np.isfinite(losses))
