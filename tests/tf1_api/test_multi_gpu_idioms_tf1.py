"""The device idioms of published multi-GPU TF1 programs, with `import sluice as tf`:

* the standard `assign_to_device(device, ps_device)` device function (the multi-GPU examples'
  `PS_OPS = ['Variable', 'VariableV2', 'AutoReloadVariable']`, `isinstance(op, tf.NodeDef)`),
  towers on virtual CPU devices (conftest starts 4), tower gradients averaged on the parameter
  device;
* `tf.train.replica_device_setter` on local devices;
* the PTB model's `device_lib.list_local_devices()` GPU count.
"""

import numpy as np
import pytest

import sluice as tf
from sluice.python.client import device_lib

PS_OPS = ["Variable", "VariableV2", "AutoReloadVariable"]
NUM_TOWERS = 2
BATCH = 8


def assign_to_device(device, ps_device="/cpu:0"):
    def _assign(op):
        node_def = op if isinstance(op, tf.NodeDef) else op.node_def
        if node_def.op in PS_OPS:
            return "/" + ps_device
        else:
            return device

    return _assign


def average_gradients(tower_grads):
    average_grads = []
    for grad_and_vars in zip(*tower_grads):
        grads = [tf.expand_dims(g, 0) for g, _ in grad_and_vars]
        grad = tf.reduce_mean(tf.concat(grads, 0), 0)
        average_grads.append((grad, grad_and_vars[0][1]))
    return average_grads


def conv_net(x, reuse):
    with tf.variable_scope("ConvNet", reuse=reuse):
        h = tf.layers.dense(x, 6, activation=tf.nn.relu, name="fc1")
        return tf.layers.dense(h, 3, name="out")


def build(tower_devices, ps_device="/cpu:0"):
    """The multi-GPU example's graph: one tower per device, variables on `ps_device`."""
    with tf.device("/cpu:0"):
        X = tf.placeholder(tf.float32, [None, 5])  # noqa: N806  (the example's names)
        Y = tf.placeholder(tf.int32, [None])  # noqa: N806
        tower_grads, losses, reuse_vars = [], [], False
        opt = tf.train.GradientDescentOptimizer(0.5)
        for i, device in enumerate(tower_devices):
            with tf.device(assign_to_device(device, ps_device=ps_device)):
                _x = X[i * BATCH : (i + 1) * BATCH]
                _y = Y[i * BATCH : (i + 1) * BATCH]
                logits = conv_net(_x, reuse=reuse_vars)
                loss_op = tf.reduce_mean(
                    tf.nn.sparse_softmax_cross_entropy_with_logits(logits=logits, labels=_y)
                )
                reuse_vars = True
                tower_grads.append(opt.compute_gradients(loss_op))
                losses.append(loss_op)
        train_op = opt.apply_gradients(average_gradients(tower_grads))
        return X, Y, tf.reduce_mean(tf.stack(losses)), train_op


def train(tower_devices, steps=3):
    rng = np.random.RandomState(0)
    x = rng.randn(NUM_TOWERS * BATCH, 5).astype(np.float32)
    y = rng.randint(0, 3, NUM_TOWERS * BATCH).astype(np.int32)
    with tf.Graph().as_default() as g:
        tf.set_random_seed(3)
        X, Y, loss, train_op = build(tower_devices)  # noqa: N806
        init = tf.global_variables_initializer()
        with tf.Session() as sess:
            sess.run(init)
            losses = [sess.run([loss, train_op], {X: x, Y: y})[0] for _ in range(steps)]
    return g, losses


def test_assign_to_device_puts_variables_on_the_ps_device():
    with tf.Graph().as_default() as g:
        build(["/cpu:1", "/cpu:2"])
    variables = g.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)
    assert sorted(v.op.name for v in variables) == [
        "ConvNet/fc1/bias",
        "ConvNet/fc1/kernel",
        "ConvNet/out/bias",
        "ConvNet/out/kernel",
    ]
    for v in variables:
        assert v.op.node_def.op == "VariableV2"
        assert v.device == "/device:CPU:0"
    devices = {op.device for op in g.get_operations() if op.type == "MatMul"}
    assert {"/device:CPU:1", "/device:CPU:2"} <= devices


@pytest.mark.slow  # two graphs compiled and run on four devices: ~20 s on a loaded machine
def test_towers_on_virtual_devices_train_as_one_device():
    _, losses = train(["/cpu:1", "/cpu:2"])
    assert losses[-1] < losses[0]
    # the same averaged step on one device gives the same losses
    _, one_device = train(["/cpu:0", "/cpu:0"])
    np.testing.assert_allclose(losses, one_device, rtol=1e-5)


def test_assign_to_device_takes_node_defs_too():
    fn = assign_to_device("/cpu:1")
    with tf.Graph().as_default():
        v = tf.Variable(1.0)
        c = tf.constant(1.0)
        assert fn(v.op.node_def) == "//cpu:0"
        assert fn(c.op) == "/cpu:1"


def test_replica_device_setter_on_local_devices():
    with tf.Graph().as_default():
        setter = tf.train.replica_device_setter(
            ps_tasks=1, ps_device="/cpu:0", worker_device="/cpu:1"
        )
        with tf.device(setter):
            w = tf.get_variable("w", [4, 2], initializer=tf.ones_initializer())
            r = tf.get_variable("r", [2], use_resource=True, initializer=tf.ones_initializer())
            x = tf.placeholder(tf.float32, [None, 4])
            y = tf.matmul(x, w) + r
        assert (w.device, r.device, y.device) == ("/device:CPU:0", "/device:CPU:0", "/device:CPU:1")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_allclose(sess.run(y, {x: np.ones((1, 4))}), [[5.0, 5.0]], rtol=1e-6)


def test_replica_device_setter_round_robin_jobs_and_cluster():
    with tf.Graph().as_default():
        with tf.device(tf.train.replica_device_setter(ps_tasks=2)):
            a, b, c = tf.Variable(1.0), tf.Variable(2.0), tf.Variable(3.0)
            s = a + b
        assert [a.device, b.device, c.device] == [
            "/job:ps/task:0",
            "/job:ps/task:1",
            "/job:ps/task:0",
        ]
        assert s.device == "/job:worker"
        cluster = {"ps": ["h:1", "h:2", "h:3"], "worker": ["h:4"]}
        with tf.device(tf.train.replica_device_setter(cluster=cluster)):
            with tf.device("/cpu:0"):  # merged: the setter fills the fields left unset
                d = tf.Variable(1.0)
        assert d.device == "/job:ps/task:0/device:CPU:0"
        assert tf.train.replica_device_setter(cluster={"worker": ["h:4"]}) is None
        assert tf.train.replica_device_setter() is None
        with pytest.raises(TypeError, match="callable"):
            tf.train.replica_device_setter(ps_tasks=1, ps_strategy=3)


def test_replica_device_setter_without_merging_keeps_requested_devices():
    with tf.Graph().as_default():
        setter = tf.train.replica_device_setter(ps_tasks=1, merge_devices=False)
        with tf.device(setter):
            with tf.device("/cpu:1"):
                v = tf.Variable(1.0)
            w = tf.Variable(1.0)
        assert (v.device, w.device) == ("/device:CPU:1", "/job:ps/task:0")


def test_ptb_model_device_lib_gpu_count():
    # the published PTB model: `_get_gpus` and its fallback when the list is empty
    gpus = [x.name for x in device_lib.list_local_devices() if x.device_type == "GPU"]
    devices = device_lib.list_local_devices()
    assert devices[0].name.startswith("/device:")
    assert all(d.memory_limit > 0 for d in devices)
    cpus = [d.name for d in devices if d.device_type == "CPU"]
    assert cpus[:4] == ["/device:CPU:0", "/device:CPU:1", "/device:CPU:2", "/device:CPU:3"]
    num_gpus = len(gpus)
    assert num_gpus == sum(d.device_type == "GPU" for d in devices)
