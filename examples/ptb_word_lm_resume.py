"""Goes on training the model of `ptb_word_lm_tf1_style.py` from its files alone.

No model code: the graph comes from the meta graph saved beside the latest checkpoint in
`--save_path` (`model-<step>.meta`), the weights, learning rate, global step and epoch counter
from the checkpoint, and the tensors to run from the graph collections the training script
filled ("train_op", "Train/cost", "Train/initial", ...). The input pipeline is part of the graph
(the text is a constant, read by a `range_input_producer` queue), so it comes back too; its
queue runners are started again here. Each epoch is saved with its meta graph, so the two
scripts can take turns.

Run: python examples/ptb_word_lm_tf1_style.py --save_path runs/ptb --model tiny
     python examples/ptb_word_lm_resume.py --save_path runs/ptb --epochs 2
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import sluice as tf


def carried_state(initial, final):
    """Pairs each initial-state placeholder with the final-state tensor that feeds it next."""
    if len(initial) != len(final):
        raise ValueError(f"{len(initial)} initial state tensors but {len(final)} final ones")
    return list(zip(initial, final))


def run_epoch(session, cost, state_pairs, num_steps, steps, train_op=None):
    """The training script's run_epoch, on tensors found by name: returns the perplexity."""
    fetches = {"cost": cost, "final": [f for _, f in state_pairs]}
    if train_op is not None:
        fetches["train_op"] = train_op
    state = session.run([i for i, _ in state_pairs])
    costs = 0.0
    for _ in range(steps):
        vals = session.run(fetches, {i: s for (i, _), s in zip(state_pairs, state)})
        state, costs = vals["final"], costs + vals["cost"]
    return float(np.exp(costs / (steps * num_steps)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--save_path", default="runs/ptb_word_lm", help="the training's folder")
    parser.add_argument("--epochs", type=int, default=1, help="epochs to train")
    parser.add_argument(
        "--max_steps_per_epoch",
        type=int,
        default=0,
        help="cut each epoch to this many steps (0: all)",
    )
    args = parser.parse_args()
    checkpoint = tf.train.latest_checkpoint(args.save_path)
    if checkpoint is None:
        raise SystemExit(f"no checkpoint in {args.save_path}: run ptb_word_lm_tf1_style.py first")

    saver = tf.train.import_meta_graph(checkpoint + ".meta")
    cost = tf.get_collection("Train/cost")[0]
    train_op = tf.get_collection("train_op")[0]
    lr, new_lr = tf.get_collection("lr")[0], tf.get_collection("new_lr")[0]
    lr_update = tf.get_collection("lr_update")[0]
    epoch, next_epoch = tf.get_collection("epoch")[0], tf.get_collection("next_epoch")[0]
    train_state = carried_state(
        tf.get_collection("Train/initial"), tf.get_collection("Train/final")
    )
    valid_cost = tf.get_collection("Valid/cost")[0]
    valid_state = carried_state(
        tf.get_collection("Valid/initial"), tf.get_collection("Valid/final")
    )
    base_lr, lr_decay, max_epoch = tf.get_collection("lr_schedule")
    # The producers' epoch sizes and window lengths are in the graph too.
    graph = tf.get_default_graph()
    train_steps = graph.get_tensor_by_name("Train/TrainInput/epoch_size:0")
    valid_steps = graph.get_tensor_by_name("Valid/ValidInput/epoch_size:0")
    num_steps = int(tf.get_collection("Train/input_data")[0].shape[1])
    global_step = tf.train.get_global_step()

    with tf.Session() as session:
        saver.restore(session, checkpoint)
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess=session, coord=coord)
        first = int(session.run(epoch))
        print(
            f"resumed from {checkpoint}: epoch {first}, global step "
            f"{tf.train.global_step(session, global_step)}, learning rate "
            f"{session.run(lr):.3f}"
        )
        steps, vsteps = session.run([train_steps, valid_steps])
        if args.max_steps_per_epoch:
            steps = min(steps, args.max_steps_per_epoch)
            vsteps = min(vsteps, args.max_steps_per_epoch)
        try:
            for i in range(first, first + args.epochs):
                start = time.time()
                # the training script's schedule, from the numbers it kept in the graph
                session.run(lr_update, {new_lr: base_lr * lr_decay ** max(i + 1 - max_epoch, 0)})
                train = run_epoch(session, cost, train_state, num_steps, steps, train_op)
                valid = run_epoch(session, valid_cost, valid_state, num_steps, vsteps)
                session.run(next_epoch)
                path = saver.save(
                    session, os.path.join(args.save_path, "model"), global_step=global_step
                )
                print(
                    f"Epoch: {i + 1} Train Perplexity: {train:.3f} Valid Perplexity: "
                    f"{valid:.3f} ({time.time() - start:.0f} s) saved {path}",
                    flush=True,
                )
        finally:
            coord.request_stop()
            coord.join(threads)


if __name__ == "__main__":
    main()
