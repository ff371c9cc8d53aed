"""Shapes: a synthetic, learnable 10-class image set (colored shapes on noisy backgrounds), made
with numpy from a seed, and small Keras 3 classifiers trained on it. Classes differ by shape and
color; pairs share one or the other (circle_red / ring_red / circle_blue), so both matter.

    python models/shapes.py OUT [--kind tiny|mobilenet_v2|resnet50] [--size N] [--train N]
                                [--val N] [--epochs N] [--calibration N] [--images]

writes OUT/model.keras (input `image`, [1, N, N, 3] in [0, 1]; output `probs`, softmax),
OUT/train.npz (calibration: the first --calibration training images), OUT/val.npz (held-out,
with `labels`), with --images OUT/val_images/<class>/*.png, and prints the val top-1.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

# class name -> (shape, hue in degrees)
CLASSES = {
    "00_circle_red": ("circle", 0), "01_square_green": ("square", 120),
    "02_triangle_blue": ("triangle", 230), "03_cross_yellow": ("cross", 55),
    "04_ring_red": ("ring", 0), "05_diamond_green": ("diamond", 120),
    "06_frame_blue": ("frame", 230), "07_xcross_yellow": ("xcross", 55),
    "08_circle_blue": ("circle", 230), "09_triangle_red": ("triangle", 0),
}
NAMES = list(CLASSES)
# kind -> defaults (input size, training images, epochs); val top-1 0.98 (7 s), 0.92 (3 min), 0.87 (6 min)
KINDS = {"tiny": (32, 600, 30), "mobilenet_v2": (64, 1500, 12), "resnet50": (64, 1500, 8)}


def _mask(shape: str, dx, dy, r):
    """Boolean mask of `shape` of radius r at offsets (dx, dy) from its center."""
    ax, ay, d = np.abs(dx), np.abs(dy), np.hypot(dx, dy)
    if shape in ("circle", "ring"):
        return (d <= r) & ((d >= 0.6 * r) if shape == "ring" else True)
    if shape in ("square", "frame"):
        edge = np.maximum(ax, ay)
        return (edge <= 0.85 * r) & ((edge >= 0.5 * r) if shape == "frame" else True)
    if shape == "diamond":
        return ax + ay <= r
    if shape == "xcross":
        ax, ay = np.abs(dx + dy) / np.sqrt(2), np.abs(dx - dy) / np.sqrt(2)
    if shape in ("cross", "xcross"):
        return ((ax <= 0.3 * r) & (ay <= r)) | ((ay <= 0.3 * r) & (ax <= r))
    if shape == "triangle":  # apex up
        return (dy >= -r) & (dy <= 0.7 * r) & (ax <= (dy + r) * 0.56)
    raise ValueError(shape)


def _rgb(hue, sat, val):
    """HSV (hue in degrees) to RGB, elementwise."""
    k = (np.array([5.0, 3.0, 1.0]) + hue / 60.0) % 6
    return val * (1 - sat * np.clip(np.minimum(k, 4 - k), 0, 1))


def make(count: int, size: int = 32, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """`count` images (float32 [N, size, size, 3] in [0, 1]) and their labels (int64 [N]),
    classes balanced and shuffled, the same for the same seed."""
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.arange(count) % len(NAMES)).astype(np.int64)
    grid = np.arange(size, dtype=np.float32) + 0.5
    x = np.empty((count, size, size, 3), np.float32)
    for n, label in enumerate(labels):
        shape, hue = CLASSES[NAMES[label]]
        r = rng.uniform(0.22, 0.4) * size
        cx, cy = rng.uniform(r, size - r, 2)
        background = _rgb(rng.uniform(0, 360), rng.uniform(0, 0.4), rng.uniform(0.1, 0.6))
        color = _rgb(hue + rng.uniform(-15, 15), rng.uniform(0.6, 1), rng.uniform(0.65, 1))
        mask = _mask(shape, grid[None, :] - cx, grid[:, None] - cy, r)[..., None]
        image = np.where(mask, color, background) + rng.normal(0, 0.08, (size, size, 3))
        x[n] = np.clip(image, 0, 1)
    return x, labels


def write_npz(path: str, x: np.ndarray, labels: np.ndarray, input_name: str = "image") -> None:
    """An .npz with the images under `input_name` and their `labels`."""
    np.savez(path, **{input_name: x, "labels": labels})


def write_images(folder: str, x: np.ndarray, labels: np.ndarray) -> None:
    """PNG files, one sub-folder per class name: folder/00_circle_red/00000.png, ..."""
    import tensorflow as tf

    for n, (image, label) in enumerate(zip(x, labels, strict=True)):
        os.makedirs(os.path.join(folder, NAMES[label]), exist_ok=True)
        png = tf.io.encode_png(np.round(image * 255).astype(np.uint8)).numpy()
        with open(os.path.join(folder, NAMES[label], f"{n:05d}.png"), "wb") as f:
            f.write(png)


def _tiny(keras, image):
    x = image
    for width in (8, 16, 32):
        x = keras.layers.Conv2D(width, 3, padding="same", use_bias=False)(x)
        x = keras.layers.BatchNormalization()(x)
        x = keras.layers.ReLU()(x)
        if width != 32:
            x = keras.layers.MaxPooling2D()(x)
    return keras.layers.GlobalAveragePooling2D()(x)


def build(kind: str, size: int):
    """An untrained classifier: input `image` [size, size, 3], output `probs` (10-way softmax)."""
    import keras

    image = keras.Input((size, size, 3), name="image")
    if kind == "tiny":
        features = _tiny(keras, image)
    else:
        ctor = {"mobilenet_v2": "MobileNetV2", "resnet50": "ResNet50"}[kind]
        base = getattr(keras.applications, ctor)(weights=None, include_top=False, pooling="avg",
                                                 input_tensor=image)
        features = base.output
    probs = keras.layers.Dense(len(NAMES), activation="softmax", name="probs")(features)
    model = keras.Model(image, probs, name=f"shapes_{kind}")
    for layer in model.layers:  # applications' 0.999 would leave moving stats unsettled after a few epochs
        if isinstance(layer, keras.layers.BatchNormalization):
            layer.momentum = 0.9
    return model


def train(kind: str, size: int, train_x, train_y, epochs: int = 10, seed: int = 0):
    """A `kind` model trained on (train_x, train_y) for `epochs` (Adam, cosine decay, batch 32)."""
    import keras

    keras.utils.set_random_seed(seed)
    model = build(kind, size)
    steps = epochs * -(-len(train_x) // 32)
    rate = keras.optimizers.schedules.CosineDecay({"tiny": 5e-3}.get(kind, 2e-3), steps)
    model.compile(optimizer=keras.optimizers.Adam(rate), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    model.fit(train_x, train_y, batch_size=32, epochs=epochs, shuffle=True, verbose=0)
    return model


def accuracy(model, x, labels) -> float:
    """Top-1 of a Keras model on (x, labels)."""
    return float(np.mean(np.argmax(model.predict(x, batch_size=64, verbose=0), -1) == labels))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("--kind", choices=list(KINDS), default="tiny")
    parser.add_argument("--size", type=int, help="input size (default: 32 tiny, 64 others)")
    parser.add_argument("--train", type=int, help="training images (default: 600 tiny, 1500 others)")
    parser.add_argument("--val", type=int, default=500)
    parser.add_argument("--epochs", type=int, help="(default: 30 tiny, 12 mobilenet_v2, 8 resnet50)")
    parser.add_argument("--calibration", type=int, default=200, help="images in train.npz")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--images", action="store_true", help="also OUT/val_images/<class>/*.png")
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    size, count, epochs = KINDS[args.kind]
    size, args.train, args.epochs = args.size or size, args.train or count, args.epochs or epochs
    os.makedirs(args.out, exist_ok=True)

    start = time.monotonic()
    train_x, train_y = make(args.train, size, args.seed)
    val_x, val_y = make(args.val, size, args.seed + 1)
    model = train(args.kind, size, train_x, train_y, args.epochs, args.seed)
    seconds = time.monotonic() - start
    top1 = accuracy(model, val_x, val_y)
    model.save(os.path.join(args.out, "model.keras"))
    write_npz(os.path.join(args.out, "train.npz"), train_x[:args.calibration], train_y[:args.calibration])
    write_npz(os.path.join(args.out, "val.npz"), val_x, val_y)
    if args.images:
        write_images(os.path.join(args.out, "val_images"), val_x, val_y)
    info = {"kind": args.kind, "size": size, "train": args.train, "val": args.val,
            "epochs": args.epochs, "params": model.count_params(), "val_top1": top1,
            "train_seconds": round(seconds, 1)}
    with open(os.path.join(args.out, "shapes.json"), "w") as f:
        json.dump(info, f, indent=1)
    print(json.dumps(info))


if __name__ == "__main__":
    main()
