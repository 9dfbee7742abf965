"""A VGG network built from Keras layers and trained with `fit` on handwritten digits.

The network is Keras's `VGG16` layer for layer (`block1_conv1`, ..., `block5_pool`, `flatten`,
`fc1`, `fc2`, `predictions`), with dropout after fc1 and fc2: 3x3 convolutions with ReLU, a 2x2
max-pool closing each block. `--config vgg11|vgg13|vgg16|vgg19` picks the depth; `--width`
divides every layer's width so that it trains in minutes on a laptop CPU.

The data are scikit-learn's handwritten digits (1797 8x8 grayscale images, 10 classes; they
ship inside scikit-learn, no download), upsampled to 32x32 so the five poolings leave a 1x1 map.
The same network and data as examples/vgg_tf1_style.py, which builds the graph by hand.

Checkpoints, in `--run-dir` (runs/vgg by default): `backup/` (BackupAndRestore: the whole
training state at the end of every epoch), `checkpoints/` (ModelCheckpoint: the weights of the
best epoch by test accuracy), `history.csv` (CSVLogger), `loss_curve.png`. Run the script again
and fit restores the backup: an interrupted run (Ctrl-C, or `--steps`) goes on from the last
epoch it completed as if never stopped; a completed one trains further with a larger `--epochs`.
Resume with the same settings.

Run:  pip install scikit-learn matplotlib       # matplotlib is optional (the plot)
      python examples/vgg.py                    # vgg16 / 4, 10 epochs: 1.5-2.5 minutes on 2 cores
      python examples/vgg.py --steps 50         # stop in epoch 3 ...
      python examples/vgg.py                    # ... and finish from the backup of epoch 2
      python examples/vgg.py --epochs 15        # then train 5 epochs more
"""

from __future__ import annotations

import argparse
import os

import numpy as np

# The helpers sit next to this script (python puts the script's directory on sys.path).
from _data import ImageData, load_digits
from _fit import fit_until_stopped, plot_history, read_history

import sluice as sl

# Output channels of each 3x3 convolution, one list per block; a 2x2 max-pool ends each block.
VGG_CONFIGS = {
    "vgg11": [[64], [128], [256, 256], [512, 512], [512, 512]],
    "vgg13": [[64, 64], [128, 128], [256, 256], [512, 512], [512, 512]],
    "vgg16": [[64, 64], [128, 128], [256, 256, 256], [512, 512, 512], [512, 512, 512]],
    "vgg19": [[64, 64], [128, 128], [256] * 4, [512] * 4, [512] * 4],
}
FC_UNITS = 4096  # fc1 and fc2, divided by --width like the convolutions
IMAGE_SIZE = 32  # the 8x8 digits upsampled 4x: five 2x2 poolings leave a 1x1 map


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", choices=sorted(VGG_CONFIGS), default="vgg16")
    p.add_argument("--width", type=int, default=4, help="divide every layer's width by this")
    p.add_argument("--epochs", type=int, default=10, help="total epochs to reach")
    p.add_argument(
        "--steps",
        type=int,
        default=None,
        help="stop this run after this many steps, as an interruption would",
    )
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--learning-rate", type=float, default=1e-3)
    p.add_argument("--dropout", type=float, default=0.3, help="dropout rate after fc1 and fc2")
    p.add_argument(
        "--train-images",
        type=int,
        default=None,
        help="train on this many images only (a quick try)",
    )
    p.add_argument("--run-dir", default=os.path.join("runs", "vgg"))
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.width < 1 or 64 % args.width:
        p.error(f"--width must divide 64 (1, 2, 4, 8, 16, 32 or 64), got {args.width}")
    for flag in ("epochs", "steps", "batch_size", "train_images"):
        value = getattr(args, flag)
        if value is not None and value < 1:
            p.error(f"--{flag.replace('_', '-')} must be at least 1, got {value}")
    if not 0 <= args.dropout < 1:
        p.error(f"--dropout must be in [0, 1), got {args.dropout}")
    return args


def build_vgg(
    config: str, width: int, image_shape: tuple[int, ...], num_classes: int, dropout: float
) -> sl.Model:
    """VGG as a Sequential model: images [batch, *image_shape] -> class probabilities."""
    layers: list = [sl.Input(image_shape)]
    for block, widths in enumerate(VGG_CONFIGS[config], start=1):
        for i, filters in enumerate(widths, start=1):
            layers.append(
                sl.layers.Conv2D(
                    filters // width,
                    3,
                    padding="same",
                    activation="relu",
                    kernel_initializer="he_normal",
                    name=f"block{block}_conv{i}",
                )
            )
        layers.append(sl.layers.MaxPooling2D(2, name=f"block{block}_pool"))
    layers.append(sl.layers.Flatten(name="flatten"))
    for name in ("fc1", "fc2"):
        layers.append(
            sl.layers.Dense(
                FC_UNITS // width, activation="relu", kernel_initializer="he_normal", name=name
            )
        )
        layers.append(sl.layers.Dropout(dropout))
    layers.append(sl.layers.Dense(num_classes, activation="softmax", name="predictions"))
    return sl.Sequential(layers, name=f"{config}_width{width}")


def main(argv=None) -> None:
    args = parse_args(argv)
    sl.utils.set_random_seed(args.seed)
    data: ImageData = load_digits(image_size=IMAGE_SIZE, seed=args.seed)
    n = len(data.train_images) if args.train_images is None else args.train_images
    steps_per_epoch = min(n, len(data.train_images)) // args.batch_size
    if steps_per_epoch < 1:
        raise SystemExit(f"--batch-size {args.batch_size} is more than the {n} training images")
    train = steps_per_epoch * args.batch_size  # full batches only: every step has one shape
    print(
        f"digits: {train} training and {len(data.test_images)} test images {data.image_shape}, "
        f"{data.num_classes} classes; {steps_per_epoch} steps of {args.batch_size} per epoch"
    )

    model = build_vgg(args.config, args.width, data.image_shape, data.num_classes, args.dropout)
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
        data.train_images[:train],
        data.train_labels[:train],
        steps=args.steps,
        callbacks=callbacks,
        batch_size=args.batch_size,
        epochs=args.epochs,
        validation_data=(data.test_images, data.test_labels),
    )
    plot_history(
        history_csv,
        steps_per_epoch,
        os.path.join(args.run_dir, "loss_curve.png"),
        title=f"{args.config} / {args.width} on digits",
    )
    if not finished:  # stopped by --steps
        return
    probabilities = model.predict(data.test_images, verbose=0)
    predicted = np.argmax(probabilities, axis=1)
    print(
        f"test accuracy {np.mean(predicted == data.test_labels):.1%} "
        f"({len(data.test_images)} images); per digit:"
    )
    for digit, name in enumerate(data.class_names):
        mine = data.test_labels == digit
        print(f"  {name}: {np.mean(predicted[mine] == digit):6.1%} of {mine.sum()}")


if __name__ == "__main__":
    main()
