"""What a batch run reports: one JobResult per job, and the Report of a whole run."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

OK, CACHED, FAILED, NOT_RUN, TIMED_OUT = "ok", "cached", "failed", "not-run", "timed-out"
OVER_BUDGET = "over-budget"  # made its artifacts, but broke a --fail-on budget (exit 8)
STATUSES = (OK, CACHED, FAILED, TIMED_OUT, NOT_RUN, OVER_BUDGET)
UNSUCCESSFUL = (FAILED, TIMED_OUT, NOT_RUN)  # made no (or not all) artifacts: exit 7
SUITE = "graphfreeze batch"


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
    peak_memory: int | None = None  # the worker's peak RSS during the job, bytes
    began: float | None = None  # when the worker began it (epoch seconds)

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
    details: dict | None = None  # e.g. where a failed verification diverged; broken budgets
    made_seconds: float | None = None  # a cached job: the time it took when it was made
    source_bytes: int | None = None  # the files its source's load reads (a local source)
    memory_estimate: int | None = None  # bytes it was expected to peak at (batch/memory.py)
    peak_memory: int | None = None  # its worker's peak RSS, bytes
    began: float | None = None  # when its worker began it (epoch seconds)

    @property
    def budget(self) -> list[dict]:
        """The budgets it broke: [{"target", "rule", "reason"}] (over-budget jobs)."""
        return list((self.details or {}).get("budget") or [])

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
    run: dict = field(default_factory=dict)  # started, manifest, graphfreeze, tensorflow
    baseline: dict | None = None  # the comparison with --baseline (baseline.compare)

    @property
    def failed(self) -> list[JobResult]:
        return [j for j in self.jobs if j.status in UNSUCCESSFUL]

    @property
    def over_budget(self) -> list[JobResult]:
        return [j for j in self.jobs if j.status == OVER_BUDGET]

    def counts(self) -> dict[str, int]:
        """Jobs per status (over-budget only when a job is)."""
        counts = {s: sum(j.status == s for j in self.jobs) for s in STATUSES}
        if not counts[OVER_BUDGET]:
            del counts[OVER_BUDGET]
        return counts

    def as_json(self) -> dict:
        data = {"schema_version": self.schema_version, "seconds": round(self.seconds, 3),
                "shard": self.shard, "skipped": self.skipped, "interrupted": self.interrupted,
                "counts": self.counts(), "jobs": [j.as_json() for j in self.jobs]}
        if self.over_budget:  # what to act on, near the top (keys are sorted)
            data["budgets_broken"] = [{"name": j.name, **b} for j in self.over_budget
                                      for b in j.budget]
        if self.run:
            data["run"] = self.run
        if self.baseline is not None:
            data["baseline"] = self.baseline
        return data


# -- shared by every report (report.py, report_html.py, report_md.py) ----------------------------

def rows(job: JobResult) -> list[tuple[str, ArtifactRecord | None, bool]]:
    """(target, its artifact or None, failed?) for each target the job asked for (plus any
    artifact of a target not asked for). A failed job fails the targets it made no artifact
    for -- all of them if it made one for each; a job with no targets at all gets one row "-"."""
    made = {a.target: a for a in reversed(job.artifacts)}  # the first artifact of a target wins
    targets = list(dict.fromkeys([*job.targets, *made])) or ["-"]
    missing = [t for t in targets if t not in made]
    failing = set(missing or targets) if job.status in UNSUCCESSFUL else set()
    if job.status == OVER_BUDGET:  # the targets whose budget broke
        failing = {b["target"] for b in job.budget} & set(targets) or set(targets)
    return [(t, made.get(t), t in failing) for t in targets]


def gpu_lines(report: Report) -> list[tuple[str, str, str]]:
    """(job, target, GPU delegate coverage line) of every artifact whose sidecar has one."""
    return [(job.name, a.target, a.sidecar["gpu"]["line"]) for job in report.jobs
            for a in job.artifacts if isinstance((a.sidecar or {}).get("gpu"), dict)]


def one_line(text: str | None) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0].strip() if lines else "unknown error"


def duration(seconds: float) -> str:
    """`12 s`, `1.9 s`, `0.04 s`: a short job is not shown as 0.0 s."""
    if seconds >= 10:
        return f"{seconds:.0f} s"
    if seconds >= 0.1 or seconds == 0:
        return f"{seconds:.1f} s"
    return f"{seconds:.2f} s" if seconds >= 0.01 else "<0.01 s"


def job_time(job: JobResult) -> str:
    """A job's time as the reports show it: a cached job's is the time it took when it was made
    (`1.9 s (cached)`), its read from the cache took next to nothing."""
    if job.made_seconds is not None:  # (an over-budget job may come from the cache too)
        return f"{duration(job.made_seconds)} (cached)"
    return duration(job.seconds)


def job_memory(job: JobResult) -> str:
    """`peak 712 MB (est. 800 MB)` of a job that ran; "" of one that did not."""
    from graphfreeze.batch.memory import shown

    peak = f"peak {shown(job.peak_memory)}" if job.peak_memory else ""
    est = f"est. {shown(job.memory_estimate)}" if job.memory_estimate else ""
    return f"{peak} ({est})" if peak and est else peak or est


def title(report: Report) -> str:
    """What the report is of: `graphfreeze batch`, or the run's own (`freeze --report`)."""
    return report.run.get("title", SUITE)


def summary_line(report: Report) -> str:
    """`3 ok, 1 cached, 1 failed in 12.3 s (shard 1/4, 6 jobs in other shards)`; timed-out and
    not-run jobs are counted when there are any."""
    counts = report.counts()
    shown = [s for s in counts if counts[s] or s in (OK, CACHED, FAILED)]
    text = ", ".join(f"{counts[s]} {s}" for s in shown) + f" in {report.seconds:.1f} s"
    extra = [f"shard {report.shard}"] if report.shard else []
    if report.skipped:
        extra.append(f"{report.skipped} job{'s' * (report.skipped != 1)} in other shards")
    if report.interrupted:
        extra.append("interrupted")
    return text + (f" ({', '.join(extra)})" if extra else "")
