"""report.html in a real headless browser (Debian's chromium; `make test` installs it): the page
of a real batch run (a baseline with changes, a broken budget, a failed verification) and of a
synthetic report (a not-run job) loads with no console error, no failed request, and shows
every job. Chromium is driven over the DevTools protocol on a pipe (--remote-debugging-pipe:
no port, no websockets)."""

from __future__ import annotations

import fcntl
import json
import os
import re
import select
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from graphfreeze.batch import report as rep
from graphfreeze.batch.results import FAILED, NOT_RUN, OK, JobResult, Report

from .test_baseline import converted, edited_baseline, run_batch  # noqa: F401 -- fixtures

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium")
                                        else None)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--remote-debugging-pipe"]


class Browser:
    """A headless Chromium and one page, over the DevTools protocol on fds 3 and 4."""

    def __init__(self, profile: Path):
        to_browser, self._write = os.pipe()
        self._read, from_browser = os.pipe()

        def fds() -> None:  # the browser reads commands on fd 3 and writes on fd 4
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_browser, from_browser)]
            os.dup2(high[0], 3)  # inheritable (the pipes' own fds may be 3 and 4: close-on-exec)
            os.dup2(high[1], 4)

        self.proc = subprocess.Popen([CHROMIUM, *FLAGS, f"--user-data-dir={profile}"],
                                     preexec_fn=fds, close_fds=False, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        os.close(to_browser)
        os.close(from_browser)
        self._buffer, self._id, self.events = b"", 0, []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target,
                                 flatten=True)["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            self.call(f"{domain}.enable", session=True)

    def _send(self, method: str, session: bool, params: dict) -> int:
        self._id += 1
        message = {"id": self._id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        return self._id

    def _next(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._read], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise TimeoutError("chromium did not answer")
            chunk = os.read(self._read, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(raw)

    def call(self, method: str, session: bool = False, timeout: float = 30, **params) -> dict:
        wanted = self._send(method, session, params)
        deadline = time.monotonic() + timeout
        while True:
            message = self._next(deadline)
            if message.get("id") == wanted:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def wait_for(self, method: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == method for e in self.events):
            self.events.append(self._next(deadline))

    def open(self, path: Path) -> str:
        """Load a file; its text as shown."""
        self.events.clear()
        self.call("Page.navigate", session=True, url=path.resolve().as_uri())
        self.wait_for("Page.loadEventFired")
        found = self.call("Runtime.evaluate", session=True, returnByValue=True,
                          expression="document.body.innerText")
        return found["result"]["value"]

    def errors(self) -> list[str]:
        """Console errors and warnings, uncaught exceptions, failed loads (Log entries)."""
        out = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "warning"):
                out.append(f"console.{params['type']}: {params.get('args')}")
            elif method == "Runtime.exceptionThrown":
                out.append(f"exception: {params.get('exceptionDetails')}")
            elif method == "Log.entryAdded" and params["entry"]["level"] in ("error", "warning"):
                out.append(f"log: {params['entry'].get('text')} {params['entry'].get('url', '')}")
        return out

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=10)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._write)
        os.close(self._read)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if CHROMIUM is None:
        pytest.skip("chromium is not installed: `make chromium` (apt-get install chromium) "
                    "installs it; `make test` does")
    page = Browser(tmp_path_factory.mktemp("chromium-profile"))
    yield page
    page.close()


def test_real_run_page_loads_clean_and_shows_every_job(browser, converted, edited_baseline):  # noqa: F811
    ws, _ = converted
    done = run_batch(ws, "--baseline", edited_baseline, "--fail-on", "size > +5%")
    assert done.returncode == 8, done.stdout + done.stderr
    strict = run_batch(ws, manifest="strict.toml")
    assert strict.returncode == 7, strict.stdout + strict.stderr
    for folder, names in ((ws / "dist", ["iris", "tf2"]), (ws / "strict", ["iris_strict"])):
        report = json.loads((folder / "report.json").read_text())
        text = browser.open(folder / "report.html")
        assert browser.errors() == [], browser.errors()
        assert [job["name"] for job in report["jobs"]] == names
        for name in names:
            assert name in text
        from importlib.metadata import version

        from graphfreeze import __version__

        assert version("tensorflow") in text and __version__ in text and "started" in text
    text = browser.open(ws / "dist" / "report.html")
    assert text.index("Over budget") < text.index("Against the baseline") < text.index("Jobs")
    assert "▲" in text and "breaks `size > +5%`" in text
    links = browser.call("Runtime.evaluate", session=True, returnByValue=True, expression=(
        "Array.from(document.links).map(a => [a.getAttribute('href'), a.href])"))["result"]["value"]
    assert links and all(not h.startswith(("/", "file:", "http")) for h, _ in links), links
    for _, url in links:  # every link resolves to an artifact that exists
        assert Path(url.removeprefix("file://")).exists(), url
    text = browser.open(ws / "strict" / "report.html")
    error = json.loads((ws / "strict" / "report.json").read_text())["jobs"][0]["error"]
    said = re.search(r"differs by up to ([-+.\deE]+)", error).group(1)  # (the CPU's kernels')
    assert said in text and "where it diverges" in text and "dnn/Relu" in text


def test_synthetic_page_with_a_not_run_job(browser, tmp_path):
    jobs = (JobResult("done", "m/done", ("android",), OK, 1.5),
            JobResult("broken", "m/broken", ("android", "tflite"), FAILED, 0.04,
                      error="m/broken: not a model", exit_code=3),
            JobResult("later", "m/later", ("android",), NOT_RUN, 0.0,
                      error="not run: interrupted", attempts=0))
    report = Report(jobs=jobs, seconds=2.0, interrupted=True,
                    run={"started": "2026-01-01 00:00:00 UTC", "manifest": "models.toml",
                         "graphfreeze": "0.1.0", "tensorflow": "2.21.0"})
    path = Path(rep.write_reports(report, str(tmp_path))["html"])
    text = browser.open(path)
    assert browser.errors() == []
    for name in ("done", "broken", "later"):
        assert name in text
    assert "NOT-RUN" in text.upper() and "0.04 s" in text
    assert text.count("m/broken: not a model") == 1  # once per job, not per target
