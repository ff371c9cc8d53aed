"""--explain's overlays, read as Model Explorer reads them: every result names a node of the
graph its own adapter makes of the artifact, the node the divergence locator found diverging is
the worst (dark red), and fp16 TFLite's int8 sensitivity overlay marks the layer TensorFlow's
debugger ranks worst."""

from __future__ import annotations

import json

import pytest
from graphfreeze.explain import overlay, serve

ARTIFACTS = {"model.ckpt-200.pb": "builtin_graphdef", "model.ckpt-200.savedmodel":
             "builtin_tf_direct", "model.ckpt-200.tflite-fp16.tflite": "builtin_tflite_flatbuffer"}


def _named(graph: dict) -> dict:
    """{result key Model Explorer matches: the node's namespace (its TF name, or TFLite's)}."""
    names = {}
    for node in graph["nodes"]:
        names[node["id"]] = node.get("namespace")
        for meta in node.get("outputsMetadata") or []:
            for attr in meta.get("attrs") or []:
                if attr["key"] == "tensor_name":
                    names[attr["value"]] = attr["value"]
    return names


@pytest.mark.parametrize("name", sorted(ARTIFACTS))
def test_every_overlay_names_nodes_of_the_graph_model_explorer_reads(explained, name):
    from model_explorer.node_data_builder import GraphNodeData, NodeDataResult

    out = explained / "out"
    car = json.loads((out / f"{name}.json").read_text())
    kinds = {"divergence", "quantization"} if name.endswith(".tflite") else {"divergence"}
    assert set(car["explain"]) == kinds
    graph = serve.read_graph(str(out / name), ARTIFACTS[name])
    named = _named(graph)
    first = car["verification"]["divergence"]["first"]  # the terminal's table
    for kind in kinds:
        data = json.loads((out / car["explain"][kind]).read_text())
        GraphNodeData(**{**data, "results": {k: NodeDataResult(**r)
                                            for k, r in data["results"].items()}})
        assert data["results"] and set(data["results"]) <= set(named), (kind, named)
        worst = [k for k, r in data["results"].items() if r["bgColor"] == overlay.WORST]
        if kind == "quantization":
            assert [named[k] for k in worst] == [car["quantization_layers"][0]["tensor"]]
        elif not first:  # every node within tolerance (tflite-fp16: on some CPUs' kernels)
            assert not worst
            if not name.endswith(".tflite"):  # the frozen graph and SavedModel: TF against TF
                assert max(r["value"] for r in data["results"].values()) <= 5e-4
                assert {r["bgColor"] for r in data["results"].values()} == {overlay.GREENS[0]}
        else:
            assert len(worst) == 1 and first[0]["node"] in named[worst[0]].split(";"), worst
            top = data["results"][worst[0]]["value"]
            assert all(r["value"] < top for k, r in data["results"].items() if k != worst[0])


def test_colours_grow_with_the_error():
    greens = [overlay.color(r, 100) for r in (1e-6, 1e-2, 1.0)]
    reds = [overlay.color(r, 100) for r in (1.01, 10, 1e4)]
    assert greens[0] == overlay.GREENS[0] and greens[-1] == overlay.GREENS[1]
    assert reds[-1] == overlay.REDS[1] and len(set(greens + reds)) == 6
