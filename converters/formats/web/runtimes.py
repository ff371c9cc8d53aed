"""The browser runtimes the web format runs an artifact in: which npm package takes which file,
where `make` installed them (web/node_modules of the checkout: `npm ci` of web/package-lock.json,
or GRAPHFREEZE_WEB_RUNTIMES), and their versions. Nothing is fetched at run time."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from graphfreeze.errors import ConfigError

RUNTIMES_ENV = "GRAPHFREEZE_WEB_RUNTIMES"
CHECKOUT_MODULES = Path(__file__).resolve().parents[3] / "web" / "node_modules"


@dataclass(frozen=True)
class Runtime:
    name: str  # the page's runtime (page.html: "onnx" or "litert")
    package: str  # the npm package
    dtypes: tuple[str, ...]  # the tensor types it takes and gives
    loads: str  # how an app loads the artifact (the "wrote" summary)


RUNTIMES = {
    ".onnx": Runtime("onnx", "onnxruntime-web", ("float32", "float64", "float16", "int8", "uint8",
                                                 "int16", "uint16", "int32", "uint32", "int64",
                                                 "uint64", "bool"),
                     "ort.InferenceSession.create(url, {executionProviders: ['wasm']})"),
    ".tflite": Runtime("litert", "@litertjs/core", ("float32", "int32", "uint8"),
                       "loadLiteRt(wasmDir) then loadAndCompile(url, {accelerator: 'wasm'})"),
}


def runtime_for(path: str) -> Runtime:
    """The runtime of the artifact at `path`, by its suffix."""
    suffix = os.path.splitext(path)[1]
    if suffix not in RUNTIMES:
        raise ConfigError(f"{path}: the web format runs .onnx files (onnxruntime-web) and .tflite "
                          "files (LiteRT.js), not this; give it export_onnx's or export_tflite's "
                          "artifact")
    return RUNTIMES[suffix]


def modules() -> Path:
    """The node_modules folder the runtimes are read from."""
    return Path(os.environ.get(RUNTIMES_ENV) or CHECKOUT_MODULES)


def version(runtime: Runtime) -> str:
    """The installed version of `runtime`'s npm package; one ConfigError line naming what to run
    when it is not installed."""
    manifest = modules() / runtime.package / "package.json"
    try:
        return str(json.loads(manifest.read_text())["version"])
    except (OSError, ValueError, KeyError):
        raise ConfigError(f"the web format's browser runtime {runtime.package} is not installed in "
                          f"{modules()}; run `make web` in the graphfreeze checkout (npm ci in "
                          f"web/), or set {RUNTIMES_ENV} to a node_modules folder holding it"
                          ) from None


def check_types(runtime: Runtime, tensors, where: str) -> None:
    """Every tensor's type is one `runtime` takes; else one line naming the tensor."""
    for t in tensors:
        if t.dtype not in runtime.dtypes:
            raise ConfigError(f"{where}: tensor '{t.name}' is {t.dtype}, which {runtime.package} "
                              f"does not take (it takes {', '.join(runtime.dtypes)})")
