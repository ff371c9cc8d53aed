"""Which source a path is (sources/detect.py), from the files alone, and the typed options
`resolve` gives it."""

from __future__ import annotations

import shutil

import pytest
from graphfreeze.errors import ConfigError, InputError
from graphfreeze.registry import Registry
from graphfreeze.sources.checkpoint import CheckpointOptions
from graphfreeze.sources.detect import detect, source_for
from graphfreeze.sources.keras_model import KerasOptions
from graphfreeze.sources.saved_model import SavedModelOptions


@pytest.fixture(scope="module")
def registry():
    return Registry.default(plugins=False)


@pytest.fixture(scope="module")
def models(samples, other_samples, tmp_path_factory):
    """name -> path of a real model of every kind, plus a .pbtxt made from frozen.pb."""
    from google.protobuf import text_format
    from tensorflow.core.framework import graph_pb2

    tmp = tmp_path_factory.mktemp("detect")
    graph_def = graph_pb2.GraphDef.FromString((other_samples / "frozen.pb").read_bytes())
    (tmp / "frozen.pbtxt").write_text(text_format.MessageToString(graph_def))
    iris = samples / "iris"
    return {
        "model_dir": iris, "model_dir/": f"{iris}/", "prefix": iris / "model.ckpt-200",
        "index": iris / "model.ckpt-200.index", "meta": iris / "model.ckpt-200.meta",
        "data": iris / "model.ckpt-200.data-00000-of-00001",
        "tf2_savedmodel": other_samples / "tf2_savedmodel",
        "tf1_savedmodel/": f"{other_samples / 'tf1_savedmodel'}/",
        "saved_model.pb": other_samples / "tf2_savedmodel" / "saved_model.pb",
        "model.keras": other_samples / "model.keras", "model.h5": other_samples / "model.h5",
        "frozen.pb": other_samples / "frozen.pb", "frozen.pbtxt": tmp / "frozen.pbtxt",
    }


@pytest.mark.parametrize("name,kind", [
    ("model_dir", "checkpoint"), ("model_dir/", "checkpoint"), ("prefix", "checkpoint"),
    ("index", "checkpoint"), ("meta", "checkpoint"), ("data", "checkpoint"),
    ("tf2_savedmodel", "saved_model"), ("tf1_savedmodel/", "saved_model"),
    ("saved_model.pb", "saved_model"),
    ("model.keras", "keras"), ("model.h5", "keras"),
    ("frozen.pb", "frozen_graph"), ("frozen.pbtxt", "frozen_graph"),
])
def test_every_kind_is_detected_from_its_files(models, registry, name, kind):
    assert detect(str(models[name]), registry).name == kind


def test_stems_put_artifacts_beside_the_source(models, registry):
    def stem(name):
        source, options = source_for(str(models[name]), "auto", {}, registry)
        return source.stem(str(models[name]), options)

    prefix = str(models["prefix"])
    for name in ("model_dir", "model_dir/", "prefix", "index", "meta", "data"):
        assert stem(name) == prefix, name
    sm = str(models["tf2_savedmodel"])
    assert stem("tf2_savedmodel") == stem("saved_model.pb") == sm
    assert stem("tf1_savedmodel/") == str(models["tf1_savedmodel/"]).rstrip("/")
    assert stem("model.keras") == stem("model.h5") == str(models["model.keras"])[:-len(".keras")]
    assert stem("frozen.pb") == str(models["frozen.pb"])[:-len(".pb")] + ".optimized"
    assert stem("frozen.pbtxt") == str(models["frozen.pbtxt"])[:-len(".pbtxt")] + ".optimized"


def test_model_dir_with_only_step_files_and_no_state_file(samples, registry, tmp_path):
    model_dir = tmp_path / "run"
    shutil.copytree(samples / "iris", model_dir)
    (model_dir / "checkpoint").unlink()
    source, options = source_for(str(model_dir), "auto", {}, registry)
    assert source.name == "checkpoint"
    assert source.stem(str(model_dir), options) == str(model_dir / "model.ckpt-200")


def test_savedmodel_wins_over_checkpoint_files_in_the_same_dir(other_samples, registry, tmp_path):
    sm = tmp_path / "sm"
    shutil.copytree(other_samples / "tf1_savedmodel", sm)
    (sm / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-1"\n')
    assert detect(str(sm), registry).name == "saved_model"


@pytest.mark.parametrize("make,message", [
    (lambda d: d / "missing", "no such file or directory; expected "),
    (lambda d: (d / "empty").mkdir() or d / "empty", "a directory holding no model; expected "),
    (lambda d: (d / "sm" / "variables").mkdir(parents=True) or d / "sm",
     "looks like a SavedModel (it has variables/) but has no saved_model.pb"),
    (lambda d: (d / "notes.txt").write_text("hi") and d / "notes.txt",
     "not a model graphfreeze knows; expected "),
])
def test_paths_that_are_no_model(registry, tmp_path, make, message):
    path = str(make(tmp_path))
    with pytest.raises(InputError) as err:
        detect(path, registry)
    assert str(err.value).startswith(path + ": ") and message in str(err.value)
    if "expected" in message:  # every source's summary, in detection order
        assert str(err.value).endswith("; ".join(s.summary for s in registry.sources()))


def test_detection_order(registry):
    assert [s.name for s in registry.sources()] == ["checkpoint", "saved_model", "keras",
                                                    "frozen_graph"]


def test_options_of_other_kinds_are_ignored(models, registry):
    every = {"meta": "/x.meta", "step": 5, "tag": "train", "signature": "predict",
             "custom_objects": ["a:b"]}
    source, options = source_for(str(models["frozen.pb"]), "auto", every, registry)
    assert source.name == "frozen_graph" and options == source.options()
    source, options = source_for(str(models["model.h5"]), "auto", every, registry)
    assert options == KerasOptions(custom_objects=("a:b",))  # a list from TOML becomes a tuple
    source, options = source_for(str(models["tf2_savedmodel"]), "auto", every, registry)
    assert options == SavedModelOptions(tag="train", signature="predict")


def test_options_of_other_kinds_given_by_the_user_are_refused(models, registry, freeze,
                                                              monkeypatch):
    """The command line's flags name this model's options (`strict`): one it would ignore is
    refused, by the CLI in the model's folder too."""
    with pytest.raises(ConfigError, match=r"frozen.pb: --custom-objects is an option of keras "
                                          r"models, and this one is a frozen_graph model; leave "
                                          r"it out"):
        source_for(str(models["frozen.pb"]), "auto", {"custom_objects": ["a:b"]}, registry,
                   strict=True)
    source, _ = source_for(str(models["frozen.pb"]), "auto", {"step": None}, registry, strict=True)
    assert source.name == "frozen_graph"  # (an option left unset is not given)
    from graphfreeze.inspect.report import inspect

    report = inspect(str(models["frozen.pb"]), options={"step": 3}, gaps=False)  # the API: lenient
    assert report["kind"] == "frozen_graph"
    monkeypatch.chdir(models["tf2_savedmodel"].parent)
    name = models["tf2_savedmodel"].name
    for command in (["convert", name, "--step", "3"], ["inspect", name, "--no-gaps", "--step", "3"]):
        result = freeze(*command)
        assert result.exit_code == 6, result.output
        assert result.stderr.strip() == (f"error: {name}: --step is an option of checkpoint "
                                         "models, and this one is a saved_model model; leave it "
                                         "out")


def test_typed_options_and_none_values(models, registry):
    source, options = source_for(str(models["model_dir"]), "auto", {"step": 200, "meta": None},
                              registry)
    assert options == CheckpointOptions(step=200, meta=None)
    with pytest.raises(ConfigError, match="checkpoint source: option step must be an integer, "
                                          "got '200'"):
        source_for(str(models["model_dir"]), "auto", {"step": "200"}, registry)
    with pytest.raises(ConfigError, match="keras source: option custom_objects must be a list"):
        source_for(str(models["model.keras"]), "auto", {"custom_objects": "a:b"}, registry)


def test_unknown_option_is_a_config_error(models, registry):
    with pytest.raises(ConfigError) as err:
        source_for(str(models["frozen.pb"]), "auto", {"tagg": "serve", "step": 1}, registry)
    assert str(err.value) == ("source option tagg is not taken by any source kind (options: "
                              "custom_objects, meta, signature, step, tag)")


def test_a_named_kind_skips_detection(models, registry, tmp_path):
    odd = tmp_path / "graph.bin"
    shutil.copy(models["frozen.pb"], odd)
    with pytest.raises(InputError, match="not a model graphfreeze knows"):
        source_for(str(odd), "auto", {}, registry)
    source, _ = source_for(str(odd), "frozen_graph", {}, registry)
    assert source.name == "frozen_graph"
    assert len(source.load(str(odd), None, False).graph_def.node) > 3
    with pytest.raises(ConfigError, match=r"unknown source 'pb' \(sources: checkpoint, "
                                          r"frozen_graph, keras, saved_model\)"):
        source_for(str(odd), "pb", {}, registry)
