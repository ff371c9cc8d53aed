"""Packages are found, not listed: every folder under `converters/` (installed as `graphfreeze`)
and `cli/` (`graphfreeze_cli`), code or data only (a format's `targets/` of TOMLs is a package
too, so setuptools installs its files as declared). Metadata is in pyproject.toml."""

from setuptools import find_namespace_packages, setup


def renamed(folder: str, package: str) -> list[str]:
    found = find_namespace_packages(include=[folder, folder + ".*"], exclude=["*.__pycache__"])
    return [package + name[len(folder):] for name in found]


setup(packages=renamed("converters", "graphfreeze") + renamed("cli", "graphfreeze_cli"))
