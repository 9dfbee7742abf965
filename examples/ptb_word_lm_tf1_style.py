"""A word-level language model written as TensorFlow 1.x's classic PTB tutorial writes it.

The model is the tutorial's (Zaremba et al., 2014): word embeddings, a 2-layer LSTM with dropout
between the layers, a softmax over the vocabulary, `sequence_loss`, gradients clipped by their
global norm, plain gradient descent whose learning rate decays each epoch after `max_epoch`. The
text is the English documentation that ships with Python (`pydoc_data.topics`, what `help("for")`
prints) instead of the Penn Treebank, cut into words with `<eos>` at every line end, with the
rarest words as `<unk>`.

The program uses TF1's machinery around the model, so that it runs as published TF1 code does:
`sl.flags` and `sl.app.run`, the `reader.ptb_producer` input pipeline on
`sl.train.range_input_producer` (a queue whose runner thread the Supervisor starts), a
`sl.train.Supervisor` that restores the latest checkpoint when it starts and saves on a schedule,
`sl.summary` scalars written for TensorBoard, and checkpoints with their meta graphs. The
model's tensors are named in graph collections ("Train/cost", "Train/initial", ...), so
`ptb_word_lm_resume.py` can go on training from the files alone, with no model code.

Run: python examples/ptb_word_lm_tf1_style.py --save_path runs/ptb            (small model)
     python examples/ptb_word_lm_tf1_style.py --save_path runs/ptb --model tiny  (a quick try)
     python examples/ptb_word_lm_resume.py --save_path runs/ptb --epochs 1       (resume)
     tensorboard --logdir runs/ptb                                               (the curves)
"""

from __future__ import annotations

import collections
import os
import re
import sys
import time

import numpy as np

import sluice as tf  # the tutorial's code, with only this import changed

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _progress import TrainingLog, save_loss_curve  # noqa: E402

flags = tf.flags
flags.DEFINE_string("model", "small", "A type of model. Possible options are: tiny, small.")
flags.DEFINE_string("save_path", "runs/ptb_word_lm", "Model output directory.")
flags.DEFINE_integer("max_max_epoch", 0, "Train until this epoch (0: the config's).")
flags.DEFINE_integer("max_steps_per_epoch", 0, "Cut each epoch to this many steps (0: all).")
flags.DEFINE_float("text_fraction", 1.0, "Use this leading part of the text (a quick try).")
FLAGS = flags.FLAGS


# -- reader: the tutorial's reader.py, on Python's documentation ------------------------------


def _read_words() -> list[str]:
    """The words of Python's help topics, lower case, with "<eos>" at each line end."""
    from pydoc_data.topics import topics  # part of the standard library

    text = "\n".join(topics[name] for name in sorted(topics)).lower()
    text = text[: int(len(text) * FLAGS.text_fraction)]
    words = []
    for line in text.splitlines():
        tokens = re.findall(r"[a-z]+|[0-9]+|[^\sa-z0-9]", line)
        if tokens:
            words.extend(tokens + ["<eos>"])
    return words


def _build_vocab(words: list[str], vocab_size: int) -> dict[str, int]:
    """The `vocab_size - 1` most frequent words (ties by word) and "<unk>"."""
    counts = sorted(collections.Counter(words).items(), key=lambda kv: (-kv[1], kv[0]))
    vocabulary = [w for w, _ in counts[: vocab_size - 1]] + ["<unk>"]
    return {w: i for i, w in enumerate(vocabulary)}


def ptb_raw_data(vocab_size: int):
    """(train, valid, test, vocabulary): word ids of the first 80%, next 10% and last 10%."""
    words = _read_words()
    word_to_id = _build_vocab(words, vocab_size)
    unk = word_to_id["<unk>"]
    ids = np.array([word_to_id.get(w, unk) for w in words], np.int32)
    a, b = len(ids) * 8 // 10, len(ids) * 9 // 10
    return ids[:a], ids[a:b], ids[b:], word_to_id


def ptb_producer(raw_data, batch_size, num_steps, name=None):
    """Iterates on the raw data: returns (x, y), each [batch_size, num_steps], y being x moved
    one word on. The data is cut into `batch_size` rows read left to right, one window of
    `num_steps` per step, as the tutorial's reader does."""
    with tf.name_scope(name, "PTBProducer", [raw_data, batch_size, num_steps]):
        raw_data = tf.convert_to_tensor(raw_data, name="raw_data", dtype=tf.int32)
        data_len = tf.size(raw_data)
        batch_len = data_len // batch_size
        data = tf.reshape(raw_data[0 : batch_size * batch_len], [batch_size, batch_len])
        epoch_size = (batch_len - 1) // num_steps
        assertion = tf.assert_positive(
            epoch_size, message="epoch_size == 0, decrease batch_size or num_steps"
        )
        with tf.control_dependencies([assertion]):
            epoch_size = tf.identity(epoch_size, name="epoch_size")
        i = tf.train.range_input_producer(epoch_size, shuffle=False).dequeue()
        x = tf.strided_slice(data, [0, i * num_steps], [batch_size, (i + 1) * num_steps])
        x.set_shape([batch_size, num_steps])
        y = tf.strided_slice(data, [0, i * num_steps + 1], [batch_size, (i + 1) * num_steps + 1])
        y.set_shape([batch_size, num_steps])
        return x, y


# -- the model --------------------------------------------------------------------------------


class TinyConfig:
    """A model for tests: trains in seconds."""

    init_scale = 0.1
    learning_rate = 1.0
    max_grad_norm = 5
    num_layers = 2
    num_steps = 5
    hidden_size = 16
    max_epoch = 1
    max_max_epoch = 2
    keep_prob = 0.9
    lr_decay = 0.5
    batch_size = 4
    vocab_size = 200


class SmallConfig:
    """The tutorial's small configuration, on a smaller vocabulary."""

    init_scale = 0.1
    learning_rate = 1.0
    max_grad_norm = 5
    num_layers = 2
    num_steps = 20
    hidden_size = 200
    max_epoch = 4
    max_max_epoch = 13
    keep_prob = 1.0
    lr_decay = 0.5
    batch_size = 20
    vocab_size = 5000


class PTBInput:
    """The input data: the producer's (x, y) and the number of steps per epoch."""

    def __init__(self, config, data, name=None):
        self.batch_size = batch_size = config.batch_size
        self.num_steps = num_steps = config.num_steps
        self.epoch_size = ((len(data) // batch_size) - 1) // num_steps
        self.input_data, self.targets = ptb_producer(data, batch_size, num_steps, name=name)


class PTBModel:
    """The PTB model: embedding, stacked LSTM, softmax; the training op when is_training."""

    def __init__(self, is_training, config, input_):
        self._is_training = is_training
        self._input = input_
        self._name = "Train" if is_training else "Valid"
        batch_size, num_steps = input_.batch_size, input_.num_steps
        size, vocab_size = config.hidden_size, config.vocab_size

        with tf.device("/cpu:0"):
            embedding = tf.get_variable("embedding", [vocab_size, size], dtype=tf.float32)
            inputs = tf.nn.embedding_lookup(embedding, input_.input_data)
        if is_training and config.keep_prob < 1:
            inputs = tf.nn.dropout(inputs, config.keep_prob)

        output, state = self._build_rnn_graph(inputs, config, is_training)
        softmax_w = tf.get_variable("softmax_w", [size, vocab_size], dtype=tf.float32)
        softmax_b = tf.get_variable("softmax_b", [vocab_size], dtype=tf.float32)
        logits = tf.nn.xw_plus_b(output, softmax_w, softmax_b)
        logits = tf.reshape(logits, [batch_size, num_steps, vocab_size])
        loss = tf.contrib.seq2seq.sequence_loss(
            logits,
            input_.targets,
            tf.ones([batch_size, num_steps], dtype=tf.float32),
            average_across_timesteps=False,
            average_across_batch=True,
        )
        self._cost = tf.reduce_sum(loss)
        self._final_state = state
        if not is_training:
            return

        self._lr = tf.Variable(0.0, trainable=False, name="learning_rate")
        tvars = tf.trainable_variables()
        grads, _ = tf.clip_by_global_norm(tf.gradients(self._cost, tvars), config.max_grad_norm)
        optimizer = tf.train.GradientDescentOptimizer(self._lr)
        self._train_op = optimizer.apply_gradients(
            zip(grads, tvars), global_step=tf.train.get_or_create_global_step()
        )
        self._new_lr = tf.placeholder(tf.float32, shape=[], name="new_learning_rate")
        self._lr_update = tf.assign(self._lr, self._new_lr)

    def _build_rnn_graph(self, inputs, config, is_training):
        def make_cell():
            cell = tf.nn.rnn_cell.BasicLSTMCell(
                config.hidden_size, forget_bias=0.0, state_is_tuple=True, reuse=not is_training
            )
            if is_training and config.keep_prob < 1:
                cell = tf.nn.rnn_cell.DropoutWrapper(cell, output_keep_prob=config.keep_prob)
            return cell

        cell = tf.nn.rnn_cell.MultiRNNCell(
            [make_cell() for _ in range(config.num_layers)], state_is_tuple=True
        )
        self._initial_state = cell.zero_state(config.batch_size, tf.float32)
        outputs, state = tf.nn.dynamic_rnn(
            cell, inputs, initial_state=self._initial_state, dtype=tf.float32
        )
        output = tf.reshape(outputs, [-1, config.hidden_size])
        return output, state

    def assign_lr(self, session, lr_value):
        session.run(self._lr_update, feed_dict={self._new_lr: lr_value})

    def export_ops(self):
        """Names the tensors a later process needs in graph collections (the meta graph keeps
        them): the cost, the learning rate and its update, the states, the training op."""
        ops = {f"{self._name}/cost": self._cost, f"{self._name}/input_data": self._input.input_data}
        if self._is_training:
            ops.update(lr=self._lr, new_lr=self._new_lr, lr_update=self._lr_update)
            tf.add_to_collection("train_op", self._train_op)
        for name, op in ops.items():
            tf.add_to_collection(name, op)
        for c, h in self._initial_state:
            tf.add_to_collection(f"{self._name}/initial", c)
            tf.add_to_collection(f"{self._name}/initial", h)
        for c, h in self._final_state:
            tf.add_to_collection(f"{self._name}/final", c)
            tf.add_to_collection(f"{self._name}/final", h)

    @property
    def input(self):
        return self._input

    @property
    def initial_state(self):
        return self._initial_state

    @property
    def final_state(self):
        return self._final_state

    @property
    def cost(self):
        return self._cost

    @property
    def lr(self):
        return self._lr

    @property
    def train_op(self):
        return self._train_op


def run_epoch(session, model, eval_op=None, verbose=False, max_steps=0, summary_op=None):
    """Runs the model over one epoch of its data, carrying the LSTM state from step to step;
    returns the perplexity, and `summary_op`'s value from the last step when given (fetched
    with the step: running it on its own would take a batch from the queue)."""
    start_time = time.time()
    costs, iters = 0.0, 0
    state = session.run(model.initial_state)
    fetches = {"cost": model.cost, "final_state": model.final_state}
    if eval_op is not None:
        fetches["eval_op"] = eval_op
    epoch_size = model.input.epoch_size
    if max_steps:
        epoch_size = min(epoch_size, max_steps)
    for step in range(epoch_size):
        if summary_op is not None and step == epoch_size - 1:
            fetches["summary"] = summary_op
        feed_dict = {}
        for i, (c, h) in enumerate(model.initial_state):
            feed_dict[c] = state[i].c
            feed_dict[h] = state[i].h
        vals = session.run(fetches, feed_dict)
        state = vals["final_state"]
        costs += vals["cost"]
        iters += model.input.num_steps
        if verbose and step % max(epoch_size // 10, 1) == 10 % max(epoch_size // 10, 1):
            print(
                f"{step * 1.0 / epoch_size:.3f} perplexity: {np.exp(costs / iters):.3f} "
                f"speed: {iters * model.input.batch_size / (time.time() - start_time):.0f} wps",
                flush=True,
            )
    perplexity = np.exp(costs / iters)
    return perplexity if summary_op is None else (perplexity, vals["summary"])


def learning_rate(config, epoch):
    """The tutorial's schedule: constant for `max_epoch` epochs, then decaying each epoch."""
    return config.learning_rate * config.lr_decay ** max(epoch + 1 - config.max_epoch, 0.0)


def get_config():
    configs = {"tiny": TinyConfig, "small": SmallConfig}
    if FLAGS.model not in configs:
        raise ValueError(f"Invalid model: {FLAGS.model} (expected one of {sorted(configs)})")
    config = configs[FLAGS.model]()
    if FLAGS.max_max_epoch:
        config.max_max_epoch = FLAGS.max_max_epoch
    return config


def main(_):
    config = get_config()
    train_data, valid_data, _, word_to_id = ptb_raw_data(config.vocab_size)
    print(
        f"{len(train_data)} training words, {len(valid_data)} validation words, "
        f"vocabulary {len(word_to_id)}"
    )
    os.makedirs(FLAGS.save_path, exist_ok=True)

    with tf.Graph().as_default():
        tf.set_random_seed(0)
        initializer = tf.random_uniform_initializer(-config.init_scale, config.init_scale)
        with tf.name_scope("Train"):
            train_input = PTBInput(config=config, data=train_data, name="TrainInput")
            with tf.variable_scope("Model", reuse=None, initializer=initializer):
                m = PTBModel(is_training=True, config=config, input_=train_input)
            train_summary = tf.summary.merge(
                [
                    tf.summary.scalar("Training Loss", m.cost),
                    tf.summary.scalar("Learning Rate", m.lr),
                ]
            )
        with tf.name_scope("Valid"):
            valid_input = PTBInput(config=config, data=valid_data, name="ValidInput")
            with tf.variable_scope("Model", reuse=True, initializer=initializer):
                mvalid = PTBModel(is_training=False, config=config, input_=valid_input)
            valid_summary = tf.summary.scalar("Validation Loss", mvalid.cost)
        m.export_ops()
        mvalid.export_ops()
        epoch = tf.Variable(0, trainable=False, name="epoch")
        next_epoch = tf.assign_add(epoch, 1)
        tf.add_to_collection("epoch", epoch)
        tf.add_to_collection("next_epoch", next_epoch)
        for value in (config.learning_rate, config.lr_decay, config.max_epoch):
            tf.add_to_collection("lr_schedule", value)  # plain numbers travel in the meta graph

        # The Supervisor restores the latest checkpoint in save_path (or initializes), starts
        # the queue runners, writes the graph for TensorBoard and saves a checkpoint (with its
        # meta graph) every 10 minutes. Summaries are written here, fetched with the last step
        # of each epoch, not by its timer thread: that thread would run the cost on its own, and
        # so take batches from the queues.
        sv = tf.train.Supervisor(logdir=FLAGS.save_path, summary_op=None)
        with sv.managed_session() as session:
            first = int(session.run(epoch))
            if first:
                print(
                    f"resumed from {tf.train.latest_checkpoint(FLAGS.save_path)} at epoch {first}"
                )
            log = TrainingLog(
                os.path.join(FLAGS.save_path, "perplexity.csv"), fields=("train", "valid")
            )
            log.truncate(after_step=first)  # epochs past the checkpoint are done again
            for i in range(first, config.max_max_epoch):
                m.assign_lr(session, learning_rate(config, i))
                print(f"Epoch: {i + 1} Learning rate: {session.run(m.lr):.3f}")
                train_perplexity, summary = run_epoch(
                    session,
                    m,
                    eval_op=m.train_op,
                    verbose=True,
                    max_steps=FLAGS.max_steps_per_epoch,
                    summary_op=train_summary,
                )
                step = tf.train.global_step(session, sv.global_step)
                sv.summary_computed(session, summary, global_step=step)
                print(f"Epoch: {i + 1} Train Perplexity: {train_perplexity:.3f}")
                valid_perplexity, summary = run_epoch(
                    session, mvalid, max_steps=FLAGS.max_steps_per_epoch, summary_op=valid_summary
                )
                sv.summary_computed(session, summary, global_step=step)
                print(f"Epoch: {i + 1} Valid Perplexity: {valid_perplexity:.3f}", flush=True)
                session.run(next_epoch)
                log.append(i + 1, train=train_perplexity, valid=valid_perplexity)
                sv.saver.save(
                    session, os.path.join(FLAGS.save_path, "model"), global_step=sv.global_step
                )
            print(f"Saving model to {FLAGS.save_path}.")
        png = os.path.join(FLAGS.save_path, "perplexity.png")
        curves = {f"{name} perplexity": log.column(name) for name in ("train", "valid")}
        if save_loss_curve(
            png,
            curves,
            title="PTB-style word model on Python's docs",
            xlabel="epoch",
            ylabel="perplexity",
        ):
            print(f"perplexity curve: {png}")


if __name__ == "__main__":
    tf.app.run()
