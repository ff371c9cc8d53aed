"""`--baseline PATH`: this run against a previous report.json (local or gs://), per model and
target: size, node count (and op types), max/mean |diff|, top-1 accuracy (labelled
--verify-data) and latency (--benchmark) when the sidecars have them; new and removed models
and targets. What changed beyond noise is marked `significant` (NOISE) and shown first.

Read with graphfreeze.io.storage; no TensorFlow. A baseline of another schema version, manifest,
shard or TensorFlow is compared as far as it goes, with a note saying what differs.
"""

from __future__ import annotations

import json

from graphfreeze.errors import ConfigError, GraphFreezeError
from graphfreeze.io import storage

METRICS = ("size", "ops", "top1", "latency", "max_diff", "mean_diff")
LOWER_IS_BETTER = {"size", "ops", "latency", "max_diff", "mean_diff"}  # top1: higher is better
# changes within these are noise: (absolute, relative); artifacts are deterministic, so any
# byte or node counts, while |diff|s move a little with the TensorFlow build and latency a lot
NOISE = {"size": (0, 0), "ops": (0, 0), "top1": (1e-9, 0), "latency": (0, 0.10),
         "max_diff": (1e-7, 0.10), "mean_diff": (1e-8, 0.10)}


def load(path: str) -> dict:
    """A report.json of an earlier run; one-line ConfigError (exit 6) if it is missing or is
    not one, said before any work."""
    try:
        if not storage.exists(path):
            raise ConfigError(f"--baseline {path}: no such file; give the report.json of an "
                              "earlier `freeze batch` run")
        data = json.loads(storage.read_bytes(path))
    except GraphFreezeError as err:
        raise ConfigError(str(err) if isinstance(err, ConfigError) else
                          f"--baseline {path}: cannot read it ({err})") from err
    except (ValueError, UnicodeDecodeError) as err:
        raise ConfigError(f"--baseline {path}: not JSON ({err}); give the report.json of an "
                          "earlier `freeze batch` run") from err
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), list):
        raise ConfigError(f"--baseline {path}: not a `freeze batch` report.json (no jobs list)")
    return data


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value) -> list | tuple:
    return value if isinstance(value, list | tuple) else []


def metrics(artifact: dict) -> dict:
    """The comparable figures of one artifact record of report.json (anything of the wrong
    shape in it is left out, never trusted)."""
    car = _dict(artifact.get("sidecar"))
    out: dict = {}
    if _number(artifact.get("bytes")):
        out["size"] = artifact["bytes"]
    ops = car.get("op_counts") if isinstance(car.get("op_counts"), dict) else None
    if _number(car.get("node_count")):
        out["ops"] = car["node_count"]
    elif ops:
        out["ops"] = sum(v for v in ops.values() if _number(v))
    verification = _dict(car.get("verification"))
    per_output = [m for m in _dict(verification.get("metrics")).values() if isinstance(m, dict)]
    for key, name in (("max_abs_diff", "max_diff"), ("mean_abs_diff", "mean_diff")):
        values = [m[key] for m in per_output if _number(m.get(key))]
        if not values and key == "max_abs_diff":  # older sidecars: {"output": diff}
            values = [v for v in _dict(verification.get(key)).values() if _number(v)]
        if values:
            out[name] = max(values)
    accuracy = verification.get("accuracy")
    if isinstance(accuracy, dict) and _number(accuracy.get("artifact")):
        out["top1"] = accuracy["artifact"]
    latency = car.get("latency")
    if isinstance(latency, dict) and _number(latency.get("median_ms")):
        out["latency"] = latency["median_ms"]
    return out


def _number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def index(report: dict) -> dict:
    """job name -> {"status", "targets", "artifacts": target -> artifact record}."""
    jobs = {}
    for job in _list(report.get("jobs")):
        if not isinstance(job, dict) or not isinstance(job.get("name"), str):
            continue
        made = {}
        for a in _list(job.get("artifacts")):
            if isinstance(a, dict) and isinstance(a.get("target"), str):
                made.setdefault(a["target"], a)
        targets = [t for t in _list(job.get("targets")) if isinstance(t, str)]
        status = job.get("status") if isinstance(job.get("status"), str) else None
        jobs[job["name"]] = {"status": status, "artifacts": made,
                             "targets": list(dict.fromkeys([*targets, *made]))}
    return jobs


def job_deltas(base: dict, job: dict) -> dict:
    """target -> metric -> (before, after) for the targets of `job` (report.json's form) that
    the baseline `index` has an artifact of."""
    old = base.get(job["name"])
    out = {}
    for a in job.get("artifacts") or []:
        before = old["artifacts"].get(a["target"]) if old else None
        if before is None:
            continue
        now, then = metrics(a), metrics(before)
        out[a["target"]] = {m: (then[m], now[m]) for m in METRICS if m in now and m in then}
    return out


def significant(metric: str, before: float, after: float) -> bool:
    absolute, relative = NOISE[metric]
    change = abs(after - before)
    return change > absolute and change > relative * abs(before)


def notes(base: dict, now: dict, path: str) -> list[str]:
    """What differs between the two runs beyond the models: schema, manifest, shard, versions."""
    out = []
    if base.get("schema_version") != now.get("schema_version"):
        out.append(f"the baseline {path} has schema_version {base.get('schema_version')!r}, this "
                   f"report {now.get('schema_version')}: compared the fields both have")
    then, run = base.get("run") if isinstance(base.get("run"), dict) else {}, now.get("run") or {}
    for key, what in (("manifest", "manifest"), ("graphfreeze", "graphfreeze"),
                      ("tensorflow", "TensorFlow")):
        if then.get(key) and run.get(key) and then[key] != run[key]:
            out.append(f"{what} {then[key]} in the baseline, {run[key]} now")
    if base.get("shard") != now.get("shard"):
        out.append(f"shard {base.get('shard') or 'all'} in the baseline, "
                   f"{now.get('shard') or 'all'} now: models of other shards are not listed")
    return out


def compare(now: dict, base: dict, path: str) -> dict:
    """The `baseline` section of report.json: `now` and `base` are report.json dicts."""
    from graphfreeze.batch.shards import in_shard, parse_shard

    old, new_index = index(base), index(now)
    shard = parse_shard(now["shard"]) if now.get("shard") else None
    changes, new, removed, statuses = [], [], [], []
    for name, job in new_index.items():
        if name not in old:
            new.append(name)
            continue
        then = old[name]
        if then["status"] != job["status"] and job["status"] != "over-budget" and \
                {then["status"], job["status"]} - {"ok", "cached"}:
            statuses.append({"name": name, "before": then["status"], "after": job["status"]})
        new += [f"{name}/{t}" for t in job["targets"] if t not in then["targets"]]
        removed += [f"{name}/{t}" for t in then["targets"] if t not in job["targets"]]
        for target, pair in job_deltas(old, {"name": name, "artifacts": list(
                job["artifacts"].values())}).items():
            entry = {"name": name, "target": target, "metrics": {}}
            for metric, (before, after) in pair.items():
                entry["metrics"][metric] = {
                    "before": before, "after": after, "change": after - before,
                    "relative": (after - before) / abs(before) if before else None,
                    "significant": significant(metric, before, after)}
            ops = _op_changes(then["artifacts"][target], job["artifacts"][target])
            if ops:
                entry["op_types"] = ops
            entry["significant"] = any(m["significant"] for m in entry["metrics"].values())
            changes.append(entry)
    removed += [n for n in old if n not in new_index and (shard is None or in_shard(n, shard))]
    changes.sort(key=lambda c: not c["significant"])  # stable: the report's order within
    return {"path": path, "notes": notes(base, now, path), "compared": len(changes),
            "significant": sum(c["significant"] for c in changes), "changes": changes,
            "new": new, "removed": removed, "status_changes": statuses}


def _op_changes(before: dict, after: dict) -> dict:
    """op type -> change in count, for the types whose count changed."""
    then = _dict(_dict(before.get("sidecar")).get("op_counts"))
    now = _dict(_dict(after.get("sidecar")).get("op_counts"))
    return {op: int(now.get(op, 0) - then.get(op, 0)) for op in sorted({*then, *now})
            if _number(now.get(op, 0)) and _number(then.get(op, 0))
            and now.get(op, 0) != then.get(op, 0)}


# -- formatting, shared by the terminal, report.html and report.md ------------------------------

def fmt_value(metric: str, value) -> str:
    if value is None:
        return ""
    if metric == "size":
        return size(value)
    if metric == "ops":
        return f"{value:g}"
    if metric == "top1":
        return f"{value:.2%}"
    if metric == "latency":
        return f"{value:.3g} ms"
    return f"{value:.3g}"


def size(n) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1024 or unit == "GB":
            return f"{n:g} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return ""  # unreachable


def mark(entry: dict) -> str:
    """▲ up or ▼ down, "=" when unchanged."""
    change = entry["change"]
    return "=" if change == 0 else "▲" if change > 0 else "▼"


def worse(metric: str, entry: dict) -> bool:
    change = entry["change"]
    return change > 0 if metric in LOWER_IS_BETTER else change < 0


def fmt_change(metric: str, entry: dict) -> str:
    """`▲ +36 B (+1.3%)`, `▼ -0.50 pp`, `▲ +2`, `▲ +12% (3.1 ms -> 3.5 ms)`."""
    change, relative = entry["change"], entry["relative"]
    pct = f" ({relative:+.1%})" if relative is not None and change else ""
    if metric == "size":
        text = f"{'+' if change >= 0 else '-'}{size(abs(change))}{pct}"
    elif metric == "ops":
        text = f"{change:+g}{pct}"
    elif metric == "top1":
        text = f"{change * 100:+.2f} pp ({fmt_value(metric, entry['after'])})"
    else:
        text = (f"{relative:+.1%} " if relative is not None else "") + \
            f"({fmt_value(metric, entry['before'])} -> {fmt_value(metric, entry['after'])})"
    return f"{mark(entry)} {text}"
