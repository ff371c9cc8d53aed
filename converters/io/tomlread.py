"""TOML reading: the standard library's tomllib, or tomli (the same parser) on Python 3.10."""

try:
    from tomllib import TOMLDecodeError, loads
except ModuleNotFoundError:  # Python 3.10
    from tomli import TOMLDecodeError, loads

__all__ = ["TOMLDecodeError", "loads"]
