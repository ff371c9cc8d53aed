"""graphfreeze: freeze TensorFlow models into clean, verified, device-ready artifacts."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("graphfreeze")
except PackageNotFoundError:  # running from a source tree without install
    __version__ = "0.0.0+unknown"
