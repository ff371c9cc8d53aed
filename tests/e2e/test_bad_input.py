"""Each kind of bad input: one clear line naming the file or node and the fix, a non-zero exit,
and nothing written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tensorflow.core.protobuf import meta_graph_pb2


def assert_failed(result, code: int, *phrases: str):
    assert result.exit_code == code, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    for phrase in phrases:
        assert phrase in lines[0], lines[0]
    return lines[0]


def outputs_in(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.endswith((".pb", ".json", ".tmp")) or
                  ".tmp-" in p.name)


@pytest.mark.parametrize("suffix,phrase", [
    (".meta", "meta graph not found"),
    (".index", "checkpoint index not found"),
    (".data-00000-of-00001", "checkpoint data file not found"),
])
def test_missing_checkpoint_file(sample, freeze, suffix, phrase):
    model_dir = sample("iris")
    (model_dir / f"model.ckpt-200{suffix}").unlink()
    result = freeze("--ckpt", model_dir / "model.ckpt-200", "--outputs", "probs")
    assert_failed(result, 3, f"model.ckpt-200{suffix}", phrase)
    assert outputs_in(model_dir) == []


def test_truncated_data_file(sample, freeze):
    model_dir = sample("iris")
    data = model_dir / "model.ckpt-200.data-00000-of-00001"
    data.write_bytes(data.read_bytes()[:100])
    before = data.read_bytes()
    line = assert_failed(freeze("--ckpt", model_dir / "model.ckpt-200", "--outputs", "probs"), 3,
                         "truncated or corrupt")
    assert "model.ckpt-200.data" in line and "cannot read variable" in line
    assert "{{" not in line and "[Op:" not in line  # no TensorFlow-internal text
    assert data.read_bytes() == before and outputs_in(model_dir) == []


def test_meta_graph_shape_disagrees_with_checkpoint(sample, freeze, tmp_path):
    """Every mismatch counted, the first few named with both shapes (seed 001's users)."""
    model_dir = sample("iris")
    meta = meta_graph_pb2.MetaGraphDef()
    meta.ParseFromString((model_dir / "model.ckpt-200.meta").read_bytes())
    changed = ["dnn/hidden1/bias", "dnn/hidden1/kernel", "dnn/hidden2/bias", "dnn/hidden2/kernel"]
    for node in meta.graph_def.node:
        if node.name in changed:
            node.attr["shape"].shape.dim[-1].size = 32
    other = tmp_path / "other.meta"
    other.write_bytes(meta.SerializeToString())
    result = freeze("--ckpt", model_dir / "model.ckpt-200", "--meta", other, "--outputs", "probs")
    assert_failed(result, 3, "4 variable(s) of meta graph other.meta", "'dnn/hidden1/bias' [32]",
                  "vs [16]", "'dnn/hidden2/bias' [32] vs [16]", ", ...", "same run")
    assert outputs_in(model_dir) == []


def test_random_bytes_as_meta_graph(sample, freeze, tmp_path):
    model_dir = sample("iris")
    junk = tmp_path / "junk.meta"
    junk.write_bytes(os.urandom(4096))
    result = freeze("--ckpt", model_dir / "model.ckpt-200", "--meta", junk, "--outputs", "probs")
    assert_failed(result, 3, "junk.meta", "--meta")


def test_unknown_output_name_suggests_the_real_one(sample, freeze):
    model_dir = sample("iris")
    result = freeze("--ckpt", model_dir, "--outputs", "prob")
    assert_failed(result, 3, "output 'prob' not in graph", "did you mean 'probs'")


def test_no_outputs_lists_likely_ones(sample, freeze):
    model_dir = sample("iris")
    line = assert_failed(freeze("--ckpt", model_dir), 3, "no --outputs given", "likely outputs:")
    assert "probs" in line.split("likely outputs:")[1].split(",")[0]


def test_existing_output_needs_force(sample, freeze):
    model_dir = sample("iris")
    existing = model_dir / "model.ckpt-200.pb"
    existing.write_bytes(b"keep me")
    result = freeze("--ckpt", model_dir, "--outputs", "probs")
    assert_failed(result, 4, "model.ckpt-200.pb: already exists", "--force")
    assert existing.read_bytes() == b"keep me"
    assert freeze("--ckpt", model_dir, "--outputs", "probs", "--force").exit_code == 0
    assert existing.read_bytes() != b"keep me"


def test_unwritable_output_path(sample, freeze):
    model_dir = sample("iris")
    # /proc takes no new files, even for root (CI runs as root, so chmod alone proves nothing)
    result = freeze("--ckpt", model_dir, "--outputs", "probs", "-o", "/proc/graphfreeze/m.pb")
    line = assert_failed(result, 4, "/proc/graphfreeze/m.pb")
    assert "not writable" in line or "cannot write" in line
    assert not os.path.exists("/proc/graphfreeze")


def test_output_under_a_file_is_refused(sample, freeze, tmp_path):
    model_dir = sample("iris")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = freeze("--ckpt", model_dir, "--outputs", "probs", "-o", blocker / "m.pb")
    assert_failed(result, 4, "is a file, not a directory")


def test_verification_mismatch_is_an_error_and_writes_nothing(sample, freeze):
    model_dir = sample("iris")
    result = freeze("--ckpt", model_dir, "--outputs", "probs", "--target", "tflite",
                    "--tolerance", "1e-12")
    assert result.exit_code == 5, result.output
    *table, last = result.output.strip().splitlines()  # where it diverges, then the one error
    assert table[0].startswith("where it diverges") and last.startswith("error: ")
    assert "differs by up to" in last and "against the original on seeded inputs; nothing written" in last
    assert outputs_in(model_dir) == []


def test_inspect_corrupt_checkpoint_index(sample, freeze):
    """Fuzzing found: inspect read the index without wrapping TensorFlow's OpError."""
    model_dir = sample("iris")
    index = model_dir / "model.ckpt-200.index"
    index.write_bytes(b"\0" + index.read_bytes())
    assert_failed(freeze("inspect", model_dir), 3, "model.ckpt-200.index",
                  "not a readable checkpoint index")
    assert outputs_in(model_dir) == []


def test_original_that_fails_to_run_is_an_input_error(sample, freeze):
    """Fuzzing found: an attr TensorFlow checks only in the kernel (squeeze_dims out of int32
    range inside a cond branch) made verification's reference run an internal error."""
    model_dir = sample("iris_resource")
    meta_file = model_dir / "model.ckpt-200.meta"
    meta = meta_graph_pb2.MetaGraphDef()
    meta.ParseFromString(meta_file.read_bytes())
    squeezes = [n for f in meta.graph_def.library.function for n in f.node_def
                if "cond_true" in f.signature.name and n.name == "moments/Squeeze_1"]
    for squeeze in squeezes:  # the cond's branch as saved and as rewritten for the Saver
        squeeze.attr["squeeze_dims"].list.i.append(-(2**63))
    meta_file.write_bytes(meta.SerializeToString())
    assert_failed(freeze("--ckpt", model_dir / "model.ckpt-200", "--outputs", "probs"), 3,
                  "model.ckpt-200.meta: the original model fails", f"'{squeeze.name}'",
                  "out of range for an int32", "--no-verify")
    assert outputs_in(model_dir) == []


@pytest.mark.parametrize("args,code,phrase", [
    (("--tolerance", "nan"), 6, "--tolerance nan: give a number >= 0"),
    (("--tolerance", "-1"), 6, "--tolerance -1: give a number >= 0"),
    (("--inputs", "x[1,4"), 3, "a shape is written in brackets after the name"),
    (("--inputs", "x[0,4]"), 3, "shape dims must be positive numbers"),
    (("--outputs", "probs[1,3]"), 3, "only --inputs take a shape"),
])
def test_bad_options_from_the_model_folder(sample, freeze, monkeypatch, args, code, phrase):
    """Typed in the checkpoint's folder, relative paths: refused before any work, nothing written."""
    monkeypatch.chdir(sample("iris"))
    result = freeze("--ckpt", "model.ckpt-200", "--outputs", "probs", *args)
    assert_failed(result, code, phrase)
    assert outputs_in(Path(".")) == []


def test_kind_beside_a_kind_flag_is_a_usage_error(sample, freeze, monkeypatch):
    monkeypatch.chdir(sample("iris"))
    result = freeze("--ckpt", "model.ckpt-200", "--kind", "keras", "--outputs", "probs")
    assert result.exit_code == 2 and "give --kind with PATH" in result.output


@pytest.mark.parametrize("args", [("iris", "--kind", "keras"), ("--keras", "iris")])
def test_a_kind_asked_for_that_the_files_are_not_says_what_they_are(sample, freeze, monkeypatch,
                                                                   args):
    """A checkpoint's folder read as a Keras file: why it failed, and that it is a checkpoint."""
    monkeypatch.chdir(sample("iris").parent)
    line = assert_failed(freeze(*args, "--outputs", "probs"), 3)
    assert line == ("error: iris: a directory, not a Keras model file; give the .keras or .h5 file "
                    "model.save wrote (read as a keras model, as asked; the files are a checkpoint "
                    "model: leave the kind out to have it detected)")
    assert outputs_in(Path("iris")) == []


def test_meta_under_home_is_expanded_for_convert_and_inspect(sample, freeze, monkeypatch):
    model_dir = sample("iris")
    monkeypatch.setenv("HOME", str(model_dir))
    monkeypatch.chdir(model_dir.parent)
    result = freeze("inspect", "iris", "--meta", "~/model.ckpt-200.meta", "--json")
    assert result.exit_code == 0, result.output
    result = freeze("iris", "--meta", "~/model.ckpt-200.meta", "--outputs", "probs")
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("args,phrase", [
    (("--outputs", "probs:1"), "output 'probs:1': node 'probs' (Softmax)"),
    (("--outputs", "probs", "--inputs", "x:1"), "input 'x:1': node 'x' (Placeholder)"),
    (("--outputs", "save/restore_all"), "node 'save/restore_all' (NoOp)"),
])
def test_an_output_the_node_does_not_have_is_an_input_error(sample, freeze, args, phrase):
    model_dir = sample("iris")
    line = assert_failed(freeze("--ckpt", model_dir / "model.ckpt-200", *args), 3, phrase)
    assert "model.ckpt-200.meta" in line
    assert outputs_in(model_dir) == []
