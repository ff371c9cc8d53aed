"""`freeze verify ARTIFACT` without --golden, typed as a user types it: the golden folder the run
saved (--save-golden, recorded in the sidecar relative to the artifact), or one line saying how
to get one (exit 2, a usage error)."""

from __future__ import annotations

import json
import shutil

from tests.cli.test_convert_command import freeze


def test_verify_uses_the_golden_outputs_its_run_saved(sample):
    folder = sample("iris")
    done = freeze(folder, "--ckpt", "model.ckpt-200", "--outputs", "probs", "--target", "tflite",
                  "-o", "out/", "--save-golden", "golden")
    assert done.returncode == 0, done.stderr
    assert json.loads((folder / "out/model.ckpt-200.tflite.json").read_text())["golden"] == \
        "../golden"
    done = freeze(folder, "verify", "out/model.ckpt-200.tflite")
    assert done.returncode == 0, done.stderr
    assert "passed against the golden inputs in golden" in done.stdout
    done = freeze(folder / "out", "verify", "model.ckpt-200.tflite")  # from the artifact's folder
    assert done.returncode == 0 and "golden inputs in ../golden" in done.stdout, done.stderr
    shutil.move(folder / "golden", folder / "kept")
    done = freeze(folder, "verify", "out/model.ckpt-200.tflite")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "records golden outputs in golden, which holds none now; pass --golden DIR" in \
        done.stderr
    done = freeze(folder, "verify", "out/model.ckpt-200.tflite", "--golden", "kept")
    assert done.returncode == 0, done.stderr


def test_verify_without_golden_outputs_says_how_to_make_them(sample):
    folder = sample("iris")
    done = freeze(folder, "--ckpt", "model.ckpt-200", "--outputs", "probs", "--target", "tflite")
    assert done.returncode == 0, done.stderr
    done = freeze(folder, "verify", "model.ckpt-200.tflite")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "records no golden outputs" in done.stderr and "--save-golden DIR" in done.stderr
    assert "Missing option" not in done.stderr
    done = freeze(folder, "verify", "model.ckpt-200.tflit")  # a typo: one line, exit 3
    assert (done.returncode, done.stderr) == (3, "error: model.ckpt-200.tflit: not found; give "
                                                 "an artifact graphfreeze wrote\n")


def test_verify_reads_only_a_golden_folder_beside_the_artifact_and_its_bounds_as_written(sample):
    folder = sample("iris")
    done = freeze(folder, "--ckpt", "model.ckpt-200", "--outputs", "probs", "--target", "tflite",
                  "-o", "out/", "--save-golden", "golden")
    assert done.returncode == 0, done.stderr
    car = folder / "out/model.ckpt-200.tflite.json"
    written = json.loads(car.read_text())
    shutil.copytree(folder / "golden", folder.parent / "elsewhere")
    for recorded in (str(folder / "golden"), "/etc", "../../elsewhere", "gs://bucket/golden"):
        car.write_text(json.dumps({**written, "golden": recorded}))
        done = freeze(folder, "verify", "out/model.ckpt-200.tflite")
        assert done.returncode == 3 and done.stderr.count("\n") == 1, done.stderr
        assert f"the sidecar's golden folder '{recorded}' is not beside the artifact; pass " \
               "--golden DIR (or --unsafe to read it)" in done.stderr
    car.write_text(json.dumps({**written, "golden": "../../elsewhere"}))
    done = freeze(folder, "verify", "out/model.ckpt-200.tflite", "--unsafe")
    assert done.returncode == 0, done.stderr
    check, (probs,) = written["verification"], [o["name"] for o in written["outputs"]]
    for bounds in ({probs: [0]}, {probs: [-1e9, 1e9]}, {probs: [1, 0]}, {"other": [0, 1]},
                   {probs: ["0", "1"]}, [0, 1]):
        car.write_text(json.dumps({**written, "verification": {**check, "bounds": bounds}}))
        done = freeze(folder, "verify", "out/model.ckpt-200.tflite")
        assert done.returncode == 3 and done.stderr.count("\n") == 1, done.stderr
        assert "model.ckpt-200.tflite.json: the sidecar's 'bounds' is not [low, high]; convert " \
               "the model again" in done.stderr
    car.write_text(json.dumps({**written, "verification": {**check, "bounds": {probs: [0, 1]}}}))
    assert freeze(folder, "verify", "out/model.ckpt-200.tflite").returncode == 0
