"""Intermediate tensors of an ONNX file run in onnxruntime, keyed by the TensorFlow tensor names
they stand for (`dense/Relu:0`): what the divergence locator compares with the original's."""

from __future__ import annotations


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
