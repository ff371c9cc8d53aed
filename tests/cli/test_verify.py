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
