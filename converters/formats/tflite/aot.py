"""compile_npu: the portable .tflite compiled ahead of time for one vendor's NPU by LiteRT
(`ai_edge_litert.aot`, the vendor's compiler plugin shipped in ai-edge-litert, the vendor's SDK
libraries from its `ai-edge-litert-sdk-<vendor>` package), written beside the portable model.

The target `npu-<vendor>:<soc>` runs export_tflite and verify on the portable model as the
`tflite` target does, then this stage. The compiled model is not run here (no NPU): the sidecar
says so, and records per op of the portable model whether it went to the NPU or stayed on the
CPU, with what the compiler logged about it.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import importlib.util
import re
from dataclasses import dataclass

from graphfreeze.errors import ConfigError, RunError, install_hint
from graphfreeze.options import OptionValueError
from graphfreeze.plugins import Stage


@dataclass(frozen=True)
class Vendor:
    label: str
    sdk: str  # the SDK package's module
    target_module: str  # LiteRT's target declaration (its SocModel enum)


VENDORS = {
    "qualcomm": Vendor("Qualcomm", "ai_edge_litert_sdk_qualcomm", "qualcomm"),
    "mediatek": Vendor("MediaTek", "ai_edge_litert_sdk_mediatek", "mediatek"),
    "google-tensor": Vendor("Google Tensor", "ai_edge_litert_sdk_google_tensor", "google_tensor"),
    "intel": Vendor("Intel", "ai_edge_litert_sdk_intel", "intel_openvino"),
}
NOT_RUN = "compiled for the NPU, not run here (no NPU on this machine): verification ran the " \
          "portable model"


def _target_module(vendor: str):
    return importlib.import_module(f"ai_edge_litert.aot.vendors.{VENDORS[vendor].target_module}"
                                   ".target")


def socs(vendor: str) -> list[str]:
    """The SoC names LiteRT's target declaration for `vendor` knows."""
    return [m.value for m in _target_module(vendor).SocModel if m.value != "ALL"]


def sdk_missing(vendor: str) -> str | None:
    """Why the vendor's SDK cannot compile here, or None."""
    v = VENDORS[vendor]
    extra = f"npu-{vendor}"
    if importlib.util.find_spec(v.sdk) is None:
        return (f"needs {v.label}'s SDK (the {v.sdk.replace('_', '-')} package), not installed; "
                f"{install_hint(extra)}")
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        libs = importlib.import_module(v.sdk).path_to_sdk_libs()
    if libs is None or not libs.exists():
        return (f"the {v.sdk.replace('_', '-')} package holds no SDK libraries: its install "
                f"downloads them from {v.label}'s site, which failed; reinstall it where that "
                f"site is reachable (pip install --force-reinstall --no-cache-dir "
                f"'graphfreeze[{extra}]')")
    return None


@dataclass(frozen=True)
class NpuOptions:
    vendor: str = "qualcomm"
    soc: str = ""  # the target's parameter: npu-qualcomm:SM8650

    def __post_init__(self):
        if self.vendor not in VENDORS:
            raise OptionValueError("vendor", self.vendor, f"choose {', '.join(VENDORS)}")
        known = socs(self.vendor)
        if not self.soc:
            raise OptionValueError("soc", "(none)", f"name the SoC: --target npu-{self.vendor}:"
                                   f"<soc>, one of {', '.join(known)}")
        match = {s.upper(): s for s in known}.get(self.soc.upper())
        if match is None:
            close = difflib.get_close_matches(self.soc.upper(), [s.upper() for s in known], 1, 0.5)
            hint = f"did you mean {next(s for s in known if s.upper() == close[0])}? " \
                if close else ""
            raise OptionValueError("soc", self.soc, f"{VENDORS[self.vendor].label}'s SDK does not "
                                   f"know it; {hint}(SoCs: {', '.join(known)})")
        object.__setattr__(self, "soc", match)
        why = sdk_missing(self.vendor)
        if why:
            raise OptionValueError("vendor", self.vendor, why)


def compiled_path(path: str, vendor: str, soc: str) -> str:
    """Beside the portable model: model.tflite -> model.qualcomm_SM8650.tflite."""
    stem = path[:-len(".tflite")] if path.endswith(".tflite") else path
    return f"{stem}.{vendor.replace('-', '_')}_{soc}.tflite"


def run(state, options: NpuOptions):
    import os
    import tempfile

    artifact = state.artifact
    out_path = compiled_path(artifact.path, options.vendor, options.soc)
    (local,) = state.files.workdir([out_path])
    with tempfile.TemporaryDirectory() as folder:
        data, log, stats = compile_model(artifact.staged, options.vendor, options.soc, folder,
                                         state.model.graph_file)
        with open(local, "wb") as f:
            f.write(data)
    with open(artifact.staged, "rb") as f:
        placement = {**placed(f.read(), data, log), "compiler_stats": stats}
    npu = {"vendor": options.vendor, "soc": options.soc, "file": os.path.basename(out_path),
           "bytes": len(data), "run": NOT_RUN, **placement}
    summary = (*artifact.summary, f"npu {options.vendor}:{options.soc}: "
               f"{placement['line']}; wrote {out_path}", NOT_RUN)
    return dataclasses.replace(state, artifact=dataclasses.replace(
        artifact, facts={**artifact.facts, "npu": npu}, summary=summary))


def compile_model(path: str, vendor: str, soc: str, folder: str, where: str):
    """(compiled bytes, the compiler's log, its partition stats: per subgraph, ops offloaded of
    ops in all) for the .tflite at `path`."""
    import io
    from contextlib import redirect_stderr, redirect_stdout

    from ai_edge_litert.aot import aot_compile
    from ai_edge_litert.aot.core import apply_plugin

    target = _target_module(vendor).Target(_target_module(vendor).SocModel(soc))
    logs: list[str] = []
    original = apply_plugin.subprocess.run

    def logged(*args, **kwargs):  # the compiler's log: what it says of each op it refuses
        done = original(*args, **kwargs)
        logs.append(done.stdout or "")
        return done

    apply_plugin.subprocess.run = logged
    try:
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            result = aot_compile.aot_compile(path, output_dir=folder, target=target,
                                             keep_going=True)
    finally:
        apply_plugin.subprocess.run = original
    log = "\n".join(logs)
    if result.failed_backends or not result.models_with_backend:
        reason = result.failed_backends[0][1] if result.failed_backends else "no model made"
        libs = re.findall(r"([\w.+-]+\.so[.\d]*)(?:: cannot open shared object| not found)",
                          log) + re.findall(r"Failed to load (\w+) shared library", log)
        if libs:
            raise ConfigError(f"{where}: {VENDORS[vendor].label}'s NPU compiler cannot load "
                              f"its SDK library ({libs[0]}); install "
                              f"'graphfreeze[npu-{vendor}]' where its SDK download works")
        errors = [line for line in log.splitlines() if "ERROR" in line]
        raise RunError(f"{where}: {VENDORS[vendor].label}'s NPU compiler failed for {soc}: "
                       f"{errors[-1].strip() if errors else reason}")
    _, model = result.models_with_backend[0]
    stats = [{"subgraph": s.subgraph_index, "offloaded": s.num_ops_offloaded,
              "ops": s.num_total_ops, "partitions": s.num_partitions_offloaded}
             for s in getattr(model.partition_stats, "subgraph_stats", None) or []]
    if model.in_memory:
        return bytes(model.model_bytes), log, stats
    with open(model.path, "rb") as f:
        return f.read(), log, stats


def placed(portable: bytes, compiled: bytes, log: str) -> dict:
    """Per op of the portable model: NPU (inside a DISPATCH_OP of the compiled model) or CPU
    (still an op of the compiled model), with the compiler's log lines naming a CPU op."""
    before, after = _ops(portable), _ops(compiled)
    left = dict.fromkeys(after, 0)
    for op in after:
        left[op] += 1
    cpu = []
    for op in before:
        if left.get(op):
            left[op] -= 1
            said = [line.strip() for line in log.splitlines() if op.lower() in line.lower()]
            cpu.append({"op": op, "reason": said[0] if said else "not taken by the compiler"})
    total, npu = len(before), len(before) - len(cpu)
    line = f"{npu}/{total} ops on the NPU" + (f", {len(cpu)} on the CPU" if cpu else "")
    return {"line": line, "ops": total, "npu_ops": npu, "cpu": cpu,
            "partitions": sum(1 for op in after if op == "DISPATCH_OP")}


def _ops(data: bytes) -> list[str]:
    from ai_edge_litert import schema_py_generated as schema

    model = schema.Model.GetRootAs(data, 0)
    names = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
    graph = model.Subgraphs(0)
    ops = []
    for j in range(graph.OperatorsLength()):
        code = model.OperatorCodes(graph.Operators(j).OpcodeIndex())
        builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        ops.append((code.CustomCode() or b"?").decode() if builtin == schema.BuiltinOperator.CUSTOM
                   else names.get(builtin, str(builtin)))
    return ops


def beside(path: str, options: NpuOptions) -> list[str]:
    """The file the stage writes beside the artifact at `path` (refused up front if it exists)."""
    return [compiled_path(path, options.vendor, options.soc)]


STAGE = Stage("compile_npu", run, "artifact", "artifact", NpuOptions,
              "the .tflite compiled ahead of time for a vendor's NPU (LiteRT AOT), beside it",
              beside=beside, source_graph=False)
