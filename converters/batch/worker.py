"""One job, run where a worker runs it (a local worker process or a Ray task): converted into a
private staging folder, its files sent back as bytes; and their commit on the driver."""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import time

from graphfreeze.batch.cache import Outcome
from graphfreeze.batch.results import FAILED, OK, ArtifactRecord, JobOutcome
from graphfreeze.io import storage


def convert_job(prepared, cwd: str) -> JobOutcome:
    """Execute the driver's plan `prepared` (its paths relative to `cwd`) into a staging folder:
    a JobOutcome (ok with the files, or failed with one line), with when it began and the
    worker's peak RSS during it. Runs in the worker; never raises."""
    from graphfreeze.batch import memory
    from graphfreeze.process.memory import release

    began = time.time()
    release()  # (what an earlier job freed, the files it sent included, back to the system)
    memory.reset_peak()  # (a worker converts many jobs: this one's peak, not the worker's)
    outcome = _converted(prepared, cwd)
    return dataclasses.replace(outcome, peak_memory=memory.peak(), began=began)


def _converted(prepared, cwd: str) -> JobOutcome:
    from graphfreeze.convert import execute
    from graphfreeze.errors import GraphFreezeError, first_line

    start = time.monotonic()
    staging = tempfile.mkdtemp(prefix="graphfreeze-job-")
    request = prepared.request
    try:
        if cwd and os.path.isdir(cwd):
            os.chdir(cwd)
        written = execute(staged(prepared, staging))
        files = {}
        for full, rel in storage.tree_files(staging):
            with open(full, "rb") as f:
                files[rel] = f.read()
        made = Outcome(files, [(w.target, storage.basename(w.path),
                                storage.basename(w.sidecar_path)) for w in written])
        return JobOutcome(OK, time.monotonic() - start, files=made)
    except GraphFreezeError as err:
        divergence = getattr(err, "divergence", None)
        text = str(err).replace(staging + "/", request.output or "")  # where it would have gone
        return JobOutcome(FAILED, time.monotonic() - start, error=text, exit_code=err.exit_code,
                          details={"divergence": divergence} if divergence else None)
    except Exception as err:  # noqa: BLE001 -- a bug of ours: reported, the batch goes on
        return JobOutcome(FAILED, time.monotonic() - start, exit_code=1,
                          error=f"internal error: {type(err).__name__}: {first_line(err)}")
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def staged(prepared, staging: str):
    """`prepared` writing into `staging` (forced) instead of its output folder."""

    def moved(paths: dict) -> dict:
        return {t: os.path.join(staging, storage.basename(p)) for t, p in paths.items()}

    request = dataclasses.replace(prepared.request, output=staging + "/", force=True)
    return dataclasses.replace(prepared, request=request, paths=moved(prepared.paths),
                               sidecars=moved(prepared.sidecars))


def shippable(prepared):
    """The plan as sent to a worker (the registry stays with the driver: the plan has resolved
    every name), or a one-line ConfigError when a plugin's object cannot be pickled."""
    import pickle

    from graphfreeze.errors import ConfigError

    plan = dataclasses.replace(prepared, registry=None)
    try:
        pickle.dumps(plan)
    except Exception as err:  # noqa: BLE001 -- pickle raises many kinds
        raise ConfigError(f"the plan cannot be sent to a worker process ({type(err).__name__}: "
                          f"{err}); define plugin stages, passes and sources at module level") from err
    return plan


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
