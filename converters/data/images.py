"""A folder of images as one model input: decoded and resized by TensorFlow's own image ops,
scaled as `--image-scale/--image-mean/--image-std` say; sub-folder names are the classes (sorted,
so `0_cat, 1_dog` are classes 0 and 1), images directly in the folder have no label."""

from __future__ import annotations

from graphfreeze.errors import ConfigError, InputError, first_line
from graphfreeze.io import storage

CHANNELS = (1, 3, 4)


def layout(info) -> tuple[int, int, int, bool]:
    """(height, width, channels, channels_first) of an image input [N, H, W, C] or [N, C, H, W]."""
    shape = info.shape
    if shape is None or len(shape) != 4:
        raise InputError(f"input '{info.name}' is not an image batch [N, H, W, C] (shape "
                         f"{shape}); give its data as an .npz instead of images")
    _, a, b, c = shape
    channels_first = c not in CHANNELS and a in CHANNELS
    h, w, ch = (b, c, a) if channels_first else (a, b, c)
    if None in (h, w, ch):
        raise InputError(f"input '{info.name}' has shape {list(shape)}: images need its height, "
                         "width and channels known; give them with --inputs NAME[1,H,W,C]")
    return h, w, ch, channels_first


def read_images(folder: str, files: list[tuple[str, str]], infos, scaling):
    """(x [N, ...] float, labels [N] or None, class names or None) for the single input."""
    import numpy as np

    if len(infos) != 1:
        raise InputError(f"{folder}: a folder of images feeds one input, but the model has "
                         f"{len(infos)} ({', '.join(i.name for i in infos)}); give an .npz")
    (info,) = infos
    h, w, channels, channels_first = layout(info)
    classes = sorted({rel.split("/")[0] for _, rel in files if "/" in rel})
    loose = [rel for _, rel in files if "/" not in rel]
    if classes and loose:
        raise InputError(f"{folder}: has images both in class sub-folders and at its top "
                         f"({loose[0]}); put every image in its class's folder")
    images = [_decode(full, h, w, channels) for full, _ in files]
    x = (np.stack(images) * scaling.scale - _per_channel(scaling.mean, channels, "mean")) / \
        _per_channel(scaling.std, channels, "std")
    if channels_first:
        x = x.transpose(0, 3, 1, 2)
    labels = np.array([classes.index(rel.split("/")[0]) for _, rel in files], np.int64) \
        if classes else None
    return x.astype(np.dtype(info.dtype)), labels, tuple(classes) or None


def _decode(path: str, h: int, w: int, channels: int):
    """One image file as float32 [h, w, channels] pixels 0-255 (bilinear resize)."""
    import tensorflow as tf

    data = storage.read_bytes(path)
    try:
        image = tf.io.decode_image(data, channels=channels, expand_animations=False)
    except (tf.errors.InvalidArgumentError, ValueError) as err:
        raise InputError(f"{path}: not a readable image ({first_line(err)}); remove it or "
                         "convert it to PNG/JPEG") from None
    image = tf.cast(image, tf.float32)
    if tuple(image.shape[:2]) != (h, w):
        image = tf.image.resize(image, (h, w), method="bilinear")
    return image.numpy()


def _per_channel(values: tuple[float, ...], channels: int, what: str):
    import numpy as np

    if len(values) not in (1, channels):
        raise ConfigError(f"--image-{what} has {len(values)} values for {channels} channels; give "
                         f"one or {channels}")
    return np.asarray(values, np.float32)
