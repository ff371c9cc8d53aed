"""`freeze verify ARTIFACT --golden DIR`: an artifact written earlier (on another machine, with
another TensorFlow, last month) run in its own format's runtime on the golden inputs and judged
against the golden outputs by its target's verification, without the original model."""

from __future__ import annotations

import hashlib
import json

from graphfreeze.errors import ConfigError, InputError, VerificationError
from graphfreeze.io import storage
from graphfreeze.options import flag_of, parse_options
from graphfreeze.state import Artifact
from graphfreeze.tensors import TensorInfo


def _infos(entries: list[dict]) -> tuple[TensorInfo, ...]:
    return tuple(TensorInfo(e["name"], e["dtype"], None if e["shape"] is None
                            else tuple(e["shape"])) for e in entries)


def read_sidecar(path: str) -> dict:
    where = f"{path}.json"
    if not storage.exists(where):
        raise InputError(f"{path}: no sidecar {where}; verify needs the sidecar graphfreeze wrote "
                         "beside the artifact (it names the inputs, outputs and target)")
    try:
        sidecar = json.loads(storage.read_bytes(where))
    except ValueError as err:
        raise InputError(f"{where}: not JSON ({err}); convert the model again") from err
    missing = [k for k in ("target", "inputs", "outputs") if not isinstance(sidecar, dict)
               or k not in sidecar]
    if missing:
        raise InputError(f"{where}: not a graphfreeze sidecar (no {', '.join(missing)}); "
                         "convert the model again")
    return sidecar


def verify_file(path: str, golden_dir: str, registry, overrides: dict) -> dict:
    """The verification report of the artifact at `path` against `golden_dir`; a
    VerificationError (nothing changed) when it fails."""
    from graphfreeze.data import golden
    from graphfreeze.stages.verify import judge
    from graphfreeze.stages.verify.options import VerifyOptions
    from graphfreeze.stages.verify.reference import Reference
    from graphfreeze.stages.verify.stage import learned_quantization, verdict

    if not storage.exists(path):
        raise InputError(f"{path}: not found; give an artifact graphfreeze wrote")
    sidecar = read_sidecar(path)
    target = registry.target(sidecar["target"])
    fmt = next((registry.format_of(u.use) for u in target.stages if registry.format_of(u.use)),
               None)
    if fmt is None:
        raise ConfigError(f"target '{target.name}' has no format that can run {path}")
    if fmt.missing():
        raise ConfigError(f"{path}: the {fmt.name} format needs {', '.join(fmt.missing())}, not "
                          f"installed; pip install 'graphfreeze[{fmt.extra}]'")
    use = next((u.options for u in target.stages if u.use == "verify"), {})
    options = parse_options(VerifyOptions, {**use, **overrides}, f"target '{target.name}'",
                            lambda name: flag_of(VerifyOptions, name) if name in overrides
                            else name)
    if not storage.isdir(path):
        digest = hashlib.sha256(storage.read_bytes(path)).hexdigest()
        if digest != sidecar.get("sha256", digest):
            raise InputError(f"{path}: its bytes are not those its sidecar records (sha256 "
                             f"{digest[:12]}, sidecar {sidecar['sha256'][:12]}); the file was "
                             "changed after it was written")
    inputs, outputs = _infos(sidecar["inputs"]), _infos(sidecar["outputs"])
    feeds, expected, labels = golden.load(golden_dir, inputs, outputs)
    facts = {k: sidecar[k] for k in ("quantization",) if k in sidecar}
    artifact = Artifact(path=path, sha256=sidecar.get("sha256", ""), size=sidecar.get("bytes", 0),
                        format=fmt.name, inputs=inputs, outputs=outputs, facts=facts,
                        run=fmt.runtime(path, inputs, outputs))
    options = learned_quantization(artifact, options)
    where = f"the golden inputs in {golden_dir}"
    ref = Reference(feeds, expected, labels, None, where)
    judge.original_is_finite(outputs, expected, where)
    report = verdict(artifact, ref, options)
    if not report["passed"]:
        raise VerificationError(f"{path}: {report['failure']} against the golden outputs in "
                                f"{golden_dir}; loosen --tolerance or convert the model again")
    return {"target": target.name, "format": fmt.name, **report}
