"""Neural style transfer (Gatys et al., 2015) with Keras's VGG19, in the TensorFlow 1.x style.

The generated image is a Variable, set once with `assign` to the content image and then
optimised by `AdamOptimizer(2.0).minimize`: its VGG19 features should match the content image's
at `block5_conv2` (content loss) and the Gram matrices of the style image's features at
`block1_conv1` ... `block5_conv1` (style loss), plus a little total variation (smoothness);
the losses and their weights are those of Keras's style-transfer example.
One graph holds the three images as one batch [content, style, generated] fed through
`sl.applications.VGG19(include_top=False)`; the VGG weights are not trained.

The VGG19 weights are Keras's published ImageNet file
(`vgg19_weights_tf_dim_ordering_tf_kernels_notop.h5`, a Keras 2 HDF5 file) from the Keras cache
(`~/.keras/models/`), or the file given with `--weights` (Keras 2, Keras 3 or sluice weights).
Without either, VGG19 keeps random weights and the script says so: it still runs and shows the
machinery, but the picture will not look like a style transfer.

The images: `--content` and `--style` (PNG or JPEG with Pillow installed, or `.npy` arrays
[height, width, 3] of 0-255 RGB); by default two synthetic pictures (a landscape and colored
stripes), so the script needs no files. The result is written as `<out-dir>/image-<step>.png`
every `--image-every` steps (sluice/_keras/utils/png.py: no imaging library needed).

Checkpoints: `sl.train.Saver(max_to_keep=5)` saves the image, Adam's moments and the global
step to `<out-dir>/style-<step>.h5` every `--save-every` steps and at the end. Run the script
again with the same `--out-dir` and it restores the latest checkpoint and goes on for `--steps`
more steps. Losses per step go to `<out-dir>/history.csv`.

Run:  python examples/vgg19_style_transfer.py --size 128 --steps 100
      python examples/vgg19_style_transfer.py --steps 50       # ... 50 more, from the checkpoint
      python examples/vgg19_style_transfer.py --weights vgg19_notop.h5 --content me.png \\
          --style starry_night.png --size 256 --steps 500 --out-dir runs/me
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

# The helpers sit next to this script (python puts the script's directory on sys.path).
from _progress import ProgressBar, TrainingLog

import sluice as sl
from sluice._keras.applications import imagenet_utils, vgg19
from sluice._keras.utils import png as png_files

CONTENT_LAYER = "block5_conv2"
STYLE_LAYERS = ["block1_conv1", "block2_conv1", "block3_conv1", "block4_conv1", "block5_conv1"]
NOTOP_FILE = "vgg19_weights_tf_dim_ordering_tf_kernels_notop.h5"
NOTOP_URL = f"https://storage.googleapis.com/tensorflow/keras-applications/vgg19/{NOTOP_FILE}"
# Settings a checkpoint depends on: continuing with others is refused (config.json says which).
CHECKPOINT_SETTINGS = ("size", "content", "style", "seed")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=128, help="the image's height and width (>= 32)")
    p.add_argument("--steps", type=int, default=100, help="optimisation steps in this run")
    p.add_argument("--out-dir", default=os.path.join("runs", "vgg19_style_transfer"))
    p.add_argument("--weights", default=None, help="a VGG19 weights file (default: Keras cache)")
    p.add_argument("--content", default=None, help="content image (.png/.jpg/.npy)")
    p.add_argument("--style", default=None, help="style image (.png/.jpg/.npy)")
    p.add_argument("--learning-rate", type=float, default=2.0)
    p.add_argument("--content-weight", type=float, default=2.5e-8)
    p.add_argument("--style-weight", type=float, default=1e-6)
    p.add_argument("--tv-weight", type=float, default=1e-6, help="total variation weight")
    p.add_argument("--save-every", type=int, default=10, help="checkpoint every this many steps")
    p.add_argument("--image-every", type=int, default=10, help="write a PNG every this many steps")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.size < 32:
        p.error(f"--size must be at least 32 (VGG19 pools the image 5 times), got {args.size}")
    for flag in ("steps", "save_every", "image_every"):
        if getattr(args, flag) < 1:
            p.error(f"--{flag.replace('_', '-')} must be at least 1, got {getattr(args, flag)}")
    if args.weights is not None and not os.path.isfile(args.weights):
        p.error(f"--weights: no file at {args.weights!r}")
    return args


# -- images ---------------------------------------------------------------------------------------
def synthetic_images(size: int) -> tuple[np.ndarray, np.ndarray]:
    """A landscape (sky, sun, hills) and a style picture (colored diagonal stripes), RGB 0-255."""
    y, x = np.mgrid[0:size, 0:size] / size
    content = np.stack([90 + 80 * y, 150 + 60 * y, 235 - 40 * y], axis=-1)  # sky
    sun = (x - 0.72) ** 2 + (y - 0.25) ** 2 < 0.012
    content[sun] = [250, 220, 90]
    hills = y > 0.62 + 0.08 * np.sin(9 * x)
    content[hills] = np.stack([40 + 60 * y, 120 + 50 * y, 50 + 20 * y], axis=-1)[hills]
    phase = np.floor((x + y) * 8) % 3
    palette = np.array([[230, 60, 40], [250, 200, 30], [30, 60, 160]], dtype=float)
    style = palette[phase.astype(int)] * (0.75 + 0.25 * np.cos(40 * x)[..., None])
    return content.astype(np.float32), style.astype(np.float32)


def load_image(path: str, size: int) -> np.ndarray:
    """An RGB image [size, size, 3] (0-255 floats) from a .npy array or, with Pillow, a PNG/JPEG;
    resized by nearest neighbour."""
    if path.endswith(".npy"):
        image = np.load(path, allow_pickle=False)
    else:
        try:
            from PIL import Image
        except ImportError:
            raise SystemExit(
                f"Reading {path} needs Pillow (pip install pillow), or pass a .npy array."
            ) from None
        with Image.open(path) as picture:
            image = np.asarray(picture.convert("RGB"))
    if image.ndim != 3 or image.shape[-1] != 3 or not np.issubdtype(image.dtype, np.number):
        raise SystemExit(f"{path}: expected an RGB image [height, width, 3], got {image.shape}.")
    rows = np.arange(size) * image.shape[0] // size
    cols = np.arange(size) * image.shape[1] // size
    return image[rows][:, cols].astype(np.float32)


def deprocess(image: np.ndarray) -> np.ndarray:
    """The inverse of VGG19's `preprocess_input` (BGR minus the ImageNet mean) as RGB uint8."""
    bgr = image + np.asarray(imagenet_utils.CAFFE_MEAN_BGR, dtype=np.float32)
    return np.clip(bgr[..., ::-1], 0, 255).astype(np.uint8)


# -- the graph ------------------------------------------------------------------------------------
def gram_matrix(features):
    """F^T F of one image's features [1, height, width, channels]: [channels, channels]."""
    channels = features.shape[-1]
    flat = sl.reshape(features, [-1, channels])
    return sl.matmul(flat, flat, transpose_a=True)


def style_loss(style_features, generated_features, image_pixels: int):
    """The style loss of one layer as Keras's style-transfer example computes it:
    sum((G_style - G)^2) / (4 * 3^2 * image_pixels^2), whatever the layer's size (its weights
    are tuned for this scale)."""
    difference = gram_matrix(style_features) - gram_matrix(generated_features)
    return sl.reduce_sum(sl.square(difference)) / (4.0 * 3**2 * image_pixels**2)


def total_variation_loss(image):
    """Keras's example's smoothness term: sum((dx^2 + dy^2) ^ 1.25)."""
    size = image.shape[1]
    dy = sl.square(image[:, : size - 1, : size - 1, :] - image[:, 1:, : size - 1, :])
    dx = sl.square(image[:, : size - 1, : size - 1, :] - image[:, : size - 1, 1:, :])
    return sl.reduce_sum(sl.pow(dy + dx, 1.25))


def build_graph(args: argparse.Namespace, content: np.ndarray, style: np.ndarray, weights_file):
    """The image Variable and its assign op, VGG19 (with the weights of `weights_file`, or
    random ones), the losses, the training op, the Saver."""
    sl.set_random_seed(args.seed)
    shape = [1, args.size, args.size, 3]
    image = sl.Variable(sl.zeros(shape), name="generated_image")
    initial_image = sl.placeholder(sl.float32, shape, name="initial_image")
    set_image = image.assign(initial_image)
    references = sl.constant(vgg19.preprocess_input(np.stack([content, style])), name="references")
    batch = sl.concat([references, image.value()], axis=0)  # [content, style, generated]
    vgg = sl.applications.VGG19(include_top=False, weights=weights_file, input_tensor=batch)

    def features(layer_name, index):  # of image `index` of the batch
        return vgg.get_layer(layer_name).output[index : index + 1]

    content_loss = sl.reduce_sum(sl.square(features(CONTENT_LAYER, 2) - features(CONTENT_LAYER, 0)))
    styles = [style_loss(features(n, 1), features(n, 2), args.size**2) for n in STYLE_LAYERS]
    loss = (
        args.content_weight * content_loss
        + args.style_weight / len(STYLE_LAYERS) * sl.add_n(styles)
        + args.tv_weight * total_variation_loss(image.value())
    )
    global_step = sl.train.get_or_create_global_step()
    optimizer = sl.train.AdamOptimizer(args.learning_rate)
    train_op = optimizer.minimize(loss, var_list=[image], global_step=global_step)
    vgg_ids = {id(v) for v in vgg.weights}
    state = [v for v in sl.global_variables() if id(v) not in vgg_ids]  # image, Adam, step
    saver = sl.train.Saver(var_list=state, max_to_keep=5)
    return vgg, image, (set_image, initial_image), loss, train_op, global_step, saver


def vgg_weights(path: str | None) -> tuple[str | None, str]:
    """The VGG19 weights to use (a file, or None for random ones) and a line saying which."""
    if path is not None:
        return path, f"VGG19 weights: {path}"
    cached = os.path.join(imagenet_utils.keras_cache_dir(), NOTOP_FILE)
    if os.path.isfile(cached):
        return cached, f"VGG19 weights: Keras's ImageNet file {cached}"
    return None, (
        "NOTE: no VGG19 weights: VGG19 keeps RANDOM weights, so the picture will not look like "
        f"a style transfer. Download {NOTOP_URL} to {cached} or pass --weights FILE."
    )


def copy_weights(sess, model) -> None:
    """Loads the model's weights (which it read from its file) into `sess`."""
    for variable, value in zip(model.weights, model.get_weights()):
        variable.load(value, sess)


def load_random_weights(sess, model, seed: int) -> None:
    """Loads Keras's initial weights into `sess`: kernels Glorot-uniform, biases zero. Drawn
    by NumPy from `seed`: the same on every run, which resuming relies on (and quicker than the
    graph's initializers, which XLA would compile for each of the 20 million values)."""
    rng = np.random.default_rng(seed)
    for variable in model.weights:
        shape = variable.shape.as_list()
        if len(shape) == 1:
            variable.load(np.zeros(shape, np.float32), sess)
            continue
        receptive = int(np.prod(shape[:-2]))
        limit = np.sqrt(6.0 / (receptive * (shape[-2] + shape[-1])))
        variable.load(rng.uniform(-limit, limit, size=shape).astype(np.float32), sess)


def check_out_dir(args: argparse.Namespace) -> None:
    """Creates the output directory, or checks that its checkpoints were made with these
    settings."""
    os.makedirs(args.out_dir, exist_ok=True)
    path = os.path.join(args.out_dir, "config.json")
    settings = {k: getattr(args, k) for k in CHECKPOINT_SETTINGS}
    if os.path.exists(path) and sl.train.latest_checkpoint(args.out_dir):
        with open(path) as f:
            saved = json.load(f)
        changed = [
            f"--{k} {saved.get(k)} (now {v})" for k, v in settings.items() if saved.get(k) != v
        ]
        if changed:
            raise SystemExit(
                f"{args.out_dir} holds checkpoints made with {', '.join(changed)}.\n"
                "Pass the same settings to continue, or another --out-dir to start afresh."
            )
    with open(path, "w") as f:
        json.dump(settings, f, indent=2)


def main(argv=None) -> None:
    args = parse_args(argv)
    check_out_dir(args)
    content, style = synthetic_images(args.size)
    if args.content:
        content = load_image(args.content, args.size)
    if args.style:
        style = load_image(args.style, args.size)
    log = TrainingLog(os.path.join(args.out_dir, "history.csv"), ("loss",))
    prefix = os.path.join(args.out_dir, "style")
    weights_file, note = vgg_weights(args.weights)
    print(note)
    with sl.Graph().as_default():
        vgg, image, (set_image, initial_image), loss, train_op, global_step, saver = build_graph(
            args, content, style, weights_file
        )
        with sl.Session() as sess:
            vgg_ids = {id(v) for v in vgg.weights}
            others = [v for v in sl.global_variables() if id(v) not in vgg_ids]
            sess.run(sl.variables_initializer(others))
            if weights_file is None:
                load_random_weights(sess, vgg, args.seed)
            else:
                copy_weights(sess, vgg)
            latest = sl.train.latest_checkpoint(args.out_dir)
            if latest:
                saver.restore(sess, latest)
                print(f"restored {latest}")
            else:
                sess.run(set_image, {initial_image: vgg19.preprocess_input(content[None])})
            step = int(sess.run(global_step))
            log.truncate(after_step=step)
            stop, saved, start = step + args.steps, step, time.monotonic()
            bar = ProgressBar(args.steps, f"steps {step + 1}-{stop}")
            try:
                while step < stop:
                    value, _ = sess.run([loss, train_op])
                    step += 1
                    log.append(step, loss=value)
                    bar.update(args.steps - (stop - step), loss=value)
                    if step % args.image_every == 0:
                        png = os.path.join(args.out_dir, f"image-{step}.png")
                        png_files.write_png(png, deprocess(sess.run(image)[0]))
                    if step % args.save_every == 0:
                        saver.save(sess, prefix, global_step=global_step)
                        saved = step
            except KeyboardInterrupt:
                print(f"\ninterrupted; run again to continue from the checkpoint of step {saved}")
                raise SystemExit(130) from None
            bar.close(f"loss {value:.4g}")
            if step != saved:
                saver.save(sess, prefix, global_step=global_step)
            final = os.path.join(args.out_dir, f"image-{step}.png")
            if not os.path.exists(final):
                png_files.write_png(final, deprocess(sess.run(image)[0]))
    print(
        f"step {step}: image {final}, checkpoint {sl.train.latest_checkpoint(args.out_dir)} "
        f"({time.monotonic() - start:.0f} s in this run)"
    )


if __name__ == "__main__":
    main()
