"""Intermediate tensors of an artifact, run the way its runtime runs it, keyed by the TensorFlow
tensor names they stand for (`dense/Relu:0`): what the divergence locator compares with the
original's. Each export stage gives its Artifact one of these as `probe(feeds, names)`."""

from __future__ import annotations


def frozen_probe(graph_def):
    """A frozen GraphDef (android, and server's graph): TensorFlow fetches `names` directly."""

    def probe(feeds: dict, names: list[str]) -> dict:
        from graphfreeze.graph.skeleton import run_frozen

        return dict(zip(names, run_frozen(graph_def, feeds, names), strict=True))

    return probe


def onnx_probe(path: str, inputs):
    """An ONNX file: the wanted node outputs made graph outputs (onnxruntime types them) and
    run in onnxruntime; tf2onnx keeps TensorFlow's tensor names for the ops it maps. The copy
    is written beside the file, so external weights resolve as they do for the file itself."""

    def probe(feeds: dict, names: list[str]) -> dict:
        import os
        import tempfile

        import numpy as np
        import onnx
        import onnxruntime as ort

        model = onnx.load(path, load_external_data=False)
        wanted = set(names)
        present = {o.name for o in model.graph.output}
        for node in model.graph.node:
            for out in node.output:
                if out in wanted and out not in present:
                    model.graph.output.append(onnx.ValueInfoProto(name=out))
                    present.add(out)
        fd, copy = tempfile.mkstemp(suffix=".onnx", dir=os.path.dirname(path) or ".")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(model.SerializeToString())
            del model
            options = ort.SessionOptions()
            options.intra_op_num_threads = 2
            session = ort.InferenceSession(copy, options, providers=["CPUExecutionProvider"])
        finally:
            os.remove(copy)
        fetch = [o.name for o in session.get_outputs() if o.name in wanted]
        values = session.run(fetch, {i.name: feeds[i.name] for i in inputs})
        return {name: np.asarray(v) for name, v in zip(fetch, values, strict=True)}

    return probe


def tflite_probe(path: str, input_names: dict[str, str]):
    """A .tflite file: every tensor kept (`experimental_preserve_all_tensors`) and dequantized.
    TFLite names a tensor after the TensorFlow ops it came from (`a;b;c` for fused ones): it
    stands for the one of those, among the wanted names, that comes last."""

    def probe(feeds: dict, names: list[str]) -> dict:
        import numpy as np
        from graphfreeze.tflite_runtime import dequantize, run_batched

        def fetch(interp) -> dict:
            made = {int(i) for op in interp._get_ops_details() for i in op["outputs"]}  # noqa: SLF001
            found = {}
            for detail in interp.get_tensor_details():
                if detail["index"] not in made:  # weights and inputs are named after their users
                    continue
                parts = [p for p in detail["name"].split(";") if p in position]
                if not parts:
                    continue
                node = max(parts, key=position.get)
                try:
                    value = interp.get_tensor(detail["index"])
                except ValueError:  # freed or never computed
                    continue
                found[f"{node}:0"] = np.asarray(dequantize(value, detail))
            return found

        position = {name.rsplit(":", 1)[0]: i for i, name in enumerate(names)}
        return run_batched(path, {node: feeds[name] for node, name in input_names.items()},
                           fetch, preserve_all_tensors=True)

    return probe
