"""export_web: the artifact export_onnx or export_tflite made (the stage before it in the target),
taken as a web artifact: run in its browser runtime from then on (runtime.py: verify and `freeze
verify` run it in headless Chromium), its sidecar saying which npm package and version and
which Chromium ran it. Chromium, the npm runtime and the tensor types are checked here, before
verification, so a missing one is one line and nothing is written."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from graphfreeze.errors import ConfigError
from graphfreeze.formats.web.browser import chromium, chromium_version
from graphfreeze.formats.web.runtime import open_web, start_early
from graphfreeze.formats.web.runtimes import RUNTIMES, check_types, runtime_for, version
from graphfreeze.io import storage
from graphfreeze.options import OptionValueError, option
from graphfreeze.plugins import Format, Stage, always


@dataclass(frozen=True)
class WebOptions:
    # the npm package the target runs its artifact in (its Chromium is started early for it)
    runtime: str = option("", help="onnxruntime-web or @litertjs/core")

    def __post_init__(self):
        packages = [r.package for r in RUNTIMES.values()]
        if self.runtime and self.runtime not in packages:
            raise OptionValueError("runtime", self.runtime, f"choose {' or '.join(packages)}")


def prepare(state, options: WebOptions) -> None:
    """Chromium started, and the runtime loading in it, while the artifact is written."""
    runtime = next((r for r in RUNTIMES.values() if r.package == options.runtime), None)
    if runtime is not None:
        start_early(runtime)


def run(state, options: WebOptions):
    artifact = state.artifact
    runtime = runtime_for(artifact.path)
    if options.runtime and runtime.package != options.runtime:
        raise ConfigError(f"{artifact.path}: runs in {runtime.package}, not {options.runtime}; "
                          "export_web takes export_onnx's artifact for onnxruntime-web and "
                          "export_tflite's for @litertjs/core")
    installed = version(runtime)
    browser = chromium_version(chromium())
    check_types(runtime, [*artifact.inputs, *artifact.outputs], artifact.path)
    web = {"package": runtime.package, "version": installed, "backend": "wasm",
           "browser": browser}
    name = storage.basename(artifact.path)
    summary = (*artifact.summary,
               f"in a page: {runtime.package}@{installed} (wasm), "
               f"{runtime.loads.replace('url', repr(name))}")
    return dataclasses.replace(state, artifact=dataclasses.replace(
        artifact, format=FORMAT, facts={**artifact.facts, "web": web}, summary=summary,
        loaded=None))


STAGE = Stage("export_web", run, "artifact", "artifact", WebOptions,
              summary="the ONNX or .tflite artifact for the browser: verified in headless "
                      "Chromium by onnxruntime-web or LiteRT.js (wasm)",
              prepare=prepare, floor=always, source_graph=False)
FORMAT = Format("web", STAGE, open=open_web, extra="web", floor=True)
