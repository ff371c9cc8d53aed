"""What a batch run reports: one JobResult per job, and the Report of a whole run."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

OK, CACHED, FAILED, NOT_RUN, TIMED_OUT = "ok", "cached", "failed", "not-run", "timed-out"
STATUSES = (OK, CACHED, FAILED, TIMED_OUT, NOT_RUN)
UNSUCCESSFUL = (FAILED, TIMED_OUT, NOT_RUN)


@dataclass(frozen=True)
class JobOutcome:
    """What an executor hands the driver for one job (from a worker, or said by the executor
    when the worker timed out or died): a status, the job's files (a cache.Outcome) when ok."""

    status: str  # OK | FAILED | TIMED_OUT
    seconds: float = 0.0
    files: object = None  # cache.Outcome: the files and what each target wrote
    error: str | None = None
    exit_code: int = 0
    details: dict | None = None

    @property
    def ok(self) -> bool:
        return self.status == OK

    # Every way a job ends without a worker's answer is said here, once for all executors.
    @classmethod
    def timed_out(cls, limit: float, seconds: float) -> JobOutcome:
        return cls(TIMED_OUT, seconds, error=f"timed out after {limit:g} s (--timeout)",
                   exit_code=3)

    @classmethod
    def crashed(cls, why: str) -> JobOutcome:
        return cls(FAILED, error=f"internal error: the worker converting it died ({why}), twice",
                   exit_code=1)


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
    status: str  # one of STATUSES
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
        return [j for j in self.jobs if j.status in UNSUCCESSFUL]

    def counts(self) -> dict[str, int]:
        return {s: sum(j.status == s for j in self.jobs) for s in STATUSES}

    def as_json(self) -> dict:
        return {"schema_version": self.schema_version, "seconds": round(self.seconds, 3),
                "shard": self.shard, "skipped": self.skipped, "interrupted": self.interrupted,
                "counts": self.counts(), "jobs": [j.as_json() for j in self.jobs]}
