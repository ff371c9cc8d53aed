"""How verification runs a .tflite: LiteRT's interpreter on the staged file (`runtime.py`)."""

from __future__ import annotations

from graphfreeze.errors import VerificationError


def interpreter_runner(path: str, inputs, state):
    """Run the flatbuffer in LiteRT's interpreter: batch resized (or row by row at the shape it
    was converted at, when its ops cannot be resized), int8 (de)quantized. An artifact the
    interpreter cannot run is a one-line VerificationError naming the file."""
    names = {ref.node: info.name for ref, info in zip(state.inputs, inputs, strict=True)}
    out_names = [ref.node for ref in state.outputs]
    reuse: dict = {}  # the interpreter of the last call, for the next chunk of the same shape

    def run(feeds: dict) -> list:
        from graphfreeze.formats.tflite.runtime import (
            ArtifactRunError,
            FlexOpsError,
            output_values,
            run_batched,
        )

        def fetch(interp) -> dict:
            return dict(zip(out_names, output_values(interp, out_names), strict=True))

        try:
            got = run_batched(path, {node: feeds[name] for node, name in names.items()}, fetch,
                              reuse=reuse)
        except FlexOpsError as err:
            raise VerificationError(
                f"{state.output_path}: uses TensorFlow (Flex) ops, which the Python TFLite "
                "interpreter (LiteRT's, without a Flex delegate) cannot run, so it cannot be "
                "verified here; pass --no-verify to write it unverified (the app needs the "
                "tensorflow-lite-select-tf-ops runtime)") from err
        except ArtifactRunError as err:
            raise VerificationError(
                f"{state.output_path}: LiteRT's interpreter cannot run the converted model "
                f"({err}), so it cannot be verified; nothing written (pass --no-verify to "
                "write it unverified)") from err
        missing = [n for n in out_names if n not in got]
        if missing:
            raise VerificationError(
                f"{state.output_path}: runs only at the batch it was converted at and output "
                f"'{missing[0]}' has no batch dimension to compare row by row; pass --no-verify "
                "to write it unverified")
        return [got[n] for n in out_names]

    return run


def file_runner(path: str, inputs, outputs):
    """run({input name: array}) -> the outputs in order, from a `.tflite` file whose inputs and
    outputs a sidecar lists (`freeze verify`)."""
    from types import SimpleNamespace

    from graphfreeze.graph.graphdefs import split_tensor
    from graphfreeze.names import TensorRef

    def refs(infos):
        return tuple(TensorRef(*split_tensor(i.name)) for i in infos)

    state = SimpleNamespace(inputs=refs(inputs), outputs=refs(outputs), output_path=path)
    return interpreter_runner(path, inputs, state)
