"""What `freeze inspect --device gpu` judges of a .tflite: the ops LiteRT's GPU delegate takes
and those that fall back to the CPU (delegates.py)."""

from __future__ import annotations

from graphfreeze.formats.tflite import delegates
from graphfreeze.plugins import Devices

DEVICES = Devices(("gpu",), "TFLite", (".tflite", ".lite"), delegates.is_tflite, "tflite",
                  lambda data, device: delegates.coverage(data).as_json())
