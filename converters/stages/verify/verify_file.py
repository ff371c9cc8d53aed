"""`freeze verify ARTIFACT --golden DIR`: an artifact written earlier (on another machine, with
another TensorFlow, last month) run in its own format's runtime on the golden inputs and judged
against the golden outputs by its target's verification, without the original model."""

from __future__ import annotations

from graphfreeze.errors import ConfigError, InputError, RunError, VerificationError, install_hint
from graphfreeze.io import storage
from graphfreeze.io.trees import artifact_digest
from graphfreeze.options import flag_of, parse_options
from graphfreeze.sidecar import read
from graphfreeze.state import Artifact
from graphfreeze.tensors import infos


def check_digest(path: str, parts: list[str], recorded: str | None) -> None:
    """The artifact's files are there and are those its sidecar's sha256 covers."""
    missing = [p for p in parts if not storage.exists(p)]
    if missing:
        raise InputError(f"{path}: {storage.basename(missing[0])} is missing; the artifact is "
                         f"{' + '.join(storage.basename(p) for p in parts)}: copy them together")
    digest, _ = artifact_digest(parts)
    if recorded is not None and digest != recorded:
        files = f" ({' + '.join(storage.basename(p) for p in parts)})" if len(parts) > 1 else ""
        raise InputError(f"{path}: its bytes{files} are not those its sidecar records (sha256 "
                         f"{digest[:12]}, sidecar "
                         f"{recorded[:12]}); the file was changed after it was written")


def _bounds(path: str, bounds, outputs) -> dict | None:
    """The sidecar's {output: [low, high]} (its op's own range, judge.BOUNDED_OPS: the sidecar
    is untrusted, so no range wider than those); InputError when it is anything else."""
    from graphfreeze.stages.verify.judge import BOUNDED_OPS

    names = {o.name for o in outputs}
    ranges = [list(r) for r in BOUNDED_OPS.values()]
    if bounds is None or isinstance(bounds, dict) and all(
            k in names and v in ranges and all(type(x) in (int, float) for x in v)
            for k, v in bounds.items()):
        return bounds
    raise InputError(f"{path}.json: the sidecar's 'bounds' is not [low, high]; convert the model "
                     "again")


def verify_file(path: str, golden_dir: str, registry, stage_options: dict) -> dict:
    """The verification report of the artifact at `path` against `golden_dir`; a
    VerificationError (nothing changed) when it fails."""
    from graphfreeze.data import golden
    from graphfreeze.stages.verify import judge
    from graphfreeze.stages.verify.options import VerifyOptions
    from graphfreeze.stages.verify.reference import Reference, rows_per_run
    from graphfreeze.stages.verify.stage import computed_in_float16, learned_quantization, verdict

    if not storage.exists(path):
        raise InputError(f"{path}: not found; give an artifact graphfreeze wrote")
    sidecar = read(path)
    try:
        target = registry.target(sidecar["target"])
    except ConfigError as err:
        raise ConfigError(f"{path}.json: {err}") from err
    # the format of the target's last export stage: the one the artifact was written as (web's
    # export_web takes export_onnx's .onnx)
    formats = [f for u in target.stages if (f := registry.format_of(u.use)) is not None]
    fmt = formats[-1] if formats else None
    if fmt is None:
        raise ConfigError(f"target '{target.name}' has no format that can run {path}")
    if fmt.missing():
        raise ConfigError(f"{path}: the {fmt.name} format needs {', '.join(fmt.missing())}, not "
                          f"installed; {install_hint(fmt.extra)}")
    if not any(u.use == "verify" for u in target.stages):  # (litert-lm: by the tokens it makes)
        raise ConfigError(f"{path}: a {target.name} artifact is not judged on golden outputs "
                          "(it was verified by generation when written); run it with `freeze "
                          f"generate {storage.basename(path)} --prompt-ids ...`")
    use = next((u.options for u in target.stages if u.use == "verify"), {})
    options = parse_options(VerifyOptions, {**use, **stage_options}, f"target '{target.name}'",
                            lambda name: flag_of(VerifyOptions, name) if name in stage_options
                            else name)
    check_digest(path, fmt.parts(path), sidecar.get("sha256"))
    inputs, outputs = infos(sidecar["inputs"]), infos(sidecar["outputs"])
    feeds, expected, labels = golden.load(golden_dir, inputs, outputs)
    facts = {k: sidecar[k] for k in ("quantization",) if k in sidecar}
    artifact = Artifact(path=path, sha256=sidecar.get("sha256", ""), size=sidecar.get("bytes", 0),
                        format=fmt, inputs=inputs, outputs=outputs, facts=facts)
    options = computed_in_float16(sidecar, learned_quantization(artifact, options))
    where = f"the golden inputs in {golden_dir}"
    ref = Reference(feeds, expected, labels, None, where,
                    rows_per_run(inputs, feeds, options.rows_per_run, where))
    judge.original_is_finite(outputs, expected, where, "save golden outputs again, from "
                             "inputs the original computes finite outputs on")
    try:
        recorded = sidecar.get("verification") or {}
        report = verdict(artifact, ref, options, fmt.open(path, inputs, outputs, untrusted=True),
                         detections=frozenset(recorded.get("detections", ())),
                         bounds=_bounds(path, recorded.get("bounds"), outputs))
    except RunError as err:
        raise InputError(f"{path}: {err}; the file is not the artifact its sidecar describes, "
                         f"or not one this machine's {fmt.name} runtime runs") from err
    if not report["passed"]:
        raise VerificationError(f"{path}: {report['failure']} against the golden outputs in "
                                f"{golden_dir}; loosen --tolerance or convert the model again")
    return {"target": target.name, "format": fmt.name, **report}
