"""What a batch run reports: one JobResult per job, and the Report of a whole run."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

OK, CACHED, FAILED = "ok", "cached", "failed"


@dataclass(frozen=True)
class ArtifactRecord:
    """One artifact a job made: where it went and what its sidecar says."""

    target: str
    path: str  # the artifact (a file, or a directory for SavedModels)
    sha256: str
    bytes: int
    sidecar_path: str
    sidecar: dict  # the sidecar's JSON (format, node_count, verification, ...)


@dataclass(frozen=True)
class JobResult:
    name: str
    source: str
    targets: tuple[str, ...]
    status: str  # OK | CACHED | FAILED
    seconds: float
    artifacts: tuple[ArtifactRecord, ...] = ()
    error: str | None = None  # the one-line error of a failed job
    exit_code: int = 0  # what `freeze` alone would have exited with
    attempts: int = 1
    details: dict | None = None  # e.g. where a failed verification diverged

    def as_json(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Report:
    jobs: tuple[JobResult, ...]
    seconds: float
    shard: str | None = None  # "K/N"
    skipped: int = 0  # jobs of other shards
    interrupted: bool = False
    schema_version: int = 1
    extra: dict = field(default_factory=dict)

    @property
    def failed(self) -> list[JobResult]:
        return [j for j in self.jobs if j.status == FAILED]

    def counts(self) -> dict[str, int]:
        return {s: sum(j.status == s for j in self.jobs) for s in (OK, CACHED, FAILED)}

    def as_json(self) -> dict:
        return {"schema_version": self.schema_version, "seconds": round(self.seconds, 3),
                "shard": self.shard, "skipped": self.skipped, "interrupted": self.interrupted,
                "counts": self.counts(), "jobs": [j.as_json() for j in self.jobs]}
