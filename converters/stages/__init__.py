"""Built-in stages: each module is one stage (or two closely related), importing only the floor
(graph/, tensors, state, storage) and the leaf types in plugins, never another stage."""

from __future__ import annotations

from graphfreeze.plugins import Stage


def builtin_stages() -> list[Stage]:
    from graphfreeze.stages import (
        export_pb,
        freeze_variables,
        graph_passes,
        onnx_export,
        saved_model,
        tflite,
        verify,
    )

    return [freeze_variables.STAGE, graph_passes.STRIP_STAGE, graph_passes.OPTIMIZE_STAGE,
            export_pb.STAGE, saved_model.STAGE, tflite.STAGE, onnx_export.STAGE, verify.STAGE]
