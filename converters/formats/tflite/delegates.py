"""GPU delegate coverage of a .tflite: which ops LiteRT's GPU delegate takes, which fall back to
the CPU, and why.

Judged by LiteRT's own compatibility rules (`gpu_rules`, ported from the checker LiteRT's model
analyzer used to call: the pip wheels' analyzer prints "compatible" for every model), on the op
signatures read from the flatbuffer with LiteRT's schema. Every subgraph's ops count, as the
analyzer lists them. `coverage(data)` -> Coverage; `.line` is what the CLI and reports print.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from graphfreeze.formats.tflite.gpu_checker import check
from graphfreeze.formats.tflite.gpu_rules import Sig, Spec

CHECKER = "LiteRT GPU delegate compatibility rules (gpu_compatibility.cc, offline mode)"


@dataclass(frozen=True)
class OpVerdict:
    subgraph: int
    index: int
    op: str
    reason: str | None  # None: the GPU delegate takes it

    def as_json(self) -> dict:
        return {"subgraph": self.subgraph, "index": self.index, "op": self.op,
                **({"reason": self.reason} if self.reason else {})}


@dataclass(frozen=True)
class Coverage:
    ops: tuple[OpVerdict, ...]

    @property
    def fallbacks(self) -> list[OpVerdict]:
        return [v for v in self.ops if v.reason]

    @property
    def line(self) -> str:
        """`61/64 ops, falls back: 3 × SELECT_V2 (reason)`, or `64/64 ops`."""
        total, falls = len(self.ops), self.fallbacks
        head = f"{total - len(falls)}/{total} ops"
        if not falls:
            return head
        groups = Counter((v.op, v.reason) for v in falls).most_common()
        shown = [f"{n} × {op} ({_short(reason)})" for (op, reason), n in groups[:3]]
        more = f", {len(groups) - 3} more kinds" if len(groups) > 3 else ""
        return f"{head}, falls back: {'; '.join(shown)}{more}"

    def as_json(self) -> dict:
        return {"line": self.line, "ops": len(self.ops),
                "gpu_ops": len(self.ops) - len(self.fallbacks), "checker": CHECKER,
                "falls_back": [v.as_json() for v in self.fallbacks]}


def _short(reason: str, limit: int = 60) -> str:
    """The checker's reason, cut at a word for the one-line summary (the ops list has it all)."""
    reason = reason.rstrip(".")
    return reason if len(reason) <= limit else reason[:limit].rsplit(" ", 1)[0] + " …"


def coverage(data: bytes) -> Coverage:
    """The GPU delegate's verdict on every op of the flatbuffer `data`."""
    from ai_edge_litert import schema_py_generated as schema

    model = schema.Model.GetRootAs(data, 0)
    names = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
    types = {v: k for k, v in vars(schema.TensorType).items() if not k.startswith("_")}
    consts = {i for i in range(model.BuffersLength())
              if i and (model.Buffers(i).DataLength() or model.Buffers(i).Offset() > 1)}
    verdicts = []
    for s in range(model.SubgraphsLength()):
        graph = model.Subgraphs(s)

        def spec(index: int, graph=graph) -> Spec:
            if index < 0:  # an optional input left out
                return Spec("NOTYPE", ())
            tensor = graph.Tensors(index)
            dims = tuple(int(d) for d in tensor.ShapeAsNumpy()) if tensor.ShapeLength() else ()
            return Spec(types.get(tensor.Type(), str(tensor.Type())), dims,
                        tensor.Buffer() in consts)

        for j in range(graph.OperatorsLength()):
            op = graph.Operators(j)
            code = model.OperatorCodes(op.OpcodeIndex())
            builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
            custom = builtin == schema.BuiltinOperator.CUSTOM
            name = (code.CustomCode() or b"?").decode() if custom else names.get(builtin, str(builtin))
            options = None
            if not custom and op.BuiltinOptionsType():
                options = schema.BuiltinOptionsCreator(op.BuiltinOptionsType(), op.BuiltinOptions())
            sig = Sig(name, tuple(spec(i) for i in op.InputsAsNumpy()) if op.InputsLength() else (),
                      tuple(spec(i) for i in op.OutputsAsNumpy()) if op.OutputsLength() else (),
                      options, custom)
            verdicts.append(OpVerdict(s, j, name, check(sig)))
    return Coverage(tuple(verdicts))


def is_tflite(head: bytes) -> bool:
    """Whether a file starting with `head` (8+ bytes) is a TFLite flatbuffer."""
    return len(head) >= 8 and head[4:8] in (b"TFL3", b"TFL2")


def analyzer_op_count(data: bytes) -> int:
    """How many ops LiteRT's own model analyzer lists (its `Op#` lines): the count `coverage`
    must match."""
    from ai_edge_litert import _pywrap_analyzer_wrapper as analyzer

    text = analyzer.ModelAnalyzer(data, False, True)
    return sum(1 for line in text.splitlines() if line.lstrip().startswith("Op#"))


def fact(data: bytes) -> dict:
    """The sidecar's `gpu` record."""
    return coverage(data).as_json()
