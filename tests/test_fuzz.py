"""Fuzzing every model file kind (issue 8): byte-level and protobuf/config-aware mutations of the
sample models, run through the `freeze` CLI in-process (one TensorFlow for all examples).

Each mutated model either converts and verifies (exit 0) or fails with exactly one `error:` line
naming a file or node (exit 3, or 5 for a verification mismatch): never an internal error (1), a
traceback, or a file left behind. Seeds are fixed (`derandomize`); the budget per kind keeps the
file near a minute.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st


@dataclass(frozen=True)
class Kind:
    root: str  # "samples" or "other": which session fixture holds the model
    models: tuple[str, ...]  # file or directory names copied from there (one is drawn)
    file: str  # the file mutated, relative to the copy ("" = the copy itself)
    args: tuple[str, ...]  # CLI arguments; {model} is the copy's path
    inspect: str  # what `freeze inspect` is given
    format: str  # how to parse it: meta, graph, graph_text, saved_model, h5, keras, or bytes


_CKPT = ("--ckpt", "{model}/model.ckpt-200", "--outputs", "probs")
KINDS = {
    "meta": Kind("samples", ("iris", "iris_resource"), "model.ckpt-200.meta", _CKPT,
                 "{model}/model.ckpt-200", "meta"),
    "index": Kind("samples", ("iris",), "model.ckpt-200.index", _CKPT, "{model}", "bytes"),
    "data": Kind("samples", ("iris",), "model.ckpt-200.data-00000-of-00001", _CKPT,
                 "{model}/model.ckpt-200", "bytes"),
    "pb": Kind("other", ("frozen.pb",), "", ("--graph", "{model}", "--outputs", "probs"),
               "{model}", "graph"),
    "pbtxt": Kind("other", ("frozen.pbtxt",), "", ("--graph", "{model}", "--outputs", "probs"),
                  "{model}", "graph_text"),
    "saved_model.pb": Kind("other", ("tf2_savedmodel", "tf1_savedmodel"), "saved_model.pb",
                           ("--saved-model", "{model}"), "{model}", "saved_model"),
    "h5": Kind("other", ("model.h5",), "", ("--keras", "{model}"), "{model}", "h5"),
    "keras": Kind("other", ("model.keras",), "", ("--keras", "{model}"), "{model}", "keras"),
}
EXAMPLES = {"meta": 70, "index": 40, "data": 40, "pb": 70, "pbtxt": 40, "saved_model.pb": 50,
            "h5": 40, "keras": 40}  # ~40 s in all once the samples are built (2 cores)


# --- byte mutations ------------------------------------------------------------------------

def _pos(draw, data: bytes, end: bool = False):
    return draw(st.integers(0, len(data) if end else max(len(data) - 1, 0)))


def _span(draw, data: bytes) -> tuple[int, int]:
    start = _pos(draw, data)
    return start, start + draw(st.integers(1, max(1, min(256, len(data) - start))))


def truncate(data, draw):
    n = _pos(draw, data)
    return data[:n], f"truncate to {n}"


def flip(data, draw):
    out = bytearray(data)
    spots = draw(st.lists(st.tuples(st.integers(0, max(len(data) - 1, 0)), st.integers(0, 7)),
                          min_size=1, max_size=8))
    for at, bit in spots:
        out[at] ^= 1 << bit
    return bytes(out), f"flip bits {spots}"


def overwrite(data, draw):
    at, chunk = _pos(draw, data), draw(st.binary(min_size=1, max_size=32))
    return data[:at] + chunk + data[at + len(chunk):], f"overwrite {len(chunk)} at {at}"


def insert(data, draw):
    at, chunk = _pos(draw, data, end=True), draw(st.binary(min_size=1, max_size=64))
    return data[:at] + chunk + data[at:], f"insert {len(chunk)} at {at}"


def delete(data, draw):
    start, stop = _span(draw, data)
    return data[:start] + data[stop:], f"delete {start}:{stop}"


def zero(data, draw):
    start, stop = _span(draw, data)
    return data[:start] + bytes(stop - start) + data[stop:], f"zero {start}:{stop}"


def duplicate(data, draw):
    start, stop = _span(draw, data)
    at = _pos(draw, data, end=True)
    return data[:at] + data[start:stop] + data[at:], f"duplicate {start}:{stop} at {at}"


BYTE_MUTATIONS = [truncate, flip, overwrite, insert, delete, zero, duplicate]


# --- protobuf mutations: one field of a GraphDef / MetaGraphDef / SavedModel -----------------

_OPS = ["NoSuchOp", "Identity", "Const", "Placeholder", "AddV2", "MatMul", "While", "If",
        "StatefulPartitionedCall", "NextIteration", "Merge", "Switch", "VarHandleOp", "Assign",
        "Fill", "Reshape", "ConcatV2", "Softmax", "NoOp"]
_INTS = [-(2**63), -7, -1, 0, 1, 2, 3, 17, 2**31 - 1, 2**31, 2**40, 2**62]
_DIMS = [-7, -2, -1, 0, 1, 2, 3, 100, 2**31, 2**40, 2**62]


def _bodies(graph):
    return [("graph", graph.node)] + [(f"function {f.signature.name}", f.node_def)
                                      for f in graph.library.function if f.node_def]


def _node(graph, draw):
    where, body = draw(st.sampled_from(_bodies(graph)))
    return body, body[draw(st.integers(0, len(body) - 1))], where


def node_op(graph, draw):
    body, node, where = _node(graph, draw)
    ops = sorted({n.op for n in body}) + _OPS + [f.signature.name for f in graph.library.function]
    node.op = draw(st.sampled_from(ops))
    return f"{where} node {node.name} op -> {node.op}"


def node_input(graph, draw):
    body, node, where = _node(graph, draw)
    names = [n.name for n in body] + ["missing", ""]
    name = draw(st.sampled_from(names))
    action = draw(st.sampled_from(["replace", "add", "delete", "control", "index"]))
    if action in ("replace", "index", "delete") and not node.input:
        action = "add"
    i = draw(st.integers(0, max(len(node.input) - 1, 0)))
    if action == "replace":
        node.input[i] = name
    elif action == "add":
        node.input.append(name)
    elif action == "delete":
        del node.input[i]
    elif action == "control":
        node.input.insert(draw(st.integers(0, len(node.input))), "^" + name)
    else:
        node.input[i] = node.input[i].rsplit(":", 1)[0] + f":{draw(st.integers(0, 5))}"
    return f"{where} node {node.name} input {action} {name!r} ({i})"


def _attr_value(draw, graph):
    from tensorflow.core.framework import attr_value_pb2

    value = attr_value_pb2.AttrValue()
    kind = draw(st.sampled_from(["i", "f", "s", "b", "type", "shape", "list_type", "list_i",
                                 "placeholder", "func", "tensor", "empty"]))
    if kind == "i":
        value.i = draw(st.sampled_from(_INTS))
    elif kind == "f":
        value.f = draw(st.sampled_from([0.0, -1.0, 1e30, float("nan"), float("inf")]))
    elif kind == "s":
        value.s = draw(st.sampled_from([b"", b"VALID", b"NHWC", b"garbage", b"\xff\xfe"]))
    elif kind == "b":
        value.b = True
    elif kind == "type":
        value.type = draw(st.integers(-1, 30))
    elif kind == "shape":
        for size in draw(st.lists(st.sampled_from(_DIMS), max_size=4)):
            value.shape.dim.add(size=size)
    elif kind == "list_type":
        value.list.type.extend(draw(st.lists(st.integers(0, 25), max_size=3)))
    elif kind == "list_i":
        value.list.i.extend(draw(st.lists(st.sampled_from(_INTS), max_size=3)))
    elif kind == "placeholder":
        value.placeholder = "T"
    elif kind == "func":
        funcs = [f.signature.name for f in graph.library.function] + ["no_such_function"]
        value.func.name = draw(st.sampled_from(funcs))
    elif kind == "tensor":
        value.tensor.dtype = draw(st.integers(0, 25))
        value.tensor.tensor_shape.dim.add(size=draw(st.sampled_from(_DIMS)))
    return value, kind


def attr_value(graph, draw):
    body, node, where = _node(graph, draw)
    keys = sorted(node.attr)
    action = draw(st.sampled_from(["set", "delete", "add"] if keys else ["add"]))
    key = draw(st.sampled_from(keys)) if action != "add" else \
        draw(st.sampled_from(["T", "dtype", "shape", "value", "bogus", "N", "_class"]))
    if action == "delete":
        del node.attr[key]
        return f"{where} node {node.name} attr {key} deleted"
    value, kind = _attr_value(draw, graph)
    node.attr[key].CopyFrom(value)
    return f"{where} node {node.name} attr {key} = {kind} {value}".replace("\n", " ")


def attr_type(graph, draw):
    """A type-valued attr (T, dtype, Tidx, ...) set to another DataType (or no valid one)."""
    candidates = [(where, node, key) for where, body in _bodies(graph) for node in body
                  for key, value in sorted(node.attr.items())
                  if value.WhichOneof("value") == "type" or value.list.type]
    if not candidates:
        return attr_value(graph, draw)
    where, node, key = draw(st.sampled_from(candidates))
    new = draw(st.integers(-1, 30) | st.sampled_from([101, 119, 2**31 - 1]))
    value = node.attr[key]
    if value.WhichOneof("value") == "type":
        value.type = new
    else:
        value.list.type[draw(st.integers(0, len(value.list.type) - 1))] = new
    return f"{where} node {node.name} attr {key} type -> {new}"


def _shapes(graph):
    for where, body in _bodies(graph):
        for node in body:
            for key, value in sorted(node.attr.items()):
                for shape in [value.shape, value.tensor.tensor_shape, *value.list.shape]:
                    if shape.dim or shape.unknown_rank or value.HasField("shape"):
                        yield where, node, key, shape


def tensor_shape(graph, draw):
    candidates = list(_shapes(graph))
    if not candidates:
        return attr_value(graph, draw)
    where, node, key, shape = draw(st.sampled_from(candidates))
    action = draw(st.sampled_from(["size", "add", "remove", "unknown_rank"]))
    if action == "size" and shape.dim:
        shape.dim[draw(st.integers(0, len(shape.dim) - 1))].size = draw(st.sampled_from(_DIMS))
    elif action == "remove" and shape.dim:
        del shape.dim[draw(st.integers(0, len(shape.dim) - 1))]
    elif action == "unknown_rank":
        shape.unknown_rank = True
    else:
        shape.dim.add(size=draw(st.sampled_from(_DIMS)))
    return f"{where} node {node.name} attr {key} shape {action} -> {list(shape.dim)}"


def tensor_content(graph, draw):
    consts = [(where, node) for where, body in _bodies(graph) for node in body
              if "value" in node.attr and node.attr["value"].HasField("tensor")]
    if not consts:
        return attr_value(graph, draw)
    where, node = draw(st.sampled_from(consts))
    tensor = node.attr["value"].tensor
    action = draw(st.sampled_from(["truncate", "extend", "dtype", "values", "strings", "clear"]))
    if action == "truncate":
        tensor.tensor_content = tensor.tensor_content[:draw(st.integers(0, 64))]
    elif action == "extend":
        tensor.tensor_content += draw(st.binary(min_size=1, max_size=64))
    elif action == "dtype":
        tensor.dtype = draw(st.integers(0, 30))
    elif action == "values":
        tensor.float_val.extend(draw(st.lists(st.floats(width=32), min_size=1, max_size=40)))
    elif action == "strings":
        tensor.string_val.append(draw(st.binary(max_size=16)))
    else:
        tensor.Clear()
    return f"{where} node {node.name} tensor {action}"


def versions(graph, draw):
    field = draw(st.sampled_from(["producer", "min_consumer", "bad_consumers"]))
    value = draw(st.sampled_from([-(2**31), -1, 0, 1, 8, 21, 1286, 2**31 - 1]))
    if field == "bad_consumers":
        graph.versions.bad_consumers.append(value)
    else:
        setattr(graph.versions, field, value)
    return f"versions {field} = {value}"


def node_name(graph, draw):
    body, node, where = _node(graph, draw)
    action = draw(st.sampled_from(["rename", "clash", "clear", "delete", "duplicate"]))
    if action == "rename":
        node.name = draw(st.sampled_from(["renamed", "a/b:0", "^x", "probs"]))
    elif action == "clash":
        node.name = body[draw(st.integers(0, len(body) - 1))].name
    elif action == "clear":
        node.name = ""
    elif action == "delete":
        body.remove(node)
    else:
        body.add().CopyFrom(node)
    return f"{where} node {node.name} {action}"


def library(graph, draw):
    funcs = graph.library.function
    if not funcs:
        func = funcs.add()
        func.signature.name = draw(st.sampled_from(["f", "Identity", ""]))
        func.node_def.add(name="n", op=draw(st.sampled_from(["f", "Identity", "Const"])))
        return f"library: added {func.signature.name!r}"
    func = funcs[draw(st.integers(0, len(funcs) - 1))]
    name = func.signature.name
    action = draw(st.sampled_from(["rename", "delete", "ret", "arg_type", "add_arg",
                                   "drop_output", "recurse", "gradient"]))
    if action == "rename":
        func.signature.name = draw(st.sampled_from(["renamed", "Identity", "", funcs[0].signature.name]))
    elif action == "delete":
        funcs.remove(func)
    elif action == "ret" and func.ret:
        key = draw(st.sampled_from(sorted(func.ret)))
        func.ret[key] = draw(st.sampled_from(["missing:output:0", "x", ""] +
                                             [a.name for a in func.signature.input_arg]))
    elif action == "arg_type" and func.signature.input_arg:
        func.signature.input_arg[0].type = draw(st.integers(0, 30))
    elif action == "add_arg":
        func.signature.input_arg.add(name="extra", type=1)
    elif action == "drop_output" and func.signature.output_arg:
        del func.signature.output_arg[-1]
    elif action == "recurse":
        func.node_def.add(name="again", op=name, input=[a.name for a in func.signature.input_arg])
    else:
        graph.library.gradient.add(function_name=name, gradient_func=name)
    return f"library: function {name!r} {action}"


GRAPH_MUTATIONS = [node_op, node_input, attr_value, attr_type, tensor_shape, tensor_content,
                   versions, node_name, library]


def saver(meta, draw):
    names = [n.name for n in meta.graph_def.node] + ["missing", "", "save/Const:0"]
    field = draw(st.sampled_from(["restore_op_name", "filename_tensor_name", "save_tensor_name"]))
    setattr(meta.saver_def, field, draw(st.sampled_from(names)))
    return f"saver_def {field} = {getattr(meta.saver_def, field)!r}"


def signature(meta, draw):
    if not meta.signature_def:
        return saver(meta, draw)
    sig = meta.signature_def[draw(st.sampled_from(sorted(meta.signature_def)))]
    group = draw(st.sampled_from(["inputs", "outputs"]))
    tensors = getattr(sig, group)
    if not tensors:
        tensors.get_or_create("added").name = "missing:0"
        return f"signature {group}: added one"
    key = draw(st.sampled_from(sorted(tensors)))
    action = draw(st.sampled_from(["name", "dtype", "shape", "delete"]))
    if action == "name":
        tensors[key].name = draw(st.sampled_from(["missing:0", "", "x:7"] +
                                                 [n.name + ":0" for n in meta.graph_def.node]))
    elif action == "dtype":
        tensors[key].dtype = draw(st.integers(0, 30))
    elif action == "shape":
        tensors[key].tensor_shape.dim.add(size=draw(st.sampled_from(_DIMS)))
    else:
        del tensors[key]
    return f"signature {group} {key} {action}"


def _proto(fmt: str):
    from tensorflow.core.framework import graph_pb2
    from tensorflow.core.protobuf import meta_graph_pb2, saved_model_pb2

    return {"meta": meta_graph_pb2.MetaGraphDef, "graph": graph_pb2.GraphDef,
            "graph_text": graph_pb2.GraphDef, "saved_model": saved_model_pb2.SavedModel}[fmt]()


def mutate_proto(path: Path, fmt: str, draw) -> str:
    from google.protobuf import text_format

    message = _proto(fmt)
    if fmt == "graph_text":
        text_format.Parse(path.read_text(), message)
    else:
        message.ParseFromString(path.read_bytes())
    metas = [message] if fmt == "meta" else list(getattr(message, "meta_graphs", []))
    graph = metas[0].graph_def if metas else message
    extra = [saver] if fmt == "meta" else [signature] if fmt == "saved_model" else []
    mutation = draw(st.sampled_from(GRAPH_MUTATIONS + extra))
    what = mutation(metas[0] if mutation in extra else graph, draw)
    if fmt == "graph_text":
        path.write_text(text_format.MessageToString(message))
    else:
        path.write_bytes(message.SerializeToString())
    return f"{mutation.__name__}: {what}"


# --- Keras mutations: the model config (JSON) or a member of the .keras zip ----------------

_JSON_VALUES = [None, -1, 0, 1, 3, 1000, 10**12, "x", "relu", "", [], {}, True, 1.5,
                [None, 4], [-1], {"class_name": "Lambda", "config": {}}]


def _leaves(obj, out=None):
    out = [] if out is None else out
    items = obj.items() if isinstance(obj, dict) else enumerate(obj)
    for key, value in items:
        out.append((obj, key))
        if isinstance(value, dict | list):
            _leaves(value, out)
    return out


def mutate_json(text: bytes | str, draw) -> tuple[str, str]:
    config = json.loads(text)
    container, key = draw(st.sampled_from(_leaves(config)))
    if draw(st.booleans()) and isinstance(container, dict):
        del container[key]
        return json.dumps(config), f"config: delete {key!r}"
    value = draw(st.sampled_from(_JSON_VALUES))
    container[key] = value
    return json.dumps(config), f"config: {key!r} = {value!r}"


def mutate_h5(path: Path, draw) -> str:
    import h5py
    import numpy as np

    with h5py.File(path, "r+") as f:
        if draw(st.booleans()):
            f.attrs["model_config"], what = mutate_json(f.attrs["model_config"], draw)
            return what
        weights = []
        f["model_weights"].visititems(lambda n, obj: weights.append(n)
                                      if isinstance(obj, h5py.Dataset) else None)
        name = "model_weights/" + draw(st.sampled_from(sorted(weights)))
        shape = tuple(draw(st.lists(st.integers(0, 5), max_size=3)))
        del f[name]
        f.create_dataset(name, data=np.ones(shape, np.float32))
        return f"weights: {name} -> shape {shape}"


def mutate_keras(path: Path, draw) -> str:
    import zipfile

    with zipfile.ZipFile(path) as archive:
        members = {n: archive.read(n) for n in archive.namelist()}
    name = draw(st.sampled_from(sorted(members)))
    if name.endswith(".json"):
        members[name], what = mutate_json(members[name], draw)
    else:
        mutation = draw(st.sampled_from(BYTE_MUTATIONS))
        members[name], what = mutation(members[name], draw)
    if draw(st.integers(0, 9)) == 0:
        del members[name]
        what = "deleted"
    with zipfile.ZipFile(path, "w") as archive:
        for member, data in members.items():
            archive.writestr(member, data)
    return f"{name}: {what}"


def mutate(path: Path, fmt: str, draw) -> str:
    """Change the file at `path` in place; says what was done."""
    if fmt != "bytes" and draw(st.booleans()):
        if fmt == "h5":
            return mutate_h5(path, draw)
        if fmt == "keras":
            return mutate_keras(path, draw)
        return mutate_proto(path, fmt, draw)
    mutation = draw(st.sampled_from(BYTE_MUTATIONS))
    data, what = mutation(path.read_bytes(), draw)
    path.write_bytes(data)
    return f"{mutation.__name__}: {what}"


# --- running one case ----------------------------------------------------------------------

@dataclass
class Outcome:
    kind: str
    what: str
    command: list[str]
    exit_code: int
    output: str
    new_files: list[str]

    def problems(self) -> list[str]:
        found = []
        lines = [line for line in self.output.splitlines() if line.strip()]
        errors = [line for line in lines if line.startswith("error:")]
        if self.exit_code not in (0, 3, 5) or (self.command[0] == "inspect" and
                                               self.exit_code == 5):
            found.append(f"exit {self.exit_code}")
        if "Traceback" in self.output or "internal error" in self.output:
            found.append("traceback or internal error")
        if [f for f in self.new_files if ".graphfreeze." in f or f.endswith(".tmp")]:
            found.append("temporary left behind")
        if self.exit_code != 0:
            if len(errors) != 1:
                found.append(f"{len(errors)} error lines")
            elif not _names_file_or_node(errors[0], self.command):
                found.append("error names no file or node")
            if self.new_files:
                found.append("files left behind")
        return found

    def report(self) -> str:
        return (f"{self.kind}: {self.what}\n  freeze {' '.join(self.command)}\n  exit "
                f"{self.exit_code}, new files {self.new_files}\n{self.output}")


def _names_file_or_node(line: str, command: list[str]) -> bool:
    folders = {str(Path(a).parent) for a in command if "/" in a}
    return any(f in line for f in folders) or any(
        f"{what} '" in line for what in ("node", "variable", "layer", "function", "output",
                                         "input"))


def _tree(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def _copy(root: Path, name: str, case: Path) -> Path:
    if name == "frozen.pbtxt":
        from google.protobuf import text_format

        graph = _proto("graph")
        graph.ParseFromString((root / "frozen.pb").read_bytes())
        (case / name).write_text(text_format.MessageToString(graph))
    elif (root / name).is_dir():
        shutil.copytree(root / name, case / name)
    else:
        shutil.copy(root / name, case / name)
    return case / name


def run_case(kind_name: str, draw, freeze, workdir: Path, roots: dict) -> Outcome:
    """Copy a sample of `kind_name`, mutate it, run `freeze` (or now and then `freeze
    inspect`) on it; what happened."""
    kind = KINDS[kind_name]
    case = workdir / "case"
    shutil.rmtree(case, ignore_errors=True)
    case.mkdir(parents=True)
    model = _copy(roots[kind.root], draw(st.sampled_from(kind.models)), case)
    what = mutate(model / kind.file if kind.file else model, kind.format, draw)
    before = _tree(case)
    inspect = draw(st.integers(0, 3)) == 0
    command = ["inspect", kind.inspect] if inspect else list(kind.args)
    command = [a.format(model=model) for a in command]
    result = freeze(*command)
    new = sorted(_tree(case) - before)
    return Outcome(kind_name, what, command, result.exit_code, result.output, new)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_mutated_models_fail_cleanly(kind, samples, other_samples, freeze, tmp_path):
    roots = {"samples": samples, "other": other_samples}
    seen: list[Outcome] = []

    @settings(max_examples=EXAMPLES[kind], derandomize=True, database=None, deadline=None,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def fuzz(data):
        outcome = run_case(kind, data.draw, freeze, tmp_path, roots)
        event(f"{outcome.command[0] if outcome.command[0] == 'inspect' else 'freeze'} exit "
              f"{outcome.exit_code}")  # pytest --hypothesis-show-statistics
        seen.append(outcome)
        assert not outcome.problems(), outcome.report()

    fuzz()
    codes = sorted({(o.command[0] == "inspect", o.exit_code) for o in seen})
    print(f"{kind}: {len(seen)} mutations, (inspect?, exit) seen: {codes}")
    assert len(seen) >= EXAMPLES[kind] // 2, "hypothesis ran too few examples"
