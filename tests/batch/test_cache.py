"""The cache key covers what makes an artifact (custom-object code too), and an entry that is not
whole is never served."""

from __future__ import annotations

import json
import sys

from graphfreeze.batch.cache import Cache, Outcome, job_key
from graphfreeze.batch.jobs import prepare_jobs
from graphfreeze.batch.manifest import JobOptions, JobSpec
from graphfreeze.registry import Registry


def test_custom_object_code_is_in_the_key(other_samples, tmp_path, monkeypatch):
    module = tmp_path / "my_layers.py"
    module.write_text("SCALE = 2.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = JobSpec("custom", str(other_samples / "custom.keras"),
                   JobOptions(source_options={"custom_objects": ("my_layers:Scale",)},
                              out_dir=str(tmp_path / "d")),
                   "m.toml:1")

    def key():
        (job,) = prepare_jobs([spec], Registry.default(plugins=False))
        return job_key(job)

    before = key()
    assert key() == before
    module.write_text("SCALE = 3.0\n")
    assert key() != before
    assert "my_layers" not in sys.modules  # found, hashed, never imported


def test_an_entry_naming_a_file_it_lacks_is_not_served(tmp_path):
    cache = Cache(str(tmp_path / "cache"))
    outcome = Outcome({"m.pb": b"graph", "m.pb.json": b"{}"}, [("android", "m.pb", "m.pb.json")])
    cache.store("ab" * 32, outcome)
    assert cache.load("ab" * 32) == outcome
    entry = tmp_path / "cache" / "ab" / ("ab" * 32) / "entry.json"
    record = json.loads(entry.read_text())
    del record["files"]["m.pb.json"]
    entry.write_text(json.dumps(record))
    assert cache.load("ab" * 32) is None
    assert cache.load("cd" * 32) is None  # another key: nothing
