"""Built-in artifact formats, one folder each, found by name (nothing lists them): `export.py`
(the stage), `runtime.py` (`open` -> a Session), `targets/*.toml`, and a `FORMAT` record in the
folder's `__init__.py` naming them."""

from __future__ import annotations

import importlib
import pkgutil

from graphfreeze.plugins import Format


def builtin_formats() -> list[Format]:
    """Every sub-package's FORMAT (importing one imports none of its `requires`)."""
    return [importlib.import_module(f"{__name__}.{info.name}").FORMAT
            for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name)
            if info.ispkg]
