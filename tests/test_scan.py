"""`freeze scan`: every hostile model (models/hostile.py) is flagged, naming file and node; the
clean samples pass; nothing of a model is loaded or run."""

from __future__ import annotations

import json
import shutil
import sys

import pytest

# hostile model -> what its one finding line says (tests/e2e/test_untrusted.py: what each does)
HOSTILE = {
    "ckpt_write": "model.ckpt-1.meta: node 'write' (WriteFile) writes files",
    "ckpt_save": "model.ckpt-1.meta: node 'steal' (SaveV2) writes files",
    "ckpt_print": "model.ckpt-1.meta: node 'print' (PrintV2) prints to a file",
    "ckpt_read": "model.ckpt-1.meta: node 'read' (ReadFile) reads files",
    "ckpt_glob": "model.ckpt-1.meta: node 'glob' (MatchingFiles) reads files",
    "frozen_read.pb": "frozen_read.pb: node 'read' (ReadFile) reads files",
    "sm_write": "sm_write: node 'WriteFile' (WriteFile) writes files in function",
    "sm_asset": "sm_asset: asset '../../outside_secret.txt' resolves outside the model directory",
    "sm_saver": "sm_saver: node 'evil' (SaveV2) writes files when the model loads",
    "keras_write.h5": "keras_write.h5: layer 'tf.io.write_file' (TFOpLambda tf.io.write_file) "
                      "writes files",
}


def lines(result) -> list[str]:
    return [line for line in result.output.splitlines() if line.strip()]


def test_every_hostile_model_is_flagged(hostile_models, freeze):
    models = hostile_models / "models"
    assert sorted(p.name for p in models.iterdir()) == sorted(HOSTILE)  # a new one needs a line
    result = freeze("scan", models)
    assert result.exit_code == 3, result.output
    out = lines(result)
    assert len(out) == len(HOSTILE), result.output
    for name, phrase in HOSTILE.items():
        assert sum(line.startswith(str(models / name)) and phrase in line for line in out) == 1, \
            (name, result.output)
    assert not any("--unsafe" in line for line in out)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_one_hostile_file(hostile_models, freeze, name):
    result = freeze("scan", hostile_models / "models" / name)
    assert result.exit_code == 3 and len(lines(result)) == 1, result.output
    assert HOSTILE[name] in result.output


def test_clean_samples_pass(samples, other_samples, freeze):
    result = freeze("scan", samples)
    assert result.exit_code == 0, result.output
    names = sorted(p.name for p in samples.iterdir() if p.is_dir())
    assert lines(result) == [f"ok  {samples / n} (checkpoint)" for n in names]
    clean = [p for p in sorted(other_samples.iterdir()) if p.name != "lambda.h5"]
    result = freeze("scan", *clean)
    assert result.exit_code == 0, result.output
    kinds = {".h5": "keras", ".keras": "keras", ".pb": "frozen_graph", "": "saved_model"}
    assert lines(result) == [f"ok  {p} ({kinds[p.suffix]})" for p in clean]
    result = freeze("scan", other_samples / "lambda.h5")  # the one that is not clean
    assert result.exit_code == 3
    assert lines(result) == [f"{other_samples / 'lambda.h5'}: layer 'double' (Lambda) runs Python "
                             "code stored in the file"]


def test_not_a_model(freeze, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("hello")
    (tmp_path / "empty").mkdir()
    result = freeze("scan", notes, tmp_path / "empty", tmp_path / "missing.pb")
    assert result.exit_code == 3
    assert [line.split("; expected")[0] for line in lines(result)] == [
        f"{notes}: not a model graphfreeze knows", f"{tmp_path / 'empty'}: a directory holding "
        "no model", f"{tmp_path / 'missing.pb'}: no such file or directory"]


def test_broken_model_is_one_finding(freeze, tmp_path):
    (tmp_path / "cut.pb").write_bytes(b"\x0a\xff\xff")
    result = freeze("scan", tmp_path / "cut.pb")
    assert result.exit_code == 3 and len(lines(result)) == 1, result.output
    assert lines(result)[0].startswith(f"{tmp_path / 'cut.pb'}: not a binary GraphDef (")


def test_folder_is_searched_recursively(hostile_models, samples, freeze, tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(samples / "iris", root / "runs" / "a" / "iris")
    shutil.copy(hostile_models / "models" / "frozen_read.pb", root / "runs" / "b.pb")
    shutil.copytree(hostile_models / "models" / "sm_write", root / ".hidden" / "sm_write")
    (root / "README.md").write_text("not a model")
    result = freeze("scan", root)
    assert result.exit_code == 3
    assert lines(result) == [f"ok  {root / 'runs' / 'a' / 'iris'} (checkpoint)",
                             f"{root / 'runs' / 'b.pb'}: node 'read' (ReadFile) reads files"]


def test_json(hostile_models, samples, freeze):
    result = freeze("scan", "--json", samples / "iris", hostile_models / "models" / "sm_saver",
                    hostile_models / "models" / "sm_asset")
    assert result.exit_code == 3
    report = json.loads(result.output)
    assert report["schema_version"] == 1 and report["ok"] is False
    iris, saver, asset = report["files"]
    assert iris == {"path": str(samples / "iris"), "kind": "checkpoint", "ok": True,
                    "findings": []}
    assert saver["kind"] == "saved_model" and not saver["ok"]
    assert saver["findings"] == [{"message": f"{hostile_models / 'models' / 'sm_saver'}: node "
                                  "'evil' (SaveV2) writes files when the model loads, not a "
                                  "restore of the saver's own file", "node": "evil", "op": "SaveV2"}]
    assert asset["findings"][0]["node"] is None and "asset" in asset["findings"][0]["message"]
    clean = json.loads(freeze("scan", "--json", samples / "iris").output)
    assert clean["ok"] is True


def test_nothing_is_loaded_or_run(hostile_models, freeze, monkeypatch):
    """No session, no SavedModel or Keras load: the models' targets stay as they were."""
    import tensorflow as tf
    from tensorflow.python.client import session

    def refuse(*args, **kwargs):
        raise AssertionError("scan loaded or ran the model")

    monkeypatch.setattr(session.BaseSession, "__init__", refuse)
    monkeypatch.setattr(tf.saved_model, "load", refuse)
    monkeypatch.setattr(tf.compat.v1.saved_model.loader, "load", refuse)
    for name in ("keras", "tf_keras"):  # an import of either fails
        monkeypatch.setitem(sys.modules, name, None)
    target = hostile_models / "target"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir()
    (target / "secret.txt").write_bytes(b"secret")
    result = freeze("scan", hostile_models / "models")
    assert result.exit_code == 3 and len(lines(result)) == len(HOSTILE), result.output
    assert [p.name for p in target.iterdir()] == ["secret.txt"]


def test_a_plugin_kind_is_not_vouched_for():
    from graphfreeze.inspect.scan import check_model

    (finding,) = check_model("m.onnx", "onnx_model")
    assert "no scan for 'onnx_model' models" in finding.message


def test_files_of_one_checkpoint_are_one_model(samples, freeze):
    """pre-commit passes model.ckpt-N.index and .meta (and SavedModels' saved_model.pb)."""
    files = sorted((samples / "iris").glob("model.ckpt-*"))
    result = freeze("scan", *files)
    assert result.exit_code == 0 and lines(result) == [f"ok  {files[0]} (checkpoint)"], \
        result.output


def test_a_path_that_is_no_model_imports_no_tensorflow(tmp_path):
    """Detection reads file names and bytes: TensorFlow (seconds to import) only for a model."""
    import subprocess

    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "empty").mkdir()
    code = ("import sys; from click.testing import CliRunner; from graphfreeze_cli.main import "
            "main; r = CliRunner().invoke(main, ['scan', *sys.argv[1:]]); "
            "print(r.exit_code, sorted(m for m in ('tensorflow', 'keras', 'tf_keras') "
            "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "notes.txt"),
                           str(tmp_path / "empty")], capture_output=True, text=True, check=True)
    assert done.stdout.split("\n")[-2] == "3 []", done.stdout + done.stderr


def test_each_source_kind_answers_scan_itself(hostile_models):
    """inspect.scan asks the detected source: a source's own `scan` is what runs."""
    from graphfreeze.inspect.scan import scan
    from graphfreeze.registry import Registry

    registry = Registry.default(plugins=False)
    kinds = {s.name: type(s) for s in registry.sources()}
    assert all("scan" in vars(cls) for cls in kinds.values()), kinds  # none left to the default
    (result,) = scan([hostile_models / "models" / "frozen_read.pb"], registry)
    assert (result.kind, [f.node for f in result.findings]) == ("frozen_graph", ["read"])


def test_no_tensorflow_for_kinds_that_need_none(samples, other_samples, hostile_models,
                                               tmp_path):
    """One `freeze scan` process over a checkpoint prefix, a model_dir, a SavedModel (TF1 and TF2),
    a frozen graph, Keras .h5/.keras and hostile ones of each: the same findings, and TensorFlow
    never imported (only a Keras TFOpLambda's function needs it)."""
    import subprocess

    hostile = hostile_models / "models"
    paths = [samples / "iris" / "model.ckpt-200", samples / "cnn_v2", other_samples / "frozen.pb",
             *(other_samples / n for n in ("tf1_savedmodel", "tf2_savedmodel", "model.h5",
                                           "model.keras", "lambda.h5")),
             *(hostile / n for n in sorted(HOSTILE) if n != "keras_write.h5")]
    code = ("import sys\nfrom graphfreeze_cli.main import main\ntry:\n    main()\nfinally:\n"
            "    print('tensorflow' in sys.modules)")
    run = subprocess.run([sys.executable, "-c", code, "scan", *map(str, paths)],
                         capture_output=True, text=True, cwd=tmp_path)
    out = run.stdout.splitlines()
    assert run.returncode == 3 and out[-1] == "False", run.stdout + run.stderr
    assert sum(line.startswith("ok  ") for line in out) == 7
    assert sum("layer 'double' (Lambda)" in line for line in out) == 1
    for name, phrase in HOSTILE.items():
        assert name == "keras_write.h5" or sum(phrase in line for line in out) == 1, name
