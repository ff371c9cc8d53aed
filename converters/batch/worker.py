"""One job, run where a worker runs it (a local worker process or a Ray task): converted into a
private staging folder, its files sent back as bytes; and their commit on the driver."""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import time

from graphfreeze import storage
from graphfreeze.batch.cache import Outcome
from graphfreeze.batch.results import ArtifactRecord


def convert_job(request, cwd: str) -> dict:
    """Run `request` (its paths relative to `cwd`) into a staging folder: {"outcome": Outcome,
    "seconds"} or {"error": one line, "exit_code"}. Runs in the worker; never raises."""
    from graphfreeze.convert import convert
    from graphfreeze.errors import GraphFreezeError, first_line

    start = time.monotonic()
    staging = tempfile.mkdtemp(prefix="graphfreeze-job-")
    try:
        if cwd and os.path.isdir(cwd):
            os.chdir(cwd)
        written = convert(dataclasses.replace(request, output=staging + "/", force=True))
        files = {}
        for full, rel in storage.tree_files(staging):
            with open(full, "rb") as f:
                files[rel] = f.read()
        return {"outcome": Outcome(files, [(w.target, storage.basename(w.path),
                                            storage.basename(w.sidecar_path)) for w in written]),
                "seconds": time.monotonic() - start}
    except GraphFreezeError as err:
        divergence = getattr(err, "divergence", None)
        text = str(err).replace(staging + "/", request.output or "")  # where it would have gone
        return {"error": text, "exit_code": err.exit_code,
                **({"details": {"divergence": divergence}} if divergence else {})}
    except Exception as err:  # noqa: BLE001 -- a bug of ours: reported, the batch goes on
        return {"error": f"internal error: {type(err).__name__}: {first_line(err)}",
                "exit_code": 1}
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def commit(outcome: Outcome, folder: str) -> tuple[ArtifactRecord, ...]:
    """Write a job's files into `folder` at once (directories replaced whole); the records of
    what was written. Imports no TensorFlow for local folders."""
    import json

    tops: dict[str, dict[str, bytes]] = {}
    for rel, data in outcome.files.items():
        top, _, rest = rel.partition("/")
        tops.setdefault(top, {})[rest] = data
    with storage.Transaction(force=True) as txn:
        for top, files in sorted(tops.items()):
            final = storage.join(folder, top)
            if list(files) == [""]:
                txn.put(final, files[""])
                continue
            (tmp,) = txn.workdir([final])
            for rest, data in files.items():
                path = os.path.join(tmp, *rest.split("/"))
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "wb") as f:
                    f.write(data)
        txn.commit()
    records = []
    for target, name, sidecar_name in outcome.written:
        sidecar = json.loads(outcome.files[sidecar_name])
        records.append(ArtifactRecord(target, storage.join(folder, name), sidecar["sha256"],
                                      sidecar["bytes"], storage.join(folder, sidecar_name),
                                      sidecar))
    return tuple(records)
