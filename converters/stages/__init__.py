"""Built-in stages. Each module keeps TensorFlow imports inside its functions."""

from __future__ import annotations

from graphfreeze.registry import Stage


def builtin_stages() -> list[Stage]:
    from graphfreeze.stages import export, freeze, optimize, verify

    return [freeze.STAGE, optimize.STRIP_STAGE, optimize.OPTIMIZE_STAGE, export.STAGE,
            verify.STAGE]
