"""Nothing from a model touches the host: refuse ops that read or write files, print to files,
save, run Python, map memory or reach the network, before anything runs.

Which ops those are comes from TensorFlow's op registry (`derive_host_ops`), cached in
`host_ops.json` beside this file (a test checks it against the live registry). An op is a host
op if
  * it has an input or attr whose name holds a path or an address (`FILE_ARGS`: filename,
    filenames, file_pattern, prefix, path, logdir, vocab_file, memory_region_name, ...;
    `NET_ARGS`: address, server_address, target, ...), or
  * its Python wrapper lives in gen_script_ops (runs Python), or it is stateful and lives in
    gen_io_ops (readers, Save/Restore, WriteFile), gen_summary_ops (event files) or
    gen_collective_ops (other workers); gen_io_ops' `pattern` (MatchingFiles) is a path too.
Some are host ops only for some attr values (`CONDITIONAL`): PrintV2 to `file://...`,
DecodeProtoV2/EncodeProto with a descriptor file, debug ops with debug URLs.

The checks are pure functions over protos; they raise InputError. (Keras layer configs are
checked in sources/keras_config.py, against the same op list.)
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

from graphfreeze.errors import InputError
from graphfreeze.graph.graphdefs import (
    callees,
    is_control,
    nodes_by_name,
    reachable,
    rewire,
    split_tensor,
)

DATA_FILE = Path(__file__).with_name("host_ops.json")
FILE_ARGS = {
    "filename", "filenames", "file_name", "file_pattern", "patterns", "prefix", "path",
    "chunk_file", "ckpt_path", "checkpoint_prefixes", "destination_prefix", "directory",
    "shard_dir", "snapshot_path", "reader_path_prefix", "writer_path_prefix", "reader_prefix",
    "writer_prefix", "logdir", "log_dir_path", "output_file_path", "vocab_file",
    "new_vocab_file", "old_vocab_file", "data_source_name", "db_uri", "memory_region_name",
    "descriptor_source", "debug_urls", "output_stream",
}
NET_ARGS = {"address", "server_address", "server", "target", "target_workers", "job_name"}
MODULES = {"gen_script_ops": "runs Python code", "gen_io_ops": "reads files",
           "gen_summary_ops": "writes summary files", "gen_collective_ops": "talks to other workers"}
CONDITIONAL = {"output_stream": "PrintV2", "descriptor_source": "proto", "debug_urls": "debug"}
REFUSE = "graphfreeze does not run ops that touch the host; pass --unsafe if you trust this model"
_WRITES = re.compile(r"Write|Save|Dump|Merge|ToTFRecord|Cache|Print")


def derive_host_ops() -> dict[str, str]:
    """Host op -> what it does, from the live registry (imports TensorFlow)."""
    import importlib

    from tensorflow.core.framework import op_def_pb2
    from tensorflow.python.client import pywrap_tf_session

    ops = op_def_pb2.OpList()
    ops.ParseFromString(pywrap_tf_session.TF_GetBuffer(pywrap_tf_session.TF_GetAllOpList()))
    module_of = {}
    for module in MODULES:
        mod = importlib.import_module(f"tensorflow.python.ops.{module}")
        module_of.update({name: module for name in dir(mod) if name[:1].isupper()})
    found = {}
    for op in ops.op:
        args = {a.name for a in op.input_arg} | {a.name for a in op.attr}
        module = module_of.get(op.name)
        if module == "gen_io_ops":
            args |= {"filename"} if "pattern" in args else set()
        if args & NET_ARGS:
            found[op.name] = "reaches the network"
        elif "memory_region_name" in args:
            found[op.name] = "maps files into memory"
        elif "output_stream" in args:
            found[op.name] = "prints to a file"
        elif "debug_urls" in args:
            found[op.name] = "sends tensors to debug URLs"
        elif args & FILE_ARGS:
            found[op.name] = "writes files" if _WRITES.search(op.name) else "reads files"
        elif module == "gen_script_ops" or (module and op.is_stateful):
            found[op.name] = MODULES[module]
    return dict(sorted(found.items()))


def write_data_file() -> None:
    """Regenerate host_ops.json (after a TensorFlow upgrade: `python -m graphfreeze.graph.checks.safety`)."""
    import tensorflow as tf

    DATA_FILE.write_text(json.dumps({"tensorflow": tf.__version__, "ops": derive_host_ops()},
                                    indent=1, sort_keys=True) + "\n")


@functools.cache
def host_ops() -> dict[str, str]:
    """Host op -> what it does (e.g. 'WriteFile' -> 'writes files'), from host_ops.json."""
    return json.loads(DATA_FILE.read_text())["ops"]


def host_use(node) -> str | None:
    """What `node` (a NodeDef) does to the host, or None if it touches nothing."""
    what = host_ops().get(node.op)
    if what is None:
        return None
    for attr, kind in CONDITIONAL.items():
        if attr in node.attr:
            value = node.attr[attr]
            if kind == "PrintV2" and not value.s.startswith(b"file://"):
                return None
            if kind == "proto" and (not value.s or value.s.startswith((b"local://", b"bytes://"))):
                return None
            if kind == "debug" and not list(value.list.s):
                return None
    return what


class Library:
    """A function library, asked which host op (if any) a node runs through the calls it makes."""

    def __init__(self, library, allowed: frozenset = frozenset()):
        self.funcs = {f.signature.name: f for f in library.function}
        self.allowed = allowed
        self.memo: dict[str, tuple | None] = {}

    def callees(self, node) -> list[str]:
        return sorted(n for n in callees(node, self.funcs) if n in self.funcs)

    def find(self, node) -> tuple | None:
        """(node name, op, what, function) of the first host op `node` runs, or None."""
        what = host_use(node)
        if what and node.op not in self.allowed:
            return node.name, node.op, what, None
        for name in self.callees(node):
            hit = self.in_function(name)
            if hit:
                return hit
        return None

    def in_function(self, name: str) -> tuple | None:
        if name not in self.memo:  # every node counts: a function runs its stateful ops
            self.memo[name] = None  # recursion guard
            for node in self.funcs[name].node_def:
                hit = self.find(node)
                if hit:
                    self.memo[name] = hit if hit[3] else (*hit[:3], name)
                    break
        return self.memo[name]


def refusal(where: str, hit: tuple, caller: str | None = None) -> InputError:
    name, op, what, func = hit
    via = f" in function '{func}'" + (f" called by node '{caller}'" if caller else "") \
        if func else ""
    return InputError(f"{where}: node '{name}' ({op}) {what}{via}; {REFUSE}")


def _data_needed(graph_def, roots) -> set[str]:
    by_name = nodes_by_name(graph_def)
    seen: set[str] = set()
    todo = [split_tensor(r)[0] for r in roots]
    while todo:
        name = todo.pop()
        if name in seen or name not in by_name:
            continue
        seen.add(name)
        todo.extend(split_tensor(i)[0] for i in by_name[name].input if not is_control(i))
    return seen


def check_graph(graph_def, keep_nodes, where: str):
    """Refuse host ops `keep_nodes` need (data edges, or inside functions a needed node calls);
    cut those hanging on by control edges only. Returns (graph_def, warnings); the graph is
    `graph_def` itself when nothing is cut."""
    library = Library(graph_def.library)
    needed = _data_needed(graph_def, keep_nodes)
    by_name = nodes_by_name(graph_def)
    for name in sorted(needed):
        hit = library.find(by_name[name])
        if hit:
            raise refusal(where, hit, name if hit[3] else None)
    hosts = {}
    for name in sorted(reachable(graph_def, keep_nodes) - needed):
        hit = library.find(by_name[name])
        if hit:
            hosts[name] = hit
    if not hosts:
        return graph_def, []
    drop, users = set(hosts), {}
    for node in graph_def.node:
        for inp in node.input:
            if not is_control(inp):
                users.setdefault(split_tensor(inp)[0], []).append(node.name)
    todo = list(drop)
    while todo:  # what reads a cut node is not needed either (else the node would be)
        for user in users.get(todo.pop(), ()):
            if user not in drop:
                drop.add(user)
                todo.append(user)
    warnings = [f"{where}: cut node '{name}' ({by_name[name].op}), which {hit[2]}"
                f"{' in function ' + repr(hit[3]) if hit[3] else ''} and is only a control "
                "dependency of the outputs" for name, hit in sorted(hosts.items())]
    return rewire(graph_def, {}, drop), warnings


if __name__ == "__main__":
    write_data_file()
    print(f"{DATA_FILE}: {len(host_ops())} host ops")
