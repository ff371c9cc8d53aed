"""A model over 2 GiB (models/big.py: a 2.1 GiB embedding table and a small head, a TF1 Saver
checkpoint) through the real CLI, in the model's folder with relative paths (issue 46): a target
whose format cannot hold it is refused in one line before any work, nothing written."""

from __future__ import annotations

import os

import pytest

from tests.conftest import _once, _run, _shared


@pytest.fixture(scope="session")
def big(tmp_path_factory):
    """The folder of models/big.py's full-size checkpoint, built once (2.1 GiB on disk)."""
    return _once(_shared(tmp_path_factory, "big"), lambda out: _run("big.py", out))


def _weights(folder) -> int:
    """The bytes of the variables `probs` needs, as the checkpoint's index records them."""
    from graphfreeze.sources.checkpoint_files import checkpoint_variables

    rows = checkpoint_variables(str(folder / "model.ckpt-1"))
    return sum(r["bytes"] for r in rows if r["name"] != "global_step")


@pytest.mark.parametrize("targets,over", [((), "target android"),
                                          (("server", "android"), "target android"),
                                          (("android", "onnx"), "target android")])
def test_android_is_refused_before_any_work(big, freeze_noted, targets, over):
    """Also the targets whose converters take one GraphDef (until they write large models)."""
    before = sorted(os.listdir(big))
    args = ["--target", ",".join(targets)] if targets else []
    done, noted = freeze_noted(big, "model.ckpt-1", "--outputs", "probs", *args)
    assert done.returncode == 6, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: model.ckpt-1: the weights --outputs probs need are "
                               f"{_weights(big) / 2**30:.2f} GiB, over the 2 GiB {over} can "
                               "write; targets that can: "), lines[0]
    holders = lines[0].rsplit(": ", 1)[1].split(", ")
    assert {"server", "onnx", "tflite", "openvino"} <= set(holders), lines[0]
    assert "android" not in holders, lines[0]
    assert noted == {"tensorflow": False, "children": 0, "python_in_child": False}
    assert sorted(os.listdir(big)) == before



@pytest.mark.parametrize("targets", [("edge-int8",), ("tflite-fp16", "onnx-int8"),
                                     ("tflite-dynamic", "onnx-fp16")])
def test_a_quantizing_target_is_refused_before_any_work(big, freeze_noted, targets):
    """Their quantizers hold the model whole (past the exports' `apart_bytes`): said from the
    checkpoint's index before the freeze, naming the targets that write it."""
    from graphfreeze import plan
    from graphfreeze.registry import Registry

    registry = Registry.default()
    (limit,) = {plan.weights_cap(registry, registry.target(t)) for t in targets}
    assert limit[1] == "quantize" and limit[0] < _weights(big), limit
    before = sorted(os.listdir(big))
    done, noted = freeze_noted(big, "model.ckpt-1", "--outputs", "probs", "--target",
                               ",".join(targets), "-o", "out/")
    assert done.returncode == 6, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    named = f"target{'s' if len(targets) > 1 else ''} {', '.join(targets)}"
    assert lines[0].startswith("error: model.ckpt-1: the weights --outputs probs need are "
                               f"{_weights(big) / 2**30:.2f} GiB, over the "
                               f"{limit[0] / 2**30:.3g} GiB {named} can quantize; targets that "
                               "can: "), lines[0]
    holders = lines[0].rsplit(": ", 1)[1].split(", ")
    assert {"server", "onnx", "tflite", "openvino"} <= set(holders), lines[0]
    assert not set(targets) & set(holders), lines[0]
    assert noted == {"tensorflow": False, "children": 0, "python_in_child": False}
    assert sorted(os.listdir(big)) == before

def test_inspect_lists_the_table_without_reading_it(big):
    """`freeze inspect` (its shapes from the graph's records) names the table and its size
    from the index; its peak memory is a small part of the table's (nothing read whole)."""
    import json
    import subprocess
    import sys

    from graphfreeze.proto.bundle import Bundle

    from tests.peak_rss import freeze_peak_mb

    args = ["inspect", "model.ckpt-1", "--no-gaps", "--json"]
    done = subprocess.run([sys.executable, "-m", "graphfreeze_cli.main", *args], cwd=big,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    table = next(v for v in json.loads(done.stdout)["variables"] if v["name"] == "embedding/table")
    rows, width = Bundle(str(big / "model.ckpt-1")).entries["embedding/table"].shape
    assert table["shape"] == [rows, width] and table["bytes"] == rows * width * 4
    assert freeze_peak_mb(args, cwd=big) * 2**20 < table["bytes"] / 8


def test_server_writes_it_verified_in_about_the_weights_memory(big, tmp_path):
    """A SavedModel whose table is a variable again, written from the frozen weights as they
    are held (no copy), restored by TensorFlow in verification, its sidecar saying so; the
    command's peak RSS (TensorFlow's own ~0.5 GB included) within the issue's bound, 1.5x the
    weights (it took 9.4 GB, 4.2x, when the export copied them into the GraphDef and TensorFlow
    and verification restored them again beside it)."""
    import json
    import shutil

    from graphfreeze.proto.bundle import Bundle

    from tests.peak_rss import freeze_peak_mb

    out = tmp_path / "out"
    try:
        peak = freeze_peak_mb(["model.ckpt-1", "--outputs", "probs", "--target", "server",
                               "-o", f"{out}/"], cwd=big)
        car = json.loads((out / "model.ckpt-1.savedmodel.json").read_text())
        assert car["verification"]["passed"], car["verification"]
        written = Bundle(str(out / "model.ckpt-1.savedmodel" / "variables" / "variables"))
        written.check_shards()
        assert car["variables"] == len(written.entries)
        table = Bundle(str(big / "model.ckpt-1")).entries["embedding/table"]
        assert table.shape in {e.shape for e in written.entries.values()}
    finally:
        shutil.rmtree(out, ignore_errors=True)  # (2.1 GB)
    assert peak * 2**20 <= 1.5 * _weights(big), f"{peak:.0f} MB"


def test_a_constant_over_2_gib_is_sized_without_serializing_it(big):
    """Frozen in a GraphDef (its bytes in the proto, as a SavedModel's freeze leaves them for the
    converters), the table is sized by its shape: upb cannot count a message over 2 GiB
    (ByteSize raises 'Failed to serialize proto'), and the export's refusal says its size."""
    from graphfreeze.graph.serialize import PROTOBUF_LIMIT, const_bytes, over_protobuf
    from graphfreeze.proto.bundle import Bundle
    from graphfreeze.proto.tf import graph_pb2

    bundle = Bundle(str(big / "model.ckpt-1"))
    entry = bundle.entries["embedding/table"]
    graph_def = graph_pb2.GraphDef()
    node = graph_def.node.add(name="table", op="Const")
    node.attr["dtype"].type = entry.dtype
    tensor = node.attr["value"].tensor
    tensor.dtype = entry.dtype
    for dim in entry.shape:
        tensor.tensor_shape.dim.add().size = dim
    with open(bundle.shard_file(entry.shard), "rb") as shard:
        shard.seek(entry.offset)
        tensor.tensor_content = shard.read(entry.size)  # (the bytes: no array kept)
    size = const_bytes(graph_def)
    assert size == entry.size > PROTOBUF_LIMIT
    line = str(over_protobuf("saved_model", size, PROTOBUF_LIMIT, "which tf2onnx converts through"))
    assert line.startswith(f"saved_model: the weights are {entry.size / 2**30:.2f} GiB, over the "
                           "2 GiB of one protobuf, which tf2onnx converts through; use the "
                           "server target"), line


def test_a_truncated_data_shard_is_named(big, tmp_path, freeze_noted):
    """The big checkpoint with half its .data shard (sparse: nothing written): one line naming
    the shard and how much of the table it holds, exit 3, nothing written."""
    folder = tmp_path / "truncated"
    folder.mkdir()
    for suffix in (".index", ".meta"):
        (folder / f"model.ckpt-1{suffix}").write_bytes((big / f"model.ckpt-1{suffix}").read_bytes())
    shard = "model.ckpt-1.data-00000-of-00001"
    with open(folder / shard, "wb") as half:
        half.truncate(os.path.getsize(big / shard) // 2)
    done, _ = freeze_noted(folder, "model.ckpt-1", "--outputs", "probs", "--target", "server",
                           "-o", "out/")
    assert done.returncode == 3, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{shard}: holds " in lines[0] and "embedding/table" in lines[0], \
        lines
    assert sorted(os.listdir(folder)) == sorted(["model.ckpt-1.index", "model.ckpt-1.meta", shard])


def test_onnx_writes_it_with_external_data_one_artifact_to_verify(big, tmp_path):
    """The .onnx and its FILE.onnx.data (the table written from the frozen weights as they are
    held: tf2onnx never sees it), verified in onnxruntime within 1.5x the weights, then `freeze
    verify` of the written files against the golden outputs the run saved."""
    import json
    import shutil
    import subprocess
    import sys

    from graphfreeze.proto.bundle import Bundle

    from tests.peak_rss import freeze_peak_mb

    out = tmp_path / "out"
    try:
        peak = freeze_peak_mb(["model.ckpt-1", "--outputs", "probs", "--target", "onnx",
                               "--save-golden", f"{out}/golden", "-o", f"{out}/"], cwd=big)
        car = json.loads((out / "model.ckpt-1.onnx.json").read_text())
        assert car["verification"]["passed"], car["verification"]
        assert car["external_data"] == "model.ckpt-1.onnx.data"
        data = (out / "model.ckpt-1.onnx.data").stat().st_size
        assert data >= Bundle(str(big / "model.ckpt-1")).entries["embedding/table"].size > 2**31
        assert car["bytes"] == data + (out / "model.ckpt-1.onnx").stat().st_size
        done = subprocess.run([sys.executable, "-m", "graphfreeze_cli.main", "verify",
                               "model.ckpt-1.onnx"], cwd=out, capture_output=True, text=True)
        assert done.returncode == 0 and "passed" in done.stdout, done.stdout + done.stderr
    finally:
        shutil.rmtree(out, ignore_errors=True)  # (2.1 GB)
    assert peak * 2**20 <= 1.5 * _weights(big), f"{peak:.0f} MB"



@pytest.mark.parametrize("target,suffix,parts", [("tflite", ".tflite", [".tflite"]),
                                                 ("openvino", ".xml", [".xml", ".bin"])])
def test_tflite_and_openvino_write_it_verified(big, tmp_path, target, suffix, parts):
    """tflite: one file in LiteRT's buffer-offset layout (weights after the flatbuffer);
    openvino: .xml + .bin. The table written from the frozen weights as they are held (the
    converter never sees it), verified in the format's runtime within 1.5x the weights."""
    import json
    import shutil

    from tests.peak_rss import freeze_peak_mb

    out = tmp_path / "out"
    try:
        peak = freeze_peak_mb(["model.ckpt-1", "--outputs", "probs", "--target", target,
                               "-o", f"{out}/"], cwd=big)
        car = json.loads((out / f"model.ckpt-1{suffix}.json").read_text())
        assert car["verification"]["passed"], car["verification"]
        sizes = [(out / f"model.ckpt-1{part}").stat().st_size for part in parts]
        assert car["bytes"] == sum(sizes) and max(sizes) > 2**31
    finally:
        shutil.rmtree(out, ignore_errors=True)  # (2.1 GB)
    assert peak * 2**20 <= 1.5 * _weights(big), f"{peak:.0f} MB"
