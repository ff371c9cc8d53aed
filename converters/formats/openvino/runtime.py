"""An OpenVINO IR (`.xml` + `.bin`) on OpenVINO's CPU plugin. Verification and the divergence
locator compile it at f32 inference precision (not the bf16/f16 the plugin may pick by default
on some CPUs); the locator adds the kept tensors (TensorFlow names OpenVINO keeps on the outputs
it converted) as model outputs. --benchmark compiles it as an app compiles it for latency
(PERFORMANCE_HINT LATENCY, INFERENCE_NUM_THREADS set, the plugin's default precision), sets the
inputs on one infer request once and times its synchronous `infer()`, as benchmark_app's
`-api sync` does."""

from __future__ import annotations

from graphfreeze.errors import RunError, first_line
from graphfreeze.formats.openvino import tokenizers
from graphfreeze.plugins import Session

F32 = {"INFERENCE_PRECISION_HINT": "f32"}


def open_openvino(path: str, inputs, outputs, *, threads: int = 2, keep: tuple[str, ...] = (),
                  untrusted: bool = False, loaded=None) -> OpenVinoSession:
    return OpenVinoSession(path, inputs, outputs, threads, keep)


def parts(path: str) -> list[str]:
    """The `.xml` and the `.bin` beside it."""
    return [path, path[:-len(".xml")] + ".bin" if path.endswith(".xml") else path + ".bin"]


_NOISE = ("Exception from", "Check '", "While validating", "FrontEnd API failed")


def reason(err: Exception) -> str:
    """An OpenVINO error in one line: the node it names and its last line that says what went
    wrong (its other lines are where in OpenVINO's sources it was raised)."""
    import re

    text = str(err)
    said = [line.strip() for line in text.splitlines()
            if line.strip() and not line.strip().startswith(_NOISE)]
    node = re.search(r"(?:with friendly_name|node with name) '([^']+)'", text)
    last = said[-1] if said else first_line(err)
    return f"node '{node.group(1)}': {last}" if node and node.group(1) not in last else last


def _ov_array(value):
    """A feed as OpenVINO takes it: strings (TensorFlow's object arrays of bytes, or str) as
    bytes."""
    import numpy as np

    value = np.asarray(value)
    if value.dtype == object:
        flat = [v.encode("utf-8") if isinstance(v, str) else v for v in value.ravel()]
        return np.array(flat, dtype=np.bytes_).reshape(value.shape)
    return np.char.encode(value, "utf-8") if value.dtype.kind == "U" else value


def _tf_array(tensor):
    """An output tensor as TensorFlow gives it: strings as an object array of their bytes as
    they are (not decoded as UTF-8)."""
    import numpy as np
    import openvino as ov

    if tensor.element_type == ov.Type.string:
        return np.asarray(tensor.bytes_data).astype(object).reshape(tuple(tensor.shape))
    return np.array(tensor.data, copy=True)


class OpenVinoSession(Session):
    def __init__(self, path: str, inputs, outputs, threads: int, keep):
        self.path, self.inputs, self.outputs = path, inputs, outputs
        self.threads, self.keep = threads, list(keep)
        self._compiled = None
        tokenizers.load_for(path)

    def _run(self, model, feeds: dict) -> dict:
        """{tensor name: array} of a compiled model's results."""
        try:
            request = model.create_infer_request()
            request.infer({info.name: _ov_array(feeds[info.name]) for info in self.inputs})
        except Exception as err:  # noqa: BLE001 -- OpenVINO's errors for a model
            raise RunError(f"OpenVINO cannot run it ({reason(err)})") from err
        return {name: _tf_array(request.get_tensor(port)) for port in model.outputs
                for name in port.get_names()}

    def _compile(self, model, config: dict):
        import openvino as ov

        try:
            return ov.Core().compile_model(model, "CPU", config)
        except Exception as err:  # noqa: BLE001 -- OpenVINO's errors for a file
            raise RunError(f"OpenVINO cannot compile it ({reason(err)})") from err

    def run(self, feeds: dict) -> list:
        if self._compiled is None:
            self._compiled = self._compile(self.path, F32)
        by_name = self._run(self._compiled, feeds)
        return [by_name[info.name] for info in self.outputs]

    def tensors(self, feeds: dict) -> dict:
        import openvino as ov

        model = ov.Core().read_model(self.path)
        wanted = set(self.keep)
        ports = [output for op in model.get_ordered_ops() for output in op.outputs()
                 if output.get_names() & wanted and output.get_element_type() != ov.Type.string]
        if ports:
            model.add_outputs(ports)
        found = self._run(self._compile(model, F32), feeds)
        return {name: value for name, value in found.items() if name in wanted}

    def bind(self, feeds: dict):
        import openvino as ov

        compiled = self._compile(self.path, {"PERFORMANCE_HINT": "LATENCY",
                                             "INFERENCE_NUM_THREADS": self.threads})
        request = compiled.create_infer_request()
        for info in self.inputs:
            request.set_tensor(info.name, ov.Tensor(_ov_array(feeds[info.name])))
        precision = compiled.get_property("INFERENCE_PRECISION_HINT")
        precision = getattr(precision, "to_string", lambda: str(precision))()
        self.label = f"OpenVINO {ov.get_version().split('-')[0]} CPU ({precision})"
        return request.infer
