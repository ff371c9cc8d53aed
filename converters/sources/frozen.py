"""Sources whose graph is already frozen: a `.pb`/`.pbtxt` GraphDef, and the graph TensorFlow's
`convert_variables_to_constants_v2` makes from a SavedModel signature or a Keras model.

They have no variables to read; the freeze stage only cuts the graph, and the strip/optimize
stages clean it like any other (an old freeze_graph output comes out smaller).
"""

from __future__ import annotations

import contextlib
import re

from graphfreeze.errors import InputError, first_line
from graphfreeze.graph.checks.validate import check_graph_def
from graphfreeze.graph.tables import TABLE_INIT
from graphfreeze.io import storage
from graphfreeze.plugins import Source


class FrozenModel:
    """A frozen GraphDef; `inputs`/`outputs` are the names its maker knows (or None)."""

    kind = "frozen_graph"

    def __init__(self, location: str, graph_file: str, graph_def, inputs=None, outputs=None,
                 validated: bool = True, weights=None):
        self.location = location
        self.validated = validated  # False: a file read unvalidated; the run checks what it needs
        self.graph_file = graph_file
        self.graph_def = graph_def
        self.weights = weights  # its big values held apart as read (graph/held_values.py)
        self.variables: dict = {}
        self.notes: dict = {}
        if any(n.name == TABLE_INIT for n in graph_def.node):  # tables: run it before outputs
            self.notes["table_init"] = TABLE_INIT
        self.default_inputs: list[str] | None = inputs
        self.default_outputs: list[str] | None = outputs

    def __getstate__(self) -> dict:  # run_reference is given its graph
        return {**self.__dict__, "graph_def": None}

    def release(self) -> None:
        """Let the graph go (sources/base.LoadedModel)."""
        self.graph_def = self.weights = None

    def check_variables(self, nodes: list[str]) -> None:
        if nodes:
            raise InputError(f"{self.graph_file}: variable(s) {', '.join(nodes[:3])} in a frozen "
                             "graph have no values; freeze from the checkpoint instead")

    def read_variables(self, nodes: list[str]):
        return iter(())

    def run_reference(self, graph_def, feeds: dict, fetches: list[str]) -> list:
        """The frozen graph is its own original: run it as given (its skeleton with the weights
        fed, as its artifact runs: the same ops, the same numbers, no copies of the weights in
        TensorFlow's graph)."""
        from graphfreeze.graph.skeleton import run_frozen

        with run_errors_said(self.graph_file):
            return run_frozen(graph_def, feeds, fetches, self.weights)


@contextlib.contextmanager
def run_errors_said(graph_file: str):
    """TensorFlow's error from the original's run (an OpError) raised as `failed_run`'s line;
    any other error as it is."""
    from graphfreeze.graph.session import is_run_error

    try:
        yield
    except Exception as err:
        if is_run_error(err):
            raise failed_run(graph_file, err) from err
        raise


def failed_run(graph_file: str, err: BaseException) -> InputError:
    """The original model failed on verification's sample inputs (a broken attr TensorFlow
    checks only when it runs a kernel, an index out of range, ...): TensorFlow's reason without
    its 'Graph execution error' header and stack, and the node it names."""
    text = getattr(err, "message", None) or str(err)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    node = re.search(r"\{\{node ([^}]+)\}\}", text)
    end = next((i for i, line in enumerate(lines) if "{{node" in line), len(lines))
    reason = next((line for line in reversed(lines[:end]) if not line.startswith(
        ("Graph execution error", "Detected at node", "File ", "[["))), type(err).__name__)
    at = f" at node '{node.group(1)}'" if node else ""
    return InputError(f"{graph_file}: the original model fails on verification's sample "
                      f"inputs{at} ({reason}); fix the model, or pass --no-verify")


def read_graph_def(path: str, check: bool = True, weights=None):
    """Parse a GraphDef from `.pb` (binary) or `.pbtxt` (text); devices cleared; validated
    (`check`), else the caller validates what it reads; big values held apart in `weights`
    as they are read, if given (graph/held_values.py)."""
    from google.protobuf import message, text_format
    from graphfreeze.proto.stream import GRAPH_SPLIT
    from graphfreeze.proto.tf import graph_pb2

    graph_def = graph_pb2.GraphDef()
    try:
        if path.endswith((".pbtxt", ".txt")):
            text_format.Parse(storage.read_bytes(path).decode("utf-8"), graph_def)
        else:
            hold = None
            if weights is not None:
                from graphfreeze.graph.held_values import holder

                hold = holder(weights)
            storage.read_proto(path, graph_def, GRAPH_SPLIT, hold)
    except (message.DecodeError, text_format.ParseError, UnicodeDecodeError) as err:
        kind = "text" if path.endswith((".pbtxt", ".txt")) else "binary"
        raise InputError(f"{path}: not a {kind} GraphDef ({first_line(err)}); the file is "
                         "truncated or not a frozen graph") from err
    if not graph_def.node:
        raise InputError(f"{path}: holds no graph nodes; the file is truncated or not a frozen "
                         "graph")
    if check:
        check_graph_def(graph_def, path)
    for node in graph_def.node:
        node.device = ""
    return graph_def


class FrozenGraphSource(Source):
    name = "frozen_graph"
    summary = "frozen GraphDef (.pb, .pbtxt)"
    flag = "--graph"
    order = 40
    floor = True

    def detect(self, path: str) -> bool:
        return path.endswith((".pb", ".pbtxt")) and storage.exists(path)

    def stem(self, path: str, options) -> str:
        return re.sub(r"\.(pb|pbtxt)$", "", path) + ".optimized"

    def load(self, path: str, options, unsafe: bool) -> FrozenModel:
        from graphfreeze.graph.weights import Weights

        weights = Weights()
        graph_def = read_graph_def(path, check=False, weights=weights)
        return FrozenModel(path, path, graph_def, validated=False,
                           weights=weights if weights.arrays else None)

    def scan(self, path: str, options) -> list[InputError]:
        """Host ops in the graph (graph/checks/safety.py), once it parses and validates."""
        from graphfreeze.graph.checks.safety import check_graph
        from graphfreeze.sources.base import faults

        graph_def = read_graph_def(path)
        return faults(check_graph, graph_def, [n.name for n in graph_def.node], path)

    def describe(self, path: str, options, unsafe: bool) -> dict:
        from graphfreeze.graph.graphdefs import op_counts
        from graphfreeze.sources.describe import likely_io, total_size

        graph_def = read_graph_def(path)
        return {"size_bytes": total_size([path]), "variables": [], "signatures": [],
                **likely_io(graph_def), "op_counts": op_counts(graph_def, functions=True),
                "graph": graph_def}


SOURCE = FrozenGraphSource()
