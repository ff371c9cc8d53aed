"""Built-in stages. Each module keeps TensorFlow imports inside its functions."""

from __future__ import annotations

from graphfreeze.registry import Stage


def builtin_stages() -> list[Stage]:
    from graphfreeze.stages import (
        export,
        freeze,
        onnx_export,
        optimize,
        saved_model,
        tflite,
        verify,
    )

    return [freeze.STAGE, optimize.STRIP_STAGE, optimize.OPTIMIZE_STAGE, export.STAGE,
            saved_model.STAGE, tflite.STAGE, onnx_export.STAGE, verify.STAGE]
