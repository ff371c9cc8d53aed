"""Intermediate tensors of a .tflite file run in LiteRT, keyed by the TensorFlow tensor names
they stand for (`dense/Relu:0`): what the divergence locator compares with the original's."""

from __future__ import annotations


def tflite_probe(path: str, input_names: dict[str, str]):
    """A .tflite file: every tensor kept (`experimental_preserve_all_tensors`) and dequantized.
    TFLite names a tensor after the TensorFlow ops it came from (`a;b;c` for fused ones): it
    stands for the one of those, among the wanted names, that comes last."""

    def probe(feeds: dict, names: list[str]) -> dict:
        import numpy as np
        from graphfreeze.formats.tflite.runtime import dequantize, run_batched

        def fetch(interp) -> dict:
            made = {int(i) for op in interp._get_ops_details() for i in op["outputs"]}  # noqa: SLF001
            found = {}
            for detail in interp.get_tensor_details():
                if detail["index"] not in made:  # weights and inputs are named after their users
                    continue
                parts = [p for p in detail["name"].split(";") if p in position]
                if not parts:
                    continue
                node = max(parts, key=position.get)
                try:
                    value = interp.get_tensor(detail["index"])
                except ValueError:  # freed or never computed
                    continue
                found[f"{node}:0"] = np.asarray(dequantize(value, detail))
            return found

        position = {name.rsplit(":", 1)[0]: i for i, name in enumerate(names)}
        return run_batched(path, {node: feeds[name] for node, name in input_names.items()},
                           fetch, preserve_all_tensors=True)

    return probe
