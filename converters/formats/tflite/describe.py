"""What `freeze inspect` reports of a .tflite file, read by LiteRT's own tools: its inputs and
outputs by the interpreter (dtype, shape, int8 scale and zero point), its ops by the flatbuffer
schema."""

from __future__ import annotations

from collections import Counter

from graphfreeze.formats.tflite.delegates import is_tflite
from graphfreeze.io import storage


def describe(path: str) -> dict | None:
    """{inputs, outputs, op_counts, subgraphs, and its signatures when it has several (a
    litert-lm model's prefill_<T> and decode)} of the TFLite flatbuffer at `path`; None when
    the file is not one."""
    if storage.isdir(path) or not is_tflite(storage.read_bytes(path)[:8]):
        return None
    from ai_edge_litert import schema_py_generated as schema
    from graphfreeze.formats.tflite.interpreter import interpreter

    data = storage.read_bytes(path)
    interp = interpreter(model_content=data)
    io = {role: [{"name": d["name"], "dtype": d["dtype"].__name__,
                  "shape": [None if int(x) < 0 else int(x) for x in d["shape_signature"]],
                  **({"scale": float(d["quantization"][0]),
                      "zero_point": int(d["quantization"][1])} if d["quantization"][0] else {})}
                 for d in details]
          for role, details in (("inputs", interp.get_input_details()),
                                ("outputs", interp.get_output_details()))}
    model = schema.Model.GetRootAs(data, 0)
    names = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
    ops: Counter = Counter()
    for s in range(model.SubgraphsLength()):
        graph = model.Subgraphs(s)
        for j in range(graph.OperatorsLength()):
            code = model.OperatorCodes(graph.Operators(j).OpcodeIndex())
            builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
            ops[(code.CustomCode() or b"?").decode() if builtin == schema.BuiltinOperator.CUSTOM
                else names.get(builtin, str(builtin))] += 1
    signatures = interp.get_signature_list()
    listed = [{"key": key, **{role: [{"key": k, "name": k} for k in sig[role]]
                              for role in ("inputs", "outputs")}}
              for key, sig in sorted(signatures.items())] if len(signatures) > 1 else []
    return {**io, "op_counts": dict(ops), "subgraphs": model.SubgraphsLength(),
            **({"signatures": listed} if listed else {})}
