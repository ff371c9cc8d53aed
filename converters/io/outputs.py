"""Where a run's files go (`output_paths`, `beside`) and what is refused before any work: an
output that is or holds a file of the input model, an existing folder where a file goes, and
the checks of `storage.check_writable`."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from graphfreeze.errors import OutputError
from graphfreeze.io import storage

if TYPE_CHECKING:
    from graphfreeze.plan import TargetPlan


def output_paths(out: str | None, plans: list[TargetPlan], stem: str) -> dict[str, str]:
    """Where each target's artifact goes: `out` (-o) for one target, else beside the source (or
    in -o DIR/). A quantized target's file always carries the target's name
    (model.edge-int8.tflite, whatever else the run writes); a float one's only when another
    target of the run writes the same suffix and its name is not the suffix's (tflite, onnx)."""
    if out and storage.is_remote(out) and not out.partition("://")[2].strip("/"):
        raise OutputError(f"{out}: names no bucket; give {out.partition('://')[0]}://BUCKET/PATH")
    if out and len(plans) == 1 and not out.endswith("/"):
        return {plans[0].target.name: out}
    if out and not out.endswith("/") and out.lower().endswith(tuple(p.suffix for p in plans)) \
            and not storage.isdir(out):
        raise OutputError(f"{out}: -o names one artifact, and {len(plans)} targets write one "
                          "each; give a folder (-o DIR/) or one target")
    folder = out.rstrip("/") if out else None
    suffixes = [p.suffix for p in plans]
    paths = {}
    for p in plans:
        plain = p.target.name == p.suffix.lstrip(".")
        named = quantized(p) or suffixes.count(p.suffix) > 1 and not plain
        name = stem + (f".{file_safe(p.target.name)}" if named else "") + p.suffix
        paths[p.target.name] = storage.join(folder, storage.basename(name)) if folder else name
    return paths


def quantized(plan: TargetPlan) -> bool:
    """Whether the target's export quantizes (its options' `quantize`, as the tflite and onnx
    formats name it, is set to something but none; or its `weights`, as litert-lm's, are not
    float32)."""
    return any(getattr(step.options, "quantize", "none") not in ("none", None) or
               getattr(step.options, "weights", "float32") != "float32"
               for step in plan.steps if step.stage.suffix)


def file_safe(name: str) -> str:
    """A target's name as a file name takes it: npu-qualcomm:SM8650 -> npu-qualcomm_SM8650."""
    return re.sub(r"[^\w.+-]", "_", name)


def beside(plans: list[TargetPlan], paths: dict[str, str]) -> list[str]:
    """The files stages write beside each target's artifact (an NPU target's compiled model)."""
    return [extra for p in plans for step in p.steps if step.stage.beside
            for extra in step.stage.beside(paths[p.target.name], step.options)]


def check(plans: list[TargetPlan], paths: dict[str, str], others: list[str], inputs: list[str],
          force: bool, flag: str = "-o", named: dict[str, str] | None = None) -> None:
    """Refuse the artifacts' `paths` and the `others` written with them (sidecars, files beside)
    when one is or holds an input file, when an artifact that is a file would replace an
    existing folder, or as `storage.check_writable` does (`flag`: what named the paths); and the
    files an option of their own `named` ({path: flag}: --report) as well, or where the run
    writes another file."""
    for path, own in (named or {}).items():
        if _real(path) in {_real(p) for p in [*paths.values(), *others]}:
            raise OutputError(f"{path}: the run writes an artifact or sidecar there; choose "
                              f"another {own}")
        check([], {}, [path], inputs, force, own)
    given = dict.fromkeys(_real(p) for p in inputs)  # (in order: the source named first)
    folders = {p.target.name for p in plans if p.folder}
    for path in [*paths.values(), *others]:
        if (real := _real(path)) in given:
            raise OutputError(f"{path}: is a file of the input model; choose another {flag}")
        inside = next((i for i in given if i.startswith(real.rstrip("/") + "/")), None)
        if inside:  # (a folder artifact replaces the folder: the model would go with it)
            raise OutputError(f"{path}: holds the input model ({inside}); choose another {flag}")
    for target, path in paths.items():
        if storage.isdir(path) and not (force and target in folders):
            how = "" if target in folders else ", or remove the folder"
            raise OutputError(f"{path}: already exists (a folder); give -o {path}/ to write into "
                              f"it{how}" + ("" if how else " (--force replaces it)"))
    storage.check_writable([*paths.values(), *others], force, flag)


def _real(path: str) -> str:
    """One spelling per file: local paths resolved (relative, `./`, symlinks), remote as given."""
    return path.rstrip("/") if storage.is_remote(path) else os.path.realpath(path.rstrip("/"))
