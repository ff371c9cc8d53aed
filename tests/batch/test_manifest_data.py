"""A batch manifest takes the data options: verification data (relative to the manifest, read
into the cache key) and golden outputs saved per model."""

from __future__ import annotations

import json
import shutil

import numpy as np

from tests.batch.test_batch import cli, report_of, statuses

MANIFEST = """\
schema_version = 1

[[model]]
source = "iris"
outputs = ["probs"]
targets = ["android"]
verify_data = "data/val.npz"
save_golden = "golden/iris"
"""


def test_verify_data_and_golden_from_a_manifest(samples, tmp_path):
    shutil.copytree(samples / "iris", tmp_path / "iris")
    (tmp_path / "data").mkdir()
    rng = np.random.default_rng(1)
    np.savez(tmp_path / "data" / "val.npz", x=rng.standard_normal((20, 4)).astype(np.float32),
             labels=rng.integers(0, 3, 20))
    (tmp_path / "models.toml").write_text(MANIFEST)
    done = cli(tmp_path, "batch", "models.toml", "--jobs", "1", "--cache", "cache")
    assert done.returncode == 0, done.stderr
    car = json.loads((tmp_path / "dist" / "iris" / "model.ckpt-200.pb.json").read_text())
    assert car["verification"]["data"].endswith("data/val.npz (20 rows)")
    assert car["verification"]["accuracy"]["rows"] == 20
    assert json.loads((tmp_path / "golden" / "iris" / "golden.json").read_text())["rows"] == 20
    again = cli(tmp_path, "batch", "models.toml", "--jobs", "1", "--cache", "cache")
    assert statuses(report_of(tmp_path / "dist")) == {"iris": "cached"}, again.stderr
    np.savez(tmp_path / "data" / "val.npz", x=rng.standard_normal((10, 4)).astype(np.float32))
    changed = cli(tmp_path, "batch", "models.toml", "--jobs", "1", "--cache", "cache")
    assert changed.returncode == 0, changed.stderr
    assert statuses(report_of(tmp_path / "dist")) == {"iris": "ok"}  # the data is part of the cache key
    timed = cli(tmp_path, "batch", "models.toml", "--jobs", "1", "--no-cache", "--benchmark")
    assert timed.returncode == 0, timed.stderr
    car = json.loads((tmp_path / "dist" / "iris" / "model.ckpt-200.pb.json").read_text())
    assert car["latency"]["runs"] > 0 and car["latency"]["median_ms"] > 0
