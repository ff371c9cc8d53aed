"""The data options, declared once: `--verify-data` and how images are scaled. Stages that read
the user's data (verify, the int8 exports) inherit `DataOptions`."""

from __future__ import annotations

from dataclasses import dataclass

from graphfreeze.options import OptionValueError, option


@dataclass(frozen=True)
class ImageScaling:
    """value = (pixel * scale - mean) / std, pixels 0-255; mean and std one per channel or one."""

    scale: float
    mean: tuple[float, ...]
    std: tuple[float, ...]


def number(text, name: str) -> float:
    """A float, or a fraction written as `1/255`."""
    try:
        if isinstance(text, str) and "/" in text:
            top, bottom = text.split("/", 1)
            return float(top) / float(bottom)
        return float(text)
    except (ValueError, ZeroDivisionError):
        raise OptionValueError(name, repr(text), "give a number such as 0.5 or 1/255") from None


def numbers(text, name: str) -> tuple[float, ...]:
    """One number, or one per channel separated by commas."""
    parts = [p for p in str(text).split(",") if p.strip()] if isinstance(text, str) else [text]
    if not parts:
        raise OptionValueError(name, repr(text), "give a number, or one per channel: 0.485,0.456,0.406")
    return tuple(number(p.strip() if isinstance(p, str) else p, name) for p in parts)


@dataclass(frozen=True)
class DataOptions:
    verify_data: str | None = option(
        None, flag="--verify-data", path=True, metavar="PATH",
        help="Verify on your data: an .npz (one array per input, optional `labels`), a folder "
             "of .npy/.npz files, or a folder of images (sub-folders as classes).")
    image_scale: float | str = option(
        "1/255", flag="--image-scale", metavar="X",
        help="Images: value = (pixel * scale - mean) / std (default 1/255).")
    image_mean: float | str = option("0", flag="--image-mean", metavar="M[,M,M]",
                                     help="Images: mean subtracted, one or one per channel.")
    image_std: float | str = option("1", flag="--image-std", metavar="S[,S,S]",
                                    help="Images: divisor, one or one per channel.")

    def __post_init__(self):
        self.image_scaling()  # refuse a malformed number with the plan

    def image_scaling(self) -> ImageScaling:
        std = numbers(self.image_std, "image_std")
        if any(s == 0 for s in std):
            raise OptionValueError("image_std", repr(self.image_std), "a divisor cannot be 0")
        return ImageScaling(number(self.image_scale, "image_scale"),
                            numbers(self.image_mean, "image_mean"), std)


@dataclass(frozen=True)
class CalibrationOptions(DataOptions):
    """What int8 calibrates on (the export stages of quantized formats)."""

    calibration: str | None = option(
        None, flag="--calibration", path=True, metavar="PATH", applies=lambda o: o.calibrates(),
        help="int8: representative inputs (.npz, folder of .npy/.npz or images; default: "
             "--verify-data, else random samples).")
    calibration_samples: int = 100  # synthetic samples when no data is given

    def calibrates(self) -> bool:
        """Whether these options quantize to integers, which calibrates (a format's own rule)."""
        return True

    def calibration_data(self) -> str | None:
        """The data int8 calibrates on: --calibration, else --verify-data (one flag when they
        are the same), else None (synthetic samples)."""
        return self.calibration or self.verify_data

    def samples(self, infos, seed: int = 1) -> list[list]:
        """Representative inputs, one sample (batch 1) each, [array per input in `infos` order]:
        every row of the data, or `calibration_samples` seeded random ones."""
        names = [i.name for i in infos]
        path = self.calibration_data()
        if path is None:
            from graphfreeze.tensors import sample_inputs

            return [[feeds[n] for n in names] for feeds in
                    (sample_inputs(infos, 1, seed + k) for k in range(self.calibration_samples))]
        import numpy as np
        from graphfreeze.data.load import load
        from graphfreeze.errors import InputError

        data = load(path, infos, self.image_scaling())
        for name in names:  # NaN ranges calibrate nothing: TFLite left the model float
            value = data.inputs[name]
            if value.dtype.kind in "fc" and not np.isfinite(value).all():
                raise InputError(f"{path}: input '{name}' holds NaN or Inf "
                                 f"({int((~np.isfinite(value)).sum())} values); calibrate on the "
                                 "finite inputs the model sees in use")
        return data.samples(names)
