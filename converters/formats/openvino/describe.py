"""What `freeze inspect` reports of an OpenVINO IR (.xml + .bin), read by OpenVINO itself: the
model's inputs and outputs (element type, partial shape) and its ops' types."""

from __future__ import annotations

from collections import Counter

from graphfreeze.io import storage


def describe(path: str) -> dict | None:
    """{inputs, outputs, op_counts} of the IR whose .xml is `path`; None when it is not one."""
    if storage.isdir(path) or not path.lower().endswith(".xml") or \
            b"<net" not in storage.read_bytes(path)[:4096]:
        return None
    import openvino as ov
    from graphfreeze.formats.openvino.tokenizers import load_for

    load_for(path)  # (an IR of string ops: openvino-tokenizers' extension first)

    try:
        model = ov.Core().read_model(path)
    except RuntimeError as err:  # its one line, not where in OpenVINO's sources it was raised
        from graphfreeze.formats.openvino.runtime import reason

        raise ValueError(reason(err)) from err

    def tensor(port) -> dict:
        shape = port.get_partial_shape()
        name = port.get_any_name() if port.get_names() else port.get_node().get_friendly_name()
        return {"name": name,
                "dtype": dtype(port.get_element_type()),
                "shape": None if shape.rank.is_dynamic else
                [d.get_length() if d.is_static else None for d in shape]}

    def dtype(element) -> str:
        """numpy's name of an element type; one numpy has no type for (u4, nf4...) by its own."""
        if not element.is_static():
            return "?"
        try:
            return element.to_dtype().name
        except (RuntimeError, KeyError, ValueError, TypeError):
            return element.get_type_name()

    ops = Counter(op.get_type_name() for op in model.get_ordered_ops()
                  if op.get_type_name() not in ("Parameter", "Result"))
    return {"inputs": [tensor(p) for p in model.inputs],
            "outputs": [tensor(p) for p in model.outputs], "op_counts": dict(ops)}
