"""A batch job's name: the one its [[model]] gives, or the source's last path parts, as few as
make it unique; never a report's file name in out_dir."""

from __future__ import annotations

import dataclasses
import re

from graphfreeze.errors import ConfigError

_SUFFIX = re.compile(r"(\.(keras|h5|hdf5|pb|pbtxt|index|meta))$")


# the reports `freeze batch` writes into out_dir (batch/report.py): no job may take their names
FILES = {"json": "report.json", "junit": "junit.xml", "html": "report.html", "md": "report.md"}


def named(specs: list, folder: str) -> list:
    """Each spec (manifest.JobSpec) with a unique name: the one given, or the source's last path
    parts (as few as make it unique). Two jobs with one name are a ConfigError."""
    parts = {}
    for spec in specs:
        rel = spec.source
        if folder and rel.startswith(folder.rstrip("/") + "/"):
            rel = rel[len(folder.rstrip("/")) + 1:]
        parts[id(spec)] = [p for p in _SUFFIX.sub("", rel.rstrip("/")).split("/")
                           if p not in ("", ".", "..")] or ["model"]
    depth = {id(s): 1 for s in specs}
    for _ in range(32):
        names = {id(s): s.name or "-".join(parts[id(s)][-depth[id(s)]:]) for s in specs}
        clashes = {n for n in names.values() if list(names.values()).count(n) > 1}
        grow = [s for s in specs if not s.name and names[id(s)] in clashes
                and depth[id(s)] < len(parts[id(s)])]
        if not grow:
            break
        for s in grow:
            depth[id(s)] += 1
    clashing = [n for n in names.values() if list(names.values()).count(n) > 1]
    for spec in specs:  # still the same at every depth (model.keras, model.h5): keep the suffix
        if not spec.name and names[id(spec)] in clashing:
            names[id(spec)] += "_" + (_SUFFIX.search(spec.source.rstrip("/")) or
                                      re.search(r"$", "")).group(0).lstrip(".")
    result, seen = [], {}
    for spec in specs:
        name = re.sub(r"[^A-Za-z0-9._-]", "_", names[id(spec)].rstrip("_"))
        if not name.strip("."):
            raise ConfigError(f"{spec.where}: job name '{name}' would write outside out_dir; "
                              "give the [[model]] a name with a letter or digit")
        if name.lower() in FILES.values():  # its folder would take a report's place
            raise ConfigError(f"{spec.where}: job name '{name}' is a report's file name in "
                              "out_dir; give the [[model]] another name")
        if name in seen:
            fix = "give each [[model]] a unique name" if spec.where != "command line" else \
                "give each model once, or a manifest that names them"
            raise ConfigError(f"{spec.where}: job name '{name}' is also used at {seen[name]}; "
                              + fix)
        seen[name] = spec.where
        result.append(dataclasses.replace(spec, name=name))
    return result
