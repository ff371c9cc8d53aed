"""Jobs: a manifest entry made a convert Request and prepared (checked, no TensorFlow), and the
share of them one CI machine takes (`--shard K/N`)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from graphfreeze.batch.manifest import JobSpec
from graphfreeze.convert import Prepared, Request, prepare
from graphfreeze.errors import ConfigError, GraphFreezeError
from graphfreeze.io import storage


@dataclass(frozen=True)
class Job:
    spec: JobSpec
    prepared: Prepared

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def request(self) -> Request:
        return self.prepared.request

    @property
    def folder(self) -> str:
        return storage.join(self.spec.options.out_dir, self.spec.name)


def request_for(spec: JobSpec) -> Request:
    """What `freeze SOURCE ...` with the spec's options asks for, writing into
    {out_dir}/{name}/."""
    o = spec.options
    return Request(source=spec.source, kind=o.kind, source_options=dict(o.source_options or {}),
                   unsafe=o.unsafe, outputs=o.outputs, inputs=o.inputs, targets=o.targets,
                   output=storage.join(o.out_dir, spec.name) + "/", force=o.force,
                   verify=o.verify, stage_options=dict(o.stage_options or {}),
                   target_options=dict(o.target_options or {}))


def prepare_jobs(specs: list[JobSpec], registry) -> list[Job]:
    """Every job prepared (targets, options, source kind, output paths): one ConfigError naming
    where the job was declared if any is wrong, or if two jobs would write one path."""
    jobs, owners = [], {}
    for spec in specs:
        try:
            prepared = prepare(request_for(spec), registry)
        except GraphFreezeError as err:
            raise ConfigError(f"{spec.where}: {spec.name}: {err}") from err
        for path in [*prepared.paths.values(), *prepared.sidecars.values()]:
            path = path if storage.is_remote(path) else os.path.abspath(path)
            if path in owners:
                raise ConfigError(f"{spec.where}: {spec.name} writes {path}, as {owners[path]} "
                                  "does; give the jobs different names or out_dir")
            owners[path] = f"{spec.name} ({spec.where})"
        jobs.append(Job(spec, prepared))
    return jobs
