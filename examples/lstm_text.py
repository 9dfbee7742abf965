"""A character-level LSTM language model of Python's own documentation, trained with `fit`.

The text ships with Python: `pydoc_data.topics` holds the help topics that `help("for")` prints
(about 460,000 characters of English prose and code, 94 distinct characters). It is cut into
windows of 64 characters; at every position of a window the model predicts the next character:

    Input(64 ids) -> Embedding(94, 32) -> LSTM(192, return_sequences=True) -> Dense(94, softmax)

After training, the model writes: starting from a passage of the held-out text, `model.predict`
gives the distribution of the next character, a seeded generator draws it (sharpened or
flattened by a temperature), and the window moves on by one character.

Checkpoints, in `--run-dir` (runs/lstm_text by default):
    backup/           BackupAndRestore: the whole training state (weights, Adam's moments, the
                      position in the data, the random state) at the end of every epoch
    checkpoints/      ModelCheckpoint: the weights after each epoch (the newest three)
    history.csv       CSVLogger: loss, accuracy and their validation values per epoch
    loss_curve.png    the curves of history.csv (when matplotlib is installed)
Run the script again and fit restores the backup: after an interruption (Ctrl-C, or `--steps`)
it redoes the interrupted epoch, with the same batches and losses as an uninterrupted run; after
a completed run, a larger `--epochs` trains the epochs it adds. Resume with the same settings.

Run:  python examples/lstm_text.py                # 10 epochs: 1-2 minutes on 2 CPU cores
      python examples/lstm_text.py --steps 150    # stop in the middle of epoch 2 ...
      python examples/lstm_text.py                # ... and finish from the backup of epoch 1
      python examples/lstm_text.py --epochs 12    # then train 2 epochs more
"""

from __future__ import annotations

import argparse
import os

import numpy as np

# The helpers sit next to this script (python puts the script's directory on sys.path).
from _data import TextData, load_python_docs, next_char_windows
from _fit import fit_until_stopped, plot_history

import sluice as sl


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=10, help="total epochs to reach")
    p.add_argument(
        "--steps",
        type=int,
        default=None,
        help="stop this run after this many steps, as an interruption would",
    )
    p.add_argument("--seq-length", type=int, default=64, help="characters per window")
    p.add_argument("--units", type=int, default=192, help="LSTM units")
    p.add_argument("--embedding", type=int, default=32, help="embedding size")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--learning-rate", type=float, default=1e-2)
    p.add_argument(
        "--text-fraction",
        type=float,
        default=1.0,
        help="train on this leading part of the text (a quick try: 0.05)",
    )
    p.add_argument("--sample-length", type=int, default=240, help="characters to generate")
    p.add_argument("--run-dir", default=os.path.join("runs", "lstm_text"))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--data-parallel",
        action="store_true",
        help="split each batch over every device (of every process, when started by "
        "python -m sluice.distribution.launch); --batch-size is the global batch",
    )
    args = p.parse_args(argv)
    for flag in ("epochs", "steps", "seq_length", "units", "embedding", "batch_size"):
        value = getattr(args, flag)
        if value is not None and value < 1:
            p.error(f"--{flag.replace('_', '-')} must be at least 1, got {value}")
    if not 0 < args.text_fraction <= 1:
        p.error(f"--text-fraction must be in (0, 1], got {args.text_fraction}")
    return args


def build_model(vocabulary_size: int, seq_length: int, units: int, embedding: int) -> sl.Model:
    """Ids [batch, seq_length] -> next-character probabilities [batch, seq_length, vocabulary]."""
    return sl.Sequential(
        [
            sl.Input((seq_length,), dtype="int32"),
            sl.layers.Embedding(vocabulary_size, embedding),
            sl.layers.LSTM(units, return_sequences=True),
            sl.layers.Dense(vocabulary_size, activation="softmax"),
        ],
        name="char_lstm",
    )


def paragraph_start(text: str, length: int) -> str:
    """The first `length` characters of the first paragraph of `text` that starts with a capital
    letter (a prompt of prose rather than a table or code); the start of `text` if none does."""
    for i in range(len(text) - length - 2):
        if text[i : i + 2] == "\n\n" and text[i + 2].isupper():
            return text[i + 2 : i + 2 + length]
    return text[:length]


def sample(
    model: sl.Model, prompt: np.ndarray, length: int, temperatures: list[float], seed: int
) -> list[np.ndarray]:
    """Continues the ids `prompt` [seq_length] by `length` ids, once per temperature.

    Each step predicts the next character from the last seq_length ones (all temperatures in
    one batch) and draws it from softmax(log(p) / temperature): below 1 sharper, above flatter.
    """
    rng = np.random.default_rng(seed)
    windows = np.tile(prompt, (len(temperatures), 1))
    drawn = []
    for _ in range(length):
        probabilities = model.predict(windows, verbose=0)[:, -1]  # [temperatures, vocabulary]
        logits = np.log(np.maximum(probabilities, 1e-12)) / np.array(temperatures)[:, None]
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        ids = np.array([rng.choice(len(row), p=row) for row in p], np.int32)
        drawn.append(ids)
        windows = np.concatenate([windows[:, 1:], ids[:, None]], axis=1)
    return list(np.stack(drawn, axis=1))


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.data_parallel:
        if os.environ.get("SLUICE_COORDINATOR"):  # one of several processes: join the others
            sl.distribution.initialize()
        sl.distribution.set_distribution(sl.distribution.DataParallel())
        print(f"data parallel over {len(sl.distribution.list_devices())} devices")
    sl.utils.set_random_seed(args.seed)
    docs: TextData = load_python_docs()
    ids = docs.encode(docs.text[: int(len(docs.text) * args.text_fraction)])
    inputs, targets = next_char_windows(ids, args.seq_length)
    n_val = max(1, len(inputs) // 20)  # the last 5% of the text (the last topics) for validation
    shards = len(sl.distribution.list_devices()) if args.data_parallel else 1
    n_val -= n_val % args.batch_size % shards  # every batch splits evenly over the devices
    x_val, y_val = inputs[-n_val:], targets[-n_val:]
    steps_per_epoch = (len(inputs) - n_val) // args.batch_size  # full batches: one step shape
    if steps_per_epoch < 1:
        raise SystemExit(
            f"--batch-size {args.batch_size} is more than the {len(inputs) - n_val} windows"
        )
    x, y = inputs[: steps_per_epoch * args.batch_size], targets[: steps_per_epoch * args.batch_size]
    print(
        f"Python docs: {len(ids):,} characters, {len(docs.vocabulary)} distinct; {len(x)} windows "
        f"of {args.seq_length} to train on ({steps_per_epoch} steps of {args.batch_size} per "
        f"epoch), {n_val} to validate on"
    )

    model = build_model(len(docs.vocabulary), args.seq_length, args.units, args.embedding)
    model.compile(
        optimizer=sl.optimizers.Adam(args.learning_rate, global_clipnorm=5.0),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    model.summary()

    history_csv = os.path.join(args.run_dir, "history.csv")
    callbacks = [
        sl.callbacks.CSVLogger(history_csv),
        sl.callbacks.ModelCheckpoint(
            os.path.join(args.run_dir, "checkpoints", "epoch{epoch:02d}.weights.h5"),
            max_to_keep=3,
        ),
        # Last, so that an epoch is backed up once logged and checkpointed; kept when fit ends
        # (delete_checkpoint=False) so that a larger --epochs goes on from it.
        sl.callbacks.BackupAndRestore(
            os.path.join(args.run_dir, "backup"), delete_checkpoint=False
        ),
    ]
    finished = fit_until_stopped(
        model,
        x,
        y,
        steps=args.steps,
        callbacks=callbacks,
        batch_size=args.batch_size,
        epochs=args.epochs,
        validation_data=(x_val, y_val),
    )
    if sl.distribution.is_chief():  # the process that writes the run's files
        plot_history(
            history_csv,
            steps_per_epoch,
            os.path.join(args.run_dir, "loss_curve.png"),
            title="character LSTM on the Python docs",
        )
    if not finished:  # stopped by --steps
        return

    held_out = docs.decode(x_val.reshape(-1))
    prompt = paragraph_start(held_out, args.seq_length)
    temperatures = [0.5, 0.8, 1.0]
    samples = sample(model, docs.encode(prompt), args.sample_length, temperatures, args.seed)
    if not sl.distribution.is_chief():
        return
    print(f"\nThe model goes on from {args.seq_length} characters of the held-out text:")
    for temperature, ids in zip(temperatures, samples):
        print(f"\n--- temperature {temperature} ---\n{prompt}{docs.decode(ids)}")


if __name__ == "__main__":
    main()
