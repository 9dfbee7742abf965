"""An LSTM (or GRU) that reads the name of a Unicode character and tells its category, with `fit`.

The data ship with Python: the Unicode Character Database (`unicodedata`). Each example is the
name of a character ("LATIN SMALL LETTER A", "COMBINING ACUTE ACCENT", "DIGIT FIVE", ...), read
one character at a time; the label is the character's major category: letter, mark, number,
punctuation or symbol (500 names each, 2000 to train on and 500 held out). The task of
examples/lstm_tf1_style.py, written here with Keras layers:

    Input(32 ids) -> Embedding(39, 16, mask_zero=True) -> LSTM(64, dropout=0.2,
                                                                recurrent_dropout=0.2)
                  -> Dense(5, softmax)

Names have at most 32 characters: id 0 pads them, the Embedding's mask turns the padding
into each name's length, and the LSTM's output is its state after the name's last character.
`--cell gru` uses a GRU, `--bidirectional` reads each name both ways.

Checkpoints, in `--run-dir` (runs/lstm_sequence by default): `backup/` (BackupAndRestore: the
whole training state at the end of every epoch), `checkpoints/` (ModelCheckpoint: the weights
of the best epoch by validation accuracy), `history.csv` (CSVLogger), `loss_curve.png`. Run
the script again and fit restores the backup: an interrupted run (Ctrl-C, or `--steps`) goes on
from the last epoch it completed as if never stopped; a completed one trains further with a larger
`--epochs`. Resume with the same settings.

Run:  python examples/lstm_sequence.py               # 30 epochs: under 30 s on 2 CPU cores
      python examples/lstm_sequence.py --steps 100   # stop in epoch 3 ...
      python examples/lstm_sequence.py               # ... and finish from the backup of epoch 2
      python examples/lstm_sequence.py --epochs 40   # then train 10 epochs more
"""

from __future__ import annotations

import argparse
import os

import numpy as np

# The helpers sit next to this script (python puts the script's directory on sys.path).
from _data import SequenceData, load_character_names
from _fit import fit_until_stopped, plot_history, read_history

import sluice as sl

RNN_LAYERS = {"lstm": sl.layers.LSTM, "gru": sl.layers.GRU}


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cell", choices=sorted(RNN_LAYERS), default="lstm")
    p.add_argument("--bidirectional", action="store_true", help="read each name both ways")
    p.add_argument("--units", type=int, default=64)
    p.add_argument("--embedding", type=int, default=16, help="embedding size")
    p.add_argument(
        "--dropout",
        type=float,
        default=0.2,
        help="dropout rate of the recurrent layer's inputs and states",
    )
    p.add_argument("--epochs", type=int, default=30, help="total epochs to reach")
    p.add_argument(
        "--steps",
        type=int,
        default=None,
        help="stop this run after this many steps, as an interruption would",
    )
    p.add_argument("--batch-size", type=int, default=50)
    p.add_argument("--learning-rate", type=float, default=5e-3)
    p.add_argument("--per-class", type=int, default=500, help="names of each category")
    p.add_argument("--run-dir", default=os.path.join("runs", "lstm_sequence"))
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    for flag in ("units", "embedding", "epochs", "steps", "batch_size", "per_class"):
        value = getattr(args, flag)
        if value is not None and value < 1:
            p.error(f"--{flag.replace('_', '-')} must be at least 1, got {value}")
    if not 0 <= args.dropout < 1:
        p.error(f"--dropout must be in [0, 1), got {args.dropout}")
    return args


def build_model(args: argparse.Namespace, data: SequenceData) -> sl.Model:
    """Padded ids [batch, max_length] -> category probabilities [batch, num_classes]."""
    rnn = RNN_LAYERS[args.cell](args.units, dropout=args.dropout, recurrent_dropout=args.dropout)
    if args.bidirectional:
        rnn = sl.layers.Bidirectional(rnn)
    return sl.Sequential(
        [
            sl.Input((data.train_ids.shape[1],), dtype="int32"),
            sl.layers.Embedding(len(data.alphabet) + 1, args.embedding, mask_zero=True),
            rnn,
            sl.layers.Dense(data.num_classes, activation="softmax"),
        ],
        name=f"names_{'bi' if args.bidirectional else ''}{args.cell}",
    )


def show_predictions(model: sl.Model, data: SequenceData, count: int = 8) -> None:
    """Prints the first held-out names with the model's category and its probability."""
    probabilities = model.predict(data.test_ids[:count], verbose=0)
    for ids, label, p in zip(data.test_ids, data.test_labels, probabilities):
        name = "".join(data.alphabet[i - 1] for i in ids if i)
        guess = int(np.argmax(p))
        mark = "ok" if guess == label else f"wrong, is {data.class_names[label]}"
        print(f"  {name:32s} -> {data.class_names[guess]:11s} {p[guess]:4.0%}  ({mark})")


def main(argv=None) -> None:
    args = parse_args(argv)
    sl.utils.set_random_seed(args.seed)
    data = load_character_names(per_class=args.per_class, seed=args.seed)
    steps_per_epoch = len(data.train_ids) // args.batch_size
    if steps_per_epoch < 1:
        raise SystemExit(
            f"--batch-size {args.batch_size} is more than the {len(data.train_ids)} names"
        )
    train = steps_per_epoch * args.batch_size  # full batches only: every step has one shape
    print(
        f"{len(data.train_ids) + len(data.test_ids)} character names in {data.num_classes} "
        f"categories; {train} to train on ({steps_per_epoch} steps of {args.batch_size} per "
        f"epoch), {len(data.test_ids)} held out"
    )

    model = build_model(args, data)
    model.compile(
        optimizer=sl.optimizers.Adam(args.learning_rate),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    model.summary()

    history_csv = os.path.join(args.run_dir, "history.csv")
    best = read_history(history_csv).get("val_accuracy")  # the best epoch of earlier runs
    callbacks = [
        sl.callbacks.CSVLogger(history_csv),
        sl.callbacks.ModelCheckpoint(
            os.path.join(args.run_dir, "checkpoints", "best.weights.h5"),
            monitor="val_accuracy",
            save_best_only=True,
            initial_value_threshold=max(best) if best else None,
        ),
        # Last, so that an epoch is backed up once logged and checkpointed; kept when fit ends
        # (delete_checkpoint=False) so that a larger --epochs goes on from it.
        sl.callbacks.BackupAndRestore(
            os.path.join(args.run_dir, "backup"), delete_checkpoint=False
        ),
    ]
    finished = fit_until_stopped(
        model,
        data.train_ids[:train],
        data.train_labels[:train],
        steps=args.steps,
        callbacks=callbacks,
        batch_size=args.batch_size,
        epochs=args.epochs,
        validation_data=(data.test_ids, data.test_labels),
    )
    plot_history(
        history_csv,
        steps_per_epoch,
        os.path.join(args.run_dir, "loss_curve.png"),
        title=f"{model.name} on Unicode character names",
    )
    if not finished:  # stopped by --steps
        return
    loss, accuracy = model.evaluate(data.test_ids, data.test_labels, verbose=0)
    print(
        f"held-out names: loss {loss:.4f}, accuracy {accuracy:.1%}"
        f" (chance: {1 / data.num_classes:.0%})"
    )
    show_predictions(model, data)


if __name__ == "__main__":
    main()
