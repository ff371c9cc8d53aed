"""export_web: the artifact export_onnx or export_tflite made (the stage before it in the target),
taken as a web artifact: run in its browser runtime from then on (runtime.py: verify and `freeze
verify` run it in headless Chromium), its sidecar saying which npm package and version and
which Chromium ran it. Chromium, the npm runtime and the tensor types are checked here, before
verification, so a missing one is one line and nothing is written."""

from __future__ import annotations

import dataclasses

from graphfreeze.formats.web.browser import chromium, chromium_version
from graphfreeze.formats.web.runtime import open_web
from graphfreeze.formats.web.runtimes import check_types, runtime_for, version
from graphfreeze.io import storage
from graphfreeze.plugins import Format, Stage, always


def run(state, options):
    artifact = state.artifact
    runtime = runtime_for(artifact.path)
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


STAGE = Stage("export_web", run, "artifact", "artifact",
              summary="the ONNX or .tflite artifact for the browser: verified in headless "
                      "Chromium by onnxruntime-web or LiteRT.js (wasm)",
              floor=always, source_graph=False)
FORMAT = Format("web", STAGE, open=open_web, extra="web", floor=True)
