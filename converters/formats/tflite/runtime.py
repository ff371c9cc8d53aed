"""A .tflite file run in LiteRT's interpreter (`interpreter.py`): verification runs it at the
data's batch (or row by row at the shape it was converted at, when its ops cannot be resized),
int8 (de)quantized, one interpreter for every chunk of one shape; the divergence locator keeps
every tensor (`experimental_preserve_all_tensors`); --benchmark invokes it as an app does (its
default delegate, XNNPack, `num_threads` set, inputs set once)."""

from __future__ import annotations

from graphfreeze.errors import RunError
from graphfreeze.plugins import Session


def open_tflite(path: str, inputs, outputs, *, threads: int = 2, keep: tuple[str, ...] = (),
                untrusted: bool = False, loaded=None) -> TFLiteSession:
    return TFLiteSession(path, inputs, outputs, threads, keep)


def _node(name: str) -> str:
    from graphfreeze.graph.graphdefs import split_tensor

    return split_tensor(name)[0]


class TFLiteSession(Session):
    def __init__(self, path: str, inputs, outputs, threads: int, keep):
        self.path, self.threads, self.keep = path, threads, list(keep)
        self.nodes = {_node(i.name): i.name for i in inputs}  # TFLite names inputs by node
        self.out_nodes = [_node(o.name) for o in outputs]
        self._reuse: dict = {}  # the interpreter of the last call, for the next chunk

    def _batched(self, feeds: dict, fetch, preserve: bool = False) -> dict:
        from graphfreeze.formats.tflite.interpreter import ArtifactRunError, FlexOpsError, run_batched

        try:
            return run_batched(self.path, {n: feeds[name] for n, name in self.nodes.items()},
                               fetch, preserve_all_tensors=preserve,
                               reuse=None if preserve else self._reuse)
        except FlexOpsError as err:
            raise RunError("uses TensorFlow (Flex) ops, which the Python TFLite interpreter "
                           "(LiteRT's, without a Flex delegate) cannot run (the app needs the "
                           "tensorflow-lite-select-tf-ops runtime)") from err
        except ArtifactRunError as err:
            raise RunError(f"LiteRT's interpreter cannot run the converted model ({err})") from err

    def run(self, feeds: dict) -> list:
        from graphfreeze.formats.tflite.interpreter import output_values

        names = self.out_nodes
        got = self._batched(feeds, lambda interp: dict(zip(names, output_values(interp, names),
                                                           strict=True)))
        missing = [n for n in names if n not in got]
        if missing:
            raise RunError(f"runs only at the batch it was converted at and output "
                           f"'{missing[0]}' has no batch dimension to compare row by row")
        return [got[n] for n in names]

    def tensors(self, feeds: dict) -> dict:
        """Every tensor kept and dequantized. TFLite names a tensor after the TensorFlow ops it
        came from (`a;b;c` for fused ones): it stands for the one of those, among the kept
        names, that comes last."""
        import numpy as np
        from graphfreeze.formats.tflite.interpreter import dequantize

        position = {_node(name): i for i, name in enumerate(self.keep)}

        def fetch(interp) -> dict:
            made = {int(i) for op in interp._get_ops_details() for i in op["outputs"]}  # noqa: SLF001
            found = {}
            for detail in interp.get_tensor_details():
                if detail["index"] not in made:  # weights and inputs are named after their users
                    continue
                parts = [p for p in detail["name"].split(";") if p in position]
                if not parts:
                    continue
                try:
                    value = interp.get_tensor(detail["index"])
                except ValueError:  # freed or never computed
                    continue
                found[f"{max(parts, key=position.get)}:0"] = np.asarray(dequantize(value, detail))
            return found

        return self._batched(feeds, fetch, preserve=True)

    def bind(self, feeds: dict):
        from graphfreeze.errors import first_line
        from graphfreeze.formats.tflite.interpreter import (
            FlexOpsError,
            input_details,
            interpreter,
            invoke,
        )
        from graphfreeze.process.quiet import native_stderr_off

        nodes = {n: feeds[name] for n, name in self.nodes.items()}
        interp = interpreter(model_path=self.path, num_threads=self.threads)
        details = input_details(interp, list(nodes))
        with native_stderr_off():
            try:
                for name, value in nodes.items():
                    if tuple(details[name]["shape"]) != value.shape:
                        interp.resize_tensor_input(details[name]["index"], value.shape)
                interp.allocate_tensors()
            except (RuntimeError, ValueError) as err:
                raise RunError(first_line(err)) from err
        try:
            invoke(self.path, nodes, interp=interp)  # sets the inputs (quantized) and runs once
        except FlexOpsError as err:
            raise RunError("uses Flex ops, which LiteRT's Python interpreter cannot run") from err
        self.label = f"LiteRT {_version()} Interpreter (XNNPack)"
        return interp.invoke


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("ai-edge-litert")
    except Exception:  # noqa: BLE001 -- tf.lite.Interpreter when ai_edge_litert is missing
        import tensorflow as tf

        return f"(tf.lite {tf.__version__})"
