"""The user's own data: inputs (and labels) that verification runs on and int8 calibrates on, read
from an `.npz`, a folder of `.npy`/`.npz` files or a folder of images (`load`), and golden
outputs saved for later runs (`golden`). `options.DataOptions` declares the flags once; every
stage that reads data inherits them."""

from graphfreeze.data.load import Dataset, load

__all__ = ["Dataset", "load"]
