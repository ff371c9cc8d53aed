"""An `.onnx` file run in onnxruntime (CPU execution provider). Verification checks it with
onnx.checker and runs a model with QuantizeLinear/DequantizeLinear with graph optimizations off,
so Q/DQ compute what ONNX defines (by default onnxruntime fuses them into int8 kernels, whose
rounding differs from the float model by up to a quantization step); the divergence locator
runs a copy with the kept tensors made graph outputs (tf2onnx keeps TensorFlow's tensor names
for the ops it maps); --benchmark makes the session as an app does (default optimizations,
`intra_op_num_threads` set, one inter-op thread) and times `session.run`. A model with
onnxruntime-extensions' ops (TF-Text's tokenizers) gets that library registered."""

from __future__ import annotations

from graphfreeze.errors import RunError, first_line
from graphfreeze.formats.onnx.text_ops import uses_contrib
from graphfreeze.plugins import Session


def open_onnx(path: str, inputs, outputs, *, threads: int = 2, keep: tuple[str, ...] = (),
              untrusted: bool = False, loaded=None) -> OnnxSession:
    return OnnxSession(path, inputs, outputs, threads, keep)


def parts(path: str) -> list[str]:
    """The model file and the external-data files its tensors name (`FILE.onnx.data`)."""
    from graphfreeze.io import storage

    try:
        model = _proto(path)
    except RunError:
        return [path]  # verify's digest check says the file is not the one written
    from onnx import external_data_helper

    found = []
    for tensor in external_data_helper._get_all_tensors(model):  # noqa: SLF001
        if external_data_helper.uses_external_data(tensor):
            location = external_data_helper.ExternalDataInfo(tensor).location
            if location and location not in found:
                found.append(location)
    return [path, *(storage.join(storage.dirname(path) or ".", name) for name in found)]


def has_qdq(model) -> bool:
    return any(n.op_type in ("QuantizeLinear", "DequantizeLinear") for n in model.graph.node)


def _proto(path: str):
    """The model without its external data."""
    import onnx

    try:
        return onnx.load(path, load_external_data=False)
    except Exception as err:  # noqa: BLE001 -- onnx's errors for a file
        raise RunError(f"not an ONNX model ({first_line(err)})") from err


def _session(model, threads: int, as_defined: bool = False, app: bool = False,
             contrib: bool = False):
    """An onnxruntime session on a path or serialized model (`isolated.ort_session`); one with
    onnxruntime-extensions' ops (`contrib`) in a child process once tensorflow_text is loaded
    here (the two together segfault)."""
    from graphfreeze.formats.onnx import isolated

    if contrib and isolated.needed():
        return isolated.IsolatedSession(model, threads, as_defined, app)
    return isolated.ort_session(model, threads, as_defined, app, contrib)


def _text(name: str, value):
    """A string input as onnxruntime takes it: Python str (it reads bytes objects as their
    repr, `b'...'`), decoded from UTF-8; other inputs as they are."""
    import numpy as np

    value = np.asarray(value)
    if value.dtype.kind not in "OS":
        return value
    try:
        return np.vectorize(lambda v: v.decode("utf-8") if isinstance(v, bytes) else v,
                            otypes=[object])(value)
    except UnicodeDecodeError as err:
        raise RunError(f"input '{name}' has a string that is not UTF-8 ({err.reason} at byte "
                       f"{err.start}), which onnxruntime cannot take") from err


class OnnxSession(Session):
    def __init__(self, path: str, inputs, outputs, threads: int, keep):
        self.path, self.inputs, self.outputs = path, inputs, outputs
        self.threads, self.keep = threads, list(keep)
        self._verifying = None

    def _feeds(self, feeds: dict) -> dict:
        return {i.name: _text(i.name, feeds[i.name]) for i in self.inputs}

    def run(self, feeds: dict) -> list:
        import onnx

        if self._verifying is None:
            model = _proto(self.path)
            qdq, contrib = has_qdq(model), uses_contrib(model)
            del model
            try:
                onnx.checker.check_model(self.path)
            except Exception as err:  # noqa: BLE001 -- the checker's errors for a file
                raise RunError(f"onnx.checker rejects it ({first_line(err)})") from err
            self._verifying = _session(self.path, self.threads, as_defined=qdq, contrib=contrib)
        try:
            return self._verifying.run([o.name for o in self.outputs], self._feeds(feeds))
        except Exception as err:  # noqa: BLE001 -- onnxruntime's errors for a model
            raise RunError(f"onnxruntime cannot run it ({first_line(err)})") from err

    def tensors(self, feeds: dict) -> dict:
        """The kept tensors made graph outputs (onnxruntime types them) of a copy written
        beside the file, so external weights resolve as they do for the file itself."""
        import os
        import tempfile

        import numpy as np
        import onnx

        model, wanted = _proto(self.path), set(self.keep)
        present = {o.name for o in model.graph.output}
        for node in model.graph.node:
            for out in node.output:
                if out in wanted and out not in present:
                    model.graph.output.append(onnx.ValueInfoProto(name=out))
                    present.add(out)
        fd, copy = tempfile.mkstemp(suffix=".onnx", dir=os.path.dirname(self.path) or ".")
        contrib = uses_contrib(model)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(model.SerializeToString())
            del model
            session = _session(copy, self.threads, contrib=contrib)
        finally:
            os.remove(copy)
        fetch = [o.name for o in session.get_outputs() if o.name in wanted]
        values = session.run(fetch, self._feeds(feeds))
        return {name: np.asarray(v) for name, v in zip(fetch, values, strict=True)}

    def bind(self, feeds: dict):
        import onnxruntime as ort

        session = _session(self.path, self.threads, app=True,
                           contrib=uses_contrib(_proto(self.path)))
        names, bound, run_options = [o.name for o in self.outputs], self._feeds(feeds), \
            ort.RunOptions()
        self.label = f"onnxruntime {ort.__version__} (CPUExecutionProvider)"
        return lambda: session.run(names, bound, run_options)
