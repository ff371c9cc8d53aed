"""`freeze explain` as a user runs it, its page in a real headless Chromium: the graph renders
with the overlay applied (the worst node drawn dark red on the canvas, its value so coloured in
the side panel), every request stays on 127.0.0.1 (the browser's, and the server's: a proxy
trap sees none of Model Explorer's update checks), its read-a-file endpoint serves the overlays
and no other file, and Ctrl-C stops it with exit 0."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from ..batch.test_report_html import CHROMIUM, Browser
from ..network_trap import Trap
from .conftest import ENV, FREEZE

WIDTH, HEIGHT, PANEL = 1400, 900, 1000  # Model Explorer's side panel starts right of x=1000


def start_explain(folder: Path, *args: str, env=None) -> tuple[subprocess.Popen, list[str]]:
    """`freeze explain ARGS` started; (the process, its first lines once it prints the URL)."""
    proc = subprocess.Popen([FREEZE, "explain", *args], cwd=folder, env=env or ENV, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines = []
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))
        if line.startswith("serving on "):
            break
    return proc, lines


def stop(proc: subprocess.Popen) -> tuple[int, str]:
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    return proc.returncode, err


@pytest.fixture
def browser(tmp_path):
    if CHROMIUM is None:
        pytest.skip("chromium is not installed: `make chromium` (apt-get install chromium)")
    page = Browser(tmp_path / "chromium-profile")
    page.call("Network.enable", session=True)
    page.call("Emulation.setDeviceMetricsOverride", session=True, width=WIDTH, height=HEIGHT,
              deviceScaleFactor=1, mobile=False)
    yield page
    page.close()


def _worst(data: dict) -> tuple[str, str]:
    """(value as the panel shows it, colour) of the node `freeze explain` selects: the largest
    |diff| (dark red when it is beyond the tolerance; on some CPUs' fp16 kernels nothing is)."""
    worst = max(data["results"].values(), key=lambda r: r["value"])
    return f"{worst['value']:g}", worst["bgColor"]


def _backgrounds_of(browser, text: str) -> list[str]:
    """The background colours of the side panel's boxes showing exactly `text`."""
    return browser.call("Runtime.evaluate", session=True, returnByValue=True, expression=f"""
        Array.from(document.querySelectorAll('*')).filter(e => e.children.length === 0 &&
          e.textContent.trim() === {json.dumps(text)}).map(e => {{
            for (let p = e; p; p = p.parentElement) {{
              const c = getComputedStyle(p).backgroundColor;
              if (c !== 'rgba(0, 0, 0, 0)') return c; }}
            return ''; }})""")["result"]["value"]


def _canvas_pixels(browser, color: str) -> int:
    """Pixels of `color` (#rrggbb) left of the side panel in a screenshot (decoded by the
    page itself)."""
    shot = browser.call("Page.captureScreenshot", session=True, format="png")["data"]
    rgb = [int(color[k:k + 2], 16) for k in (1, 3, 5)]
    return browser.call("Runtime.evaluate", session=True, returnByValue=True, awaitPromise=True,
                        expression=f"""(async () => {{
        const img = new Image(); img.src = 'data:image/png;base64,{shot}'; await img.decode();
        const c = document.createElement('canvas'); c.width = img.width; c.height = img.height;
        const g = c.getContext('2d'); g.drawImage(img, 0, 0);
        const d = g.getImageData(0, 0, {PANEL}, img.height).data; let n = 0;
        for (let i = 0; i < d.length; i += 4)
          if (d[i] === {rgb[0]} && d[i + 1] === {rgb[1]} && d[i + 2] === {rgb[2]}) n++;
        return n; }})()""")["result"]["value"]


def test_the_page_shows_the_graph_with_the_worst_node_highlighted(explained, browser):
    trap = Trap()
    env = trap.proxied(ENV)
    began = time.monotonic()
    proc, lines = start_explain(explained, "out/model.ckpt-200.tflite-fp16.tflite", "--port", "0", env=env)
    try:
        startup = time.monotonic() - began
        assert lines and lines[0].startswith("Model Explorer: http://127.0.0.1:"), lines
        assert re.search(r"worst dnn/logits/folded \(fully_connected\) \([\d.e-]+\), selected",
                         lines[1]), lines  # (how far: the CPU's fp16 kernels')
        print(f"freeze explain: URL after {startup:.1f} s")
        url = lines[0].split(" ", 2)[2]
        browser.events.clear()
        browser.call("Page.navigate", session=True, url=url)
        browser.wait_for("Page.loadEventFired")
        car = json.loads((explained / "out/model.ckpt-200.tflite-fp16.tflite.json").read_text())
        data = json.loads((explained / "out" / car["explain"]["divergence"]).read_text())
        deadline, shown = time.monotonic() + 40, []
        text, color = _worst(data)
        while time.monotonic() < deadline and not shown:  # the page renders, then the overlay
            shown = _backgrounds_of(browser, text)
            time.sleep(0.3)
        worst_rgb = "rgb({}, {}, {})".format(*(int(color[k:k + 2], 16) for k in (1, 3, 5)))
        assert worst_rgb in shown, shown  # the selected node's value, in the overlay's colour
        deadline, pixels = time.monotonic() + 10, 0
        while time.monotonic() < deadline and pixels <= 500:  # the canvas redraws with it
            pixels = _canvas_pixels(browser, color)
        assert pixels > 500  # the node itself, in its colour
        base = url.split("/?")[0]
        for path, served in ((explained / "out" / car["explain"]["divergence"], True),
                             (explained / "model.ckpt-200.index", False)):
            with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
                    f"{base}/api/v1/read_text_file?path={path}", timeout=10) as r:
                answer = json.loads(r.read())
            assert ("content" in answer) == served, answer  # the overlays, no other file
        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        other = explained / "other.tflite"  # another model file, readable by the adapter
        other.write_bytes((explained / "out/model.ckpt-200.tflite-fp16.tflite").read_bytes())
        for path, read in ((explained / "out/model.ckpt-200.tflite-fp16.tflite", True), (other, False)):
            command = {"cmdId": "convert", "extensionId": "builtin_tflite_flatbuffer",
                       "modelPath": str(path), "settings": {}, "deleteAfterConversion": True}
            with direct.open(urllib.request.Request(
                    f"{base}/apipost/v1/send_command", json.dumps(command).encode(),
                    {"Content-Type": "application/json"}), timeout=30) as r:
                answer = json.loads(r.read())
            assert ("error" not in answer) == read, str(answer)[:200]
            assert path.exists()
        rebound = urllib.request.Request(f"{base}/api/v1/read_text_file?path=x",
                                         headers={"Host": "evil.example.com"})
        with pytest.raises(urllib.error.HTTPError, match="403"):  # DNS rebinding: refused
            direct.open(rebound, timeout=10)
        requests = [e["params"]["request"]["url"] for e in browser.events
                    if e.get("method") == "Network.requestWillBeSent"]
        assert requests and all(u.startswith(url.split("/?")[0]) or u.startswith(("data:",
                                                                                 "blob:"))
                                for u in requests), [u[:80] for u in requests]
        assert trap.hits == []  # no update check, no telemetry from the server
    finally:
        code, err = stop(proc)
        trap.sock.close()
    assert code == 0 and err.strip().endswith("Model Explorer stopped"), err
