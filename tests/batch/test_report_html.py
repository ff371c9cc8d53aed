"""report.html in a real headless browser (Debian's chromium; `make test` installs it): the page
of a real batch run (a baseline with changes, a broken budget, a failed verification) and of a
synthetic report (a not-run job) loads with no console error, no failed request, and shows
every job; a cached re-run's charts carry the run's numbers, its job times the times the
artifacts took when they were made, and a screenshot of them is painted. Chromium is driven
over the DevTools protocol on a pipe (--remote-debugging-pipe: no port, no websockets)."""

from __future__ import annotations

import base64
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
from graphfreeze.batch.baseline import size
from graphfreeze.batch.results import FAILED, NOT_RUN, OK, JobResult, Report, duration

from .test_baseline import converted, edited_baseline, run_batch  # noqa: F401 -- fixtures
from .test_batch import report_of

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

    def value(self, expression: str):
        """What `expression` (JavaScript, a promise awaited) evaluates to in the page."""
        found = self.call("Runtime.evaluate", session=True, returnByValue=True, awaitPromise=True,
                          expression=expression)
        if "exceptionDetails" in found:
            raise RuntimeError(f"{expression}: {found['exceptionDetails']}")
        return found["result"].get("value")

    def screenshot(self, selector: str, path: Path) -> dict:
        """A PNG of the element `selector` at 1280 px wide, written to `path`; returns what was
        painted: {"pixels", "inked" (not white), "blue" (a bar's colour)}, counted by the page
        itself from the PNG."""
        self.call("Emulation.setDeviceMetricsOverride", session=True, width=1280, height=900,
                  deviceScaleFactor=1, mobile=False)
        box = self.value(f"(r => ({{x: r.x, y: r.y + scrollY, width: r.width, height: r.height}}))"
                         f"(document.querySelector({json.dumps(selector)}).getBoundingClientRect())")
        shot = self.call("Page.captureScreenshot", session=True, format="png",
                         captureBeyondViewport=True, clip={**box, "scale": 1})["data"]
        path.write_bytes(base64.b64decode(shot))
        return self.value(f"""new Promise(done => {{
            const img = new Image();
            img.onload = () => {{
                const c = document.createElement("canvas");
                c.width = img.width; c.height = img.height;
                const g = c.getContext("2d"); g.drawImage(img, 0, 0);
                const d = g.getImageData(0, 0, c.width, c.height).data;
                let inked = 0, blue = 0;
                for (let i = 0; i < d.length; i += 4) {{
                    if (d[i] < 240 || d[i + 1] < 240 || d[i + 2] < 240) inked++;
                    if (d[i] < 60 && d[i + 1] > 80 && d[i + 1] < 140 && d[i + 2] > 190) blue++;
                }}
                done({{pixels: d.length / 4, inked, blue}});
            }};
            img.src = "data:image/png;base64,{shot}";
        }})""")

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
    assert "vs baseline" in text and "vs baseline" not in browser.open(ws / "strict" / "report.html")
    text = browser.open(ws / "dist" / "report.html")
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


def test_real_run_charts_render_and_a_cached_run_shows_when_it_was_made(
        browser, converted, edited_baseline, tmp_path):  # noqa: F811
    ws, _ = converted
    warm = run_batch(ws)  # (converts again only if graphfreeze's code changed since)
    assert warm.returncode == 0, warm.stdout + warm.stderr
    first = report_of(ws / "dist")
    done = run_batch(ws, "--baseline", edited_baseline)  # every job a cache hit; report.md too
    assert done.returncode == 0, done.stdout + done.stderr
    report = report_of(ws / "dist")
    jobs = report["jobs"]
    assert {j["status"] for j in jobs} == {"cached"}
    then = {j["name"]: j.get("made_seconds") or j["seconds"] for j in first["jobs"]}
    for job in jobs:  # the time the cache entry was made in, not this run's read of it
        assert job["made_seconds"] == pytest.approx(then[job["name"]], abs=1e-3)
        assert job["made_seconds"] > job["seconds"]
    text = browser.open(ws / "dist" / "report.html")
    assert browser.errors() == [], browser.errors()
    assert text.index("At a glance") < text.index("Against the baseline") < text.index("Jobs")
    for job in jobs:
        assert f"{duration(job['made_seconds'])} (cached)" in text

    def bars(chart: str) -> list[str]:
        return browser.value(f"[...document.querySelectorAll('#{chart} g.bar title')]"
                             ".map(t => t.textContent)")

    made = [(f"{j['name']}/{a['target']}", a) for j in jobs for a in j["artifacts"]]
    assert {f"{label}: {size(a['bytes'])}" for label, a in made} <= set(bars("chart-size"))
    sources = {f"{j['name']}/{a['target']}: {size(j['source_bytes'])}" for j in jobs
               for a in j["artifacts"]}
    assert all(j["source_bytes"] > 0 for j in jobs) and sources <= set(bars("chart-size"))
    diffs = [t.split(": ") for t in bars("chart-diff")]  # max |diff| and tolerance per label
    for label, a in made:
        worst = max(m["max_abs_diff"] for m in a["sidecar"]["verification"]["metrics"].values())
        said = [float(v) for where, v in diffs if where == label]
        assert any(v == pytest.approx(worst, rel=0.05) for v in said), (label, worst, diffs)
        tolerance = a["sidecar"]["verification"]["tolerance"]
        assert any(v == pytest.approx(tolerance, rel=0.05) for v in said), (label, diffs)
    assert {f"{j['name']} (cached): {duration(j['made_seconds'])}" for j in jobs} == \
        set(bars("chart-time"))
    for chart in ("chart-size", "chart-diff", "chart-time"):
        box = browser.value(f"(r => [r.width, r.height])(document.querySelector('#{chart} svg')"
                            ".getBoundingClientRect())")
        assert box[0] > 300 and box[1] > 100, (chart, box)
    shot = tmp_path / "charts.png"
    painted = browser.screenshot("#charts + div.charts", shot)
    print(f"screenshot: {shot}")
    assert painted["inked"] > painted["pixels"] * 0.05 and painted["blue"] > 1000, painted
    md = (ws / "dist" / "report.md").read_text()
    blocks = re.findall(r"```mermaid\n(.*?)```", md, re.S)
    assert len(blocks) >= 3 and all("xychart-beta" in b for b in blocks), md  # (+ GPU: TFLite)
    assert all(label in blocks[0] and label in blocks[1] for label, _ in made)
    for job in jobs:
        assert f"| {duration(job['made_seconds'])} (cached) |" in md
