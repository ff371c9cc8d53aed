"""Built-in stages every format shares: each module is one stage (or two closely related),
importing only the floor and the leaf types in plugins, never another stage. Export stages
live with their format (`formats/<name>/export.py`)."""

from __future__ import annotations

from graphfreeze.plugins import Stage


def builtin_stages() -> list[Stage]:
    from graphfreeze.stages import (
        benchmark,
        freeze_variables,
        graph_passes,
        verify,
        verify_generation,
    )

    return [freeze_variables.STAGE, graph_passes.STRIP_STAGE, graph_passes.OPTIMIZE_STAGE,
            verify.STAGE, verify_generation.STAGE, benchmark.STAGE]
