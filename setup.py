"""Packages are found, not listed: every folder with an `__init__.py` under `converters/`
(installed as `graphfreeze`) and `cli/` (`graphfreeze_cli`). Metadata is in pyproject.toml."""

from setuptools import find_packages, setup


def renamed(folder: str, package: str) -> list[str]:
    return [package + found[len(folder):] for found in find_packages(include=[folder, folder + ".*"])]


setup(packages=renamed("converters", "graphfreeze") + renamed("cli", "graphfreeze_cli"))
