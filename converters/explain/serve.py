"""`freeze explain ARTIFACT`: Model Explorer's own server (ai-edge-model-explorer, the
`explorer` extra) on 127.0.0.1, with the artifact and the overlays `--explain` wrote beside it
loaded, the worst node selected.

The artifact is read by Model Explorer's built-in adapter for its format (`Format.explorer`),
which parses the file and runs nothing (no TensorFlow, no graph, no code stored in a model). It
is read here once before the server starts: a file it cannot read is one line, and the worst
node's id is known for the URL. Nothing leaves the machine: Model Explorer's update check (PyPI
and GitHub, at start and when the page asks) is answered locally, and its page is served
without the Google Fonts links of its index.html (the same fonts ship in its static files). Its
endpoint that reads a text file by path serves the overlays only, its adapters read the
artifact only, and requests addressed by another host name (DNS rebinding) are refused.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import re
import socket
import threading
import time
import urllib.parse
import urllib.request

from graphfreeze.errors import ConfigError, InputError, first_line, install_hint
from graphfreeze.explain.graphs import cannot_draw, drawn, reads, recognized
from graphfreeze.explain.overlay import KINDS, WORST, overlay_path

HOST = "127.0.0.1"
PORTS = range(8080, 8100)  # Model Explorer's own default and the ports it tries next
START_SECONDS = 60
_NO_NEW_VERSION = {"version": "", "runningVersion": "", "releaseUrl": "", "desktopAppUrl": ""}


@dataclasses.dataclass(frozen=True)
class Explained:
    """An artifact Model Explorer reads, with its overlays: what `start` serves."""

    path: str  # absolute
    adapter: str
    overlays: dict  # kind -> absolute path of the node-data file
    graph_id: str
    worst: dict  # kind -> (node id, its name, value) of the node each overlay shows worst, or
    # None when every node it colours is exact
    matched: dict  # kind -> how many of the overlay's results name a node of the graph

    @property
    def selected(self) -> str:
        """The node the page opens on: the divergence's worst, else the quantization's."""
        worst = self.worst.get("divergence") or self.worst.get("quantization")
        return worst[0] if worst else ""


def require_model_explorer() -> None:
    try:
        import ai_edge_model_explorer_adapter  # noqa: F401
        import model_explorer  # noqa: F401
    except ImportError as err:
        raise ConfigError("freeze explain needs Model Explorer (ai-edge-model-explorer), not "
                          f"installed; {install_hint('explorer')}") from err


def prepare(path: str) -> Explained:
    """The artifact at `path` checked (one InputError each): a local file or folder of a format
    Model Explorer reads, with its sidecar, the same bytes, and the overlays `--explain` wrote;
    Model Explorer's adapter reads it and the overlays name its nodes."""
    from graphfreeze.io import storage

    require_model_explorer()
    if storage.is_remote(path):
        raise InputError(f"{path}: Model Explorer opens local files; copy the artifact and its "
                         "sidecar and overlays here first")
    path = os.path.abspath(path.rstrip("/"))
    if not os.path.exists(path):
        raise InputError(f"{path}: not found; give an artifact graphfreeze wrote")
    from graphfreeze.registry import Registry

    registry = Registry.default()
    sidecar = _sidecar(path)
    fmt = sidecar.get("format") if sidecar else recognized(path, registry)
    explorers = drawn(registry)
    if fmt not in explorers:
        what = cannot_draw(fmt, registry) if sidecar else \
            f"not a file Model Explorer reads (it reads {reads(registry)})"
        raise InputError(f"{path}: {what}; give an artifact of one of those graphfreeze wrote "
                         "with --explain")
    adapter = explorers[fmt].adapter
    if sidecar is None:
        raise InputError(f"{path}: no sidecar {os.path.basename(path)}.json beside it; freeze "
                         "explain opens an artifact graphfreeze wrote with --explain")
    names = sidecar.get("explain") or {}
    overlays = {k: os.path.join(os.path.dirname(path), names[k]) for k in KINDS if k in names}
    if not overlays or not all(os.path.isfile(p) for p in overlays.values()):
        missing = [p for p in overlays.values() if not os.path.isfile(p)]
        why = f"its overlay {os.path.basename(missing[0])} is missing" if missing else \
            "it has no explain overlay"
        raise InputError(f"{path}: {why}; convert the model again with --explain (it writes "
                         f"{os.path.basename(overlay_path(path, 'divergence'))} beside it)")
    from graphfreeze.stages.verify.verify_file import check_digest

    check_digest(path, [path], sidecar.get("sha256"))
    graph = read_graph(path, adapter)
    worst, matched = {}, {}
    for kind, where in overlays.items():
        worst[kind], matched[kind] = _match(where, graph)
        if not matched[kind]:
            raise InputError(f"{where}: names no node of {path}'s graph; convert the model "
                             "again with --explain")
    return Explained(path, adapter, overlays, graph["id"], worst, matched)


def _sidecar(path: str) -> dict | None:
    try:
        with open(f"{path}.json", "rb") as f:
            data = json.loads(f.read())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and "graphfreeze_version" in data else None


def read_graph(path: str, adapter: str) -> dict:
    """The first graph Model Explorer's adapter `adapter` makes of `path` (its JSON: id,
    nodes); it parses the file, running nothing. An InputError when it cannot."""
    from graphfreeze.process.quiet import native_stderr_off

    with native_stderr_off():  # the adapter's library logs as it loads
        from model_explorer.extension_manager import ExtensionManager

        manager = ExtensionManager()
        manager.load_extensions()
        try:
            found = manager.run_cmd({"extensionId": adapter, "cmdId": "convert",
                                     "modelPath": path, "settings": {},
                                     "deleteAfterConversion": False})
        except Exception as err:  # noqa: BLE001 -- the adapter's own error, in one line
            raise InputError(f"{path}: Model Explorer cannot read it ({first_line(err)}); "
                             "convert the model again") from err
    graphs = [g for c in found.get("graphCollections", []) for g in c.get("graphs", [])] or \
        found.get("graphs", [])
    if not graphs:
        raise InputError(f"{path}: Model Explorer finds no graph in it; convert the model again")
    return graphs[0]


def _match(where: str, graph: dict) -> tuple[tuple[str, str, float] | None, int]:
    """((id, name, value) of the node the overlay at `where` shows worst, how many results name
    a node of `graph`): a result names a node by id or by an output tensor's name."""
    with open(where, "rb") as f:
        data = json.loads(f.read())
    ids = {}
    for node in graph.get("nodes", []):
        ids[node["id"]] = node["id"]
        for meta in node.get("outputsMetadata") or []:
            for attr in meta.get("attrs") or []:
                if attr.get("key") == "tensor_name":
                    ids.setdefault(attr.get("value"), node["id"])
    found = {ids[k]: r for k, r in (data.get("results") or {}).items() if k in ids}
    if not found:
        return None, 0
    node = max(found, key=lambda n: (found[n].get("bgColor") == WORST, found[n]["value"]))
    if not found[node]["value"]:  # every node exact: none to point at
        return None, len(found)
    named = next(n for n in graph["nodes"] if n["id"] == node)
    name = f"{named.get('namespace') or node} ({named.get('label', '?')})"
    return (node, name, found[node]["value"]), len(found)


def pick_port(port: int | None) -> int:
    """`port` if free on 127.0.0.1 (0: any free one), else an InputError naming it; without
    one, the first free of 8080-8099, else any."""
    if port is not None:
        if port and not _free(port):
            raise InputError(f"port {port} on {HOST} is in use; pass --port with a free port "
                             "(or --port 0 for any free one)")
        return port or _any_port()
    return next((p for p in PORTS if _free(p)), None) or _any_port()


def _free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds it
        try:
            s.bind((HOST, port))
        except OSError:
            return False
    return True


def _any_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def url(explained: Explained, port: int) -> str:
    """The page: the artifact by its adapter, every overlay (the divergence's colours shown),
    its worst node selected (Model Explorer's `data` parameter, with the UI state its page keeps
    there)."""
    pane = {"deepestExpandedGroupNodeIds": [], "selectedNodeId": explained.selected,
            "selectedGraphId": explained.graph_id,
            "selectedCollectionLabel": os.path.basename(explained.path), "widthFraction": 1,
            "selected": False}
    shown = sorted(explained.overlays, key=lambda k: k == "divergence")  # the last is shown
    data = {"models": [{"url": explained.path, "adapterId": explained.adapter}],
            "nodeData": [explained.overlays[k] for k in shown],
            "nodeDataTargets": [""] * len(shown),
            "uiState": {"paneStates": [pane]}}
    return f"http://{HOST}:{port}/?data={urllib.parse.quote(json.dumps(data))}"


@contextlib.contextmanager
def serving(explained: Explained, port: int):
    """Model Explorer's server on 127.0.0.1:`port` (a daemon thread, gone with the process),
    offline; yields a function saying whether it still runs."""
    import model_explorer
    from model_explorer import server

    server._check_new_version = lambda print_msg=True: dict(_NO_NEW_VERSION)  # noqa: SLF001
    served = server._serve_static_asset  # noqa: SLF001

    def offline(rel_path: str):
        if rel_path != "index.html":
            return served(rel_path)
        import flask

        with open(os.path.join(server.OSS_WEB_APP_DIR, "index.html"), encoding="utf-8") as f:
            page = f.read()
        return flask.Response(without_web_fonts(page), mimetype="text/html")

    server._serve_static_asset = offline  # noqa: SLF001
    overlays = {os.path.realpath(p) for p in explained.overlays.values()}
    read_text = server._read_file_content  # noqa: SLF001

    def only_overlays(path: str) -> str:  # its page reads the overlays; nothing else is served
        if os.path.realpath(os.path.expanduser(path)) not in overlays:
            raise PermissionError(f"{path}: freeze explain serves only its overlays")
        return read_text(path)

    server._read_file_content = only_overlays  # noqa: SLF001
    _only_the_artifact(explained.path)
    server.flask = _local_flask(server.flask, port)
    config = model_explorer.config().add_model_from_path(explained.path, explained.adapter)
    for where in explained.overlays.values():
        config.add_node_data_from_path(where)
    thread = threading.Thread(target=server.start, daemon=True, kwargs={
        "host": HOST, "port": port, "config": config, "no_open_in_browser": True,
        "skip_health_check": True})
    with contextlib.redirect_stdout(io.StringIO()):  # its banner: the URL is ours to print
        thread.start()
        _wait_healthy(port, thread)
    yield thread.is_alive


def _only_the_artifact(path: str) -> None:
    """Its adapters' commands read the artifact only (any modelPath was read), and delete
    nothing (`deleteAfterConversion` marked the path for removal)."""
    from model_explorer.extension_manager import ExtensionManager

    artifact, run_cmd = os.path.realpath(path), ExtensionManager.run_cmd

    def run(self, cmd):
        asked = cmd.get("modelPath") if isinstance(cmd, dict) else None
        if asked is not None and os.path.realpath(os.path.expanduser(str(asked))) != artifact:
            raise PermissionError(f"{asked}: freeze explain reads only {path}")
        return run_cmd(self, cmd)

    ExtensionManager.run_cmd, ExtensionManager.cleanup = run, lambda self, cmd: None


def _local_flask(flask, port: int):
    """`flask` whose apps answer only requests addressed to this server by name (a page of
    another site reaching 127.0.0.1 through its own DNS name, rebinding, gets 403)."""
    import types

    hosts = {f"{HOST}:{port}", f"localhost:{port}"}

    class Local(flask.Flask):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.before_request(lambda: None if flask.request.host in hosts else flask.abort(403))

    return types.SimpleNamespace(**{**vars(flask), "Flask": Local})


def without_web_fonts(page: str) -> str:
    """Model Explorer's index.html without what it loads from fonts.gstatic.com (a preconnect
    and inline @font-face rules; styles.css declares the same fonts from its static files)."""
    page = re.sub(r"<link[^>]*fonts\.gstatic\.com[^>]*>", "", page)
    return re.sub(r"<style>(?:(?!</style>).)*fonts\.gstatic\.com(?:(?!</style>).)*</style>", "",
                  page, flags=re.S)


def _wait_healthy(port: int, thread: threading.Thread) -> None:
    local = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # no proxy for 127.0.0.1
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline and thread.is_alive():
        try:
            with local.open(f"http://{HOST}:{port}/check_health", timeout=2) as r:
                if r.read() == b"model_explorer_ok":
                    return
        except OSError:
            time.sleep(0.05)
    raise InputError(f"Model Explorer's server did not start on {HOST}:{port}; pass --port "
                     "with another free port")
