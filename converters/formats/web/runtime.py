"""An artifact run in its browser runtime (runtimes.py: onnxruntime-web for .onnx, LiteRT.js for
.tflite, each on its wasm backend) in a headless Chromium (browser.py), one browser per session,
started at its first run and ended with the session. Verification runs the page on the same
inputs as every other target; an op the runtime has no kernel for is one line naming it."""

from __future__ import annotations

import atexit
import re
import weakref

from graphfreeze.errors import GraphFreezeError, RunError
from graphfreeze.formats.web.browser import Browser, chromium
from graphfreeze.formats.web.runtimes import Runtime, check_types, modules, runtime_for, version
from graphfreeze.plugins import Session

# what each runtime says of an op it has no kernel for
NO_KERNEL = (re.compile(r"Could not find an implementation for (\w+)\(\d+\) node with name "
                        r"'([^']*)'"),
             re.compile(r"(\w+)\(-?\d+\) is not a registered function/op()"),
             re.compile(r"(?:Didn't find op for builtin opcode|unresolved custom op:?|"
                        r"Unsupported (?:builtin )?op(?:eration)?:?) '?(\w+)'?()", re.IGNORECASE))
NOISE = re.compile(r"^Uncaught (?:\w*Error: )?|ERROR_CODE: \d+, ERROR_MESSAGE: |\S+\.cc:\d+ ")


_EARLY: dict[str, Browser] = {}  # browsers started by `start_early`, by runtime name


def start_early(runtime: Runtime, threads: int = 2) -> None:
    """A browser for `runtime` started now (Chromium up, the runtime loading) for the next
    session of it to take, while the artifact is still being written; nothing when Chromium or
    the runtime is missing (the session says so in one line)."""
    if runtime.name in _EARLY:
        return
    try:
        version(runtime)
        browser = Browser(runtime.name, modules(), threads).start(chromium())
    except GraphFreezeError:
        return
    atexit.register(browser.close)
    _EARLY[runtime.name] = browser


def open_web(path: str, inputs, outputs, *, threads: int = 2, keep: tuple[str, ...] = (),
             untrusted: bool = False, loaded=None) -> WebSession:
    return WebSession(path, inputs, outputs, threads)


def _node(name: str) -> str:
    return name.rsplit(":", 1)[0] if name.rsplit(":", 1)[-1].isdigit() else name


def matched(listed: list[dict], infos) -> list:
    """The TensorInfo for each tensor the page lists, by name (`x`, `x:0`), else by position."""
    by_node = {_node(i.name): i for i in infos}
    found = [by_node.get(_node(d["name"])) for d in listed]
    if None in found and len(listed) == len(infos):
        return list(infos)
    if None in found:
        raise RunError(f"its tensors are {', '.join(d['name'] for d in listed)}, not "
                       f"{', '.join(i.name for i in infos)} as its sidecar says")
    return found


class WebSession(Session):
    def __init__(self, path: str, inputs, outputs, threads: int):
        self.runtime = runtime_for(path)
        self.version = version(self.runtime)  # one line naming what to install, else
        self.chromium = chromium()
        check_types(self.runtime, [*inputs, *outputs], path)
        self.path, self.inputs, self.outputs, self.threads = path, inputs, outputs, threads
        self.label = f"{self.runtime.package} {self.version} (wasm)"
        self._browser: Browser | None = None
        self._page: dict = {}

    def _started(self) -> Browser:
        if self._browser is None:
            early = _EARLY.pop(self.runtime.name, None)
            browser = early or Browser(self.runtime.name, modules(), self.threads)
            weakref.finalize(self, browser.close)  # Chromium ends with the session
            try:
                self._page = (early or browser.start(self.chromium)).load(self.path)
            except RunError as err:
                raise self._refused(err) from err
            self._browser = browser
            agent = re.search(r"Chrome/([\d.]+)", self._page.get("agent", ""))
            self.label += f" in Chromium {agent.group(1) if agent else '(unknown version)'}"
        return self._browser

    def _refused(self, err: RunError) -> RunError:
        """The runtime's error, as one line: the op it has no kernel for, when it says so."""
        said = str(err)
        where = f"{self.runtime.package} {self.version}'s wasm backend"
        for pattern in NO_KERNEL:
            found = pattern.search(said)
            if found:
                node = f" (node '{found.group(2)}')" if found.group(2) else ""
                return RunError(f"op {found.group(1)}{node} has no kernel in {where}, so the "
                                "browser cannot run it; choose another target for this model")
        said = NOISE.sub("", said.splitlines()[0] if said else "no reason given")
        return RunError(f"{where} in Chromium cannot run it ({said})")

    def run(self, feeds: dict) -> list:
        import numpy as np

        browser = self._started()
        page_inputs = self._page["inputs"]
        infos = matched(page_inputs, self.inputs)
        arrays = [np.asarray(feeds[i.name], dtype=i.dtype) for i in infos]
        names = [d["name"] for d in page_inputs]
        fixed = [d.get("shape", [None])[:1] == [1] for d in page_inputs]
        rows = arrays[0].shape[0] if arrays and arrays[0].ndim else 1
        if rows > 1 and any(fixed):  # converted at batch 1 (LiteRT.js resizes no input)
            parts = [self._run(browser, names, [a[r:r + 1] for a in arrays]) for r in range(rows)]
            return [np.concatenate(p) for p in zip(*parts, strict=True)]
        return self._run(browser, names, arrays)

    def _run(self, browser: Browser, names: list[str], arrays: list) -> list:
        import numpy as np

        listed = self._page["outputs"]
        fetch = [d["name"] for d in listed] if self.runtime.name == "litert" else \
            [o.name for o in self.outputs]
        try:
            got = browser.run(names, arrays, fetch)
        except RunError as err:
            raise self._refused(err) from err
        by_info = dict(zip([i.name for i in matched([{"name": n} for n in fetch], self.outputs)],
                           got, strict=True))
        return [np.asarray(by_info[o.name]).astype(o.dtype, copy=False) for o in self.outputs]

    def tensors(self, feeds: dict) -> dict:
        raise RunError(f"{self.runtime.package} in the browser keeps no intermediate tensors; the "
                       "onnx or tflite target's verification locates where it diverges")
