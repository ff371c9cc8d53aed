"""A headless Chromium (Debian's package, or GRAPHFREEZE_CHROMIUM) running one artifact in its npm
runtime's wasm build: a page (page.html) served from 127.0.0.1 (a free port, or
GRAPHFREEZE_WEB_PORT) loads the runtime from web/node_modules and the artifact, then runs each
job it GETs (inputs as binary) and POSTs the outputs back. Chromium is started with the page's
URL and ended, with its process group, when the browser is closed."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import queue
import shutil
import signal
import struct
import subprocess
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from graphfreeze.errors import ConfigError, RunError

CHROMIUM_ENV = "GRAPHFREEZE_CHROMIUM"
PORT_ENV = "GRAPHFREEZE_WEB_PORT"
DEFAULT_CHROMIUM = "/usr/bin/chromium"
HOST = "127.0.0.1"
PAGE = Path(__file__).with_name("page.html")
READY_SECONDS = 120  # the runtime's wasm compiled and the model loaded
GIVEN_SECONDS = 3600  # how long a browser started early (`start`) waits for its model
POLL_SECONDS = 10  # how long a GET /job waits for a job before the page asks again
TYPES = {".js": "text/javascript", ".mjs": "text/javascript", ".wasm": "application/wasm",
         ".json": "application/json", ".html": "text/html"}
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--no-default-browser-check", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-extensions",
         "--disable-default-apps", "--mute-audio")


def chromium() -> str:
    """The Chromium to run; one ConfigError line naming what to install when it is not there."""
    path = os.environ.get(CHROMIUM_ENV) or DEFAULT_CHROMIUM
    found = shutil.which(path)
    if not found:
        raise ConfigError(f"the web format verifies in headless Chromium, not found at {path}; "
                          f"install it (apt-get install chromium) or set {CHROMIUM_ENV} to its path")
    return found


def chromium_version(path: str) -> str:
    """`chromium --version`'s words, e.g. 'Chromium 156.0.8078.108'."""
    try:
        done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise ConfigError(f"{path} --version did not answer ({err}); the web format verifies in "
                          f"headless Chromium: give a working one in {CHROMIUM_ENV}") from None
    words = done.stdout.split()
    return " ".join(words[:2]) if len(words) >= 2 else path


def pack(header: dict, arrays: list) -> bytes:
    """[u32 header length][JSON header][the arrays' bytes], each array listed in
    header["inputs"] with its offset (what page.html's `unpack` reads)."""
    import numpy as np

    entries, blobs, offset = [], [], 0
    for entry, array in zip(header.get("inputs", []), arrays, strict=True):
        data = np.ascontiguousarray(array).tobytes()
        entries.append({**entry, "dtype": str(array.dtype), "shape": list(array.shape),
                        "offset": offset, "bytes": len(data)})
        blobs.append(data)
        offset += len(data)
    head = json.dumps({**header, "inputs": entries}).encode()
    return struct.pack("<I", len(head)) + head + b"".join(blobs)


def unpack(body: bytes) -> tuple[dict, list]:
    """What page.html's `pack` sent: its header and the output arrays."""
    import numpy as np

    (length,) = struct.unpack_from("<I", body)
    header = json.loads(body[4:4 + length])
    base, arrays = 4 + length, []
    for t in header.get("outputs", []):
        data = body[base + t["offset"]:base + t["offset"] + t["bytes"]]
        arrays.append(np.frombuffer(data, dtype=t["dtype"]).reshape(t["shape"]).copy())
    return header, arrays


class Browser:
    """Chromium on the page of runtime `runtime` (page.html's name), started by `start` (early:
    while the artifact is still being written), given its model by `load`, ended by `close`;
    `run` sends one job and returns the page's outputs."""

    def __init__(self, runtime: str, modules: Path, threads: int = 2):
        self.model, self.runtime, self.modules, self.threads = "", runtime, modules, threads
        self.given = threading.Event()  # the model to load is known (`load`)
        self.jobs: queue.Queue = queue.Queue()
        self.results: queue.Queue = queue.Queue()
        self.ready: dict | None = None
        self.loaded = threading.Event()
        self.process: subprocess.Popen | None = None
        self.server: ThreadingHTTPServer | None = None
        self.profile = ""

    def start(self, chromium_path: str) -> Browser:
        """Serve the page and start Chromium on it (it loads the runtime, then waits for the
        model: `load`). ConfigError for a port in use."""
        given = os.environ.get(PORT_ENV) or "0"
        port = int(given) if given.isdigit() and int(given) < 65536 else None
        if port is None:
            raise ConfigError(f"{PORT_ENV}={given}: not a port (0 to 65535); unset it to take a "
                              "free port")
        try:
            self.server = _Server((HOST, port), _handler(self))
        except OSError as err:
            why = "is in use" if err.errno == errno.EADDRINUSE else f"cannot be bound ({err})"
            raise ConfigError(f"{HOST}:{port} ({PORT_ENV}) {why}, so the web format cannot "
                              f"serve its page there; free it, or unset {PORT_ENV} to take a free "
                              "port") from None
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        # a short path: Chromium's socket there must fit a socket address (108 bytes), which a
        # run's own temporary folder (TMPDIR, long) does not; removed by `close`
        self.profile = tempfile.mkdtemp(prefix="graphfreeze-chromium-", dir=_short_temp())
        url = f"http://{HOST}:{self.server.server_address[1]}/?runtime={self.runtime}" \
              f"&threads={self.threads}"
        log = open(os.path.join(self.profile, "chromium.log"), "wb")  # noqa: SIM115
        with log:
            try:
                self.process = subprocess.Popen(
                    [chromium_path, *FLAGS, f"--user-data-dir={self.profile}", url],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                    env={**os.environ, "TMPDIR": self.profile})
            except OSError as err:
                self.close()
                raise ConfigError(f"{chromium_path} does not start ({err.strerror}); the web "
                                  "format verifies in headless Chromium: install it (apt-get "
                                  f"install chromium) or give a working one in {CHROMIUM_ENV}"
                                  ) from None
        return self

    def load(self, model: str) -> dict:
        """The page's {inputs, outputs, agent} once the runtime has loaded `model`; RunError
        when it cannot."""
        self.model = model
        self.given.set()
        deadline = time.monotonic() + READY_SECONDS
        while not self.loaded.wait(0.1):
            self._alive()
            if time.monotonic() > deadline:
                raise RunError(f"the page did not load the model in {READY_SECONDS} s")
        if "error" in self.ready:
            raise RunError(self.ready["error"])
        return self.ready

    def _alive(self) -> None:
        code = self.process.poll() if self.process else None
        if code is not None:
            lines = Path(self.profile, "chromium.log").read_text(errors="replace").splitlines()
            said = next((s for s in lines if ":FATAL:" in s), None) or \
                next((s for s in reversed(lines) if s.strip()), "nothing on stderr")
            raise RunError(f"Chromium exited (code {code}) while running the page: {said}")

    def run(self, names: list[str], arrays: list, outputs: list[str]) -> list:
        """The page's outputs for inputs `names` = `arrays` (fetching `outputs`)."""
        self.jobs.put(pack({"id": 1, "inputs": [{"name": n} for n in names],
                            "outputs": outputs}, arrays))
        while True:
            try:
                header, got = self.results.get(timeout=0.2)
                break
            except queue.Empty:
                self._alive()
        if header.get("error"):
            raise RunError(header["error"])
        return got

    def close(self) -> None:
        self.jobs.put(pack({"stop": True}, []))
        self.given.set()
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
        if self.profile:
            shutil.rmtree(self.profile, ignore_errors=True)
        self.process, self.server, self.profile = None, None, ""


def _short_temp() -> str:
    """The temporary folder, or /tmp where its path is too long for Chromium's socket."""
    temp = tempfile.gettempdir()
    return temp if len(temp) <= 40 or not os.path.isdir("/tmp") else "/tmp"


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        pass  # the page gone while a request was open (Chromium ended)


def _handler(browser: Browser):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # quiet
            pass

        def _send(self, body: bytes, kind: str = "application/octet-stream", code: int = 200):
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            # cross-origin isolated: the runtimes' threaded wasm needs SharedArrayBuffer
            self.send_header("Cross-Origin-Opener-Policy", "same-origin")
            self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 -- http.server's name
            path = self.path.split("?", 1)[0]
            if path == "/":
                self._send(PAGE.read_bytes(), "text/html")
            elif path == "/model":  # asked for as soon as the runtime is loaded
                if browser.given.wait(GIVEN_SECONDS) and browser.model:
                    self._send(Path(browser.model).read_bytes())
                else:
                    self._send(b"no model given", code=404)
            elif path == "/job":
                try:
                    self._send(browser.jobs.get(timeout=POLL_SECONDS))
                except queue.Empty:
                    self._send(b"", code=204)
            elif path.startswith("/npm/"):
                root = browser.modules.resolve()
                file = (root / path[len("/npm/"):]).resolve()
                if root in file.parents and file.is_file():
                    self._send(file.read_bytes(), TYPES.get(file.suffix, "application/octet-stream"))
                else:
                    self._send(b"not found", code=404)
            else:
                self._send(b"not found", code=404)

        def do_POST(self) -> None:  # noqa: N802
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path == "/ready" and not browser.loaded.is_set():
                browser.ready = json.loads(body)
                browser.loaded.set()
            elif self.path == "/result":
                browser.results.put(unpack(body))
            self._send(b"")

    return Handler
