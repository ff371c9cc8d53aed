"""Keras layer names, as the user knows them (`Conv1`, `block/Conv1`), matched against the names
TensorFlow gave the layer's ops in a frozen graph, or TFLite's fused names of them.

A layer's ops are in a name scope named after it: tf_keras and its SavedModels write
`model/Conv1/Conv2D` (`StatefulPartitionedCall/model/Conv1/Conv2D`). Keras 3 opens a layer's
scope twice per call (to build, then to call), so TensorFlow renames the second, where the ops
are, `NAME_N`: `functional_1/Conv1_1/convolution`; and a layer `conv2d_1`'s ops are in
`conv2d_1_2/` while `conv2d_1/` holds layer `conv2d`'s. Which Keras named the graph is the
source's to say (its notes' `keras`: "keras" for Keras 3, "tf_keras"); where it cannot, the
scopes beside the match decide: under a Keras 3 model every layer's scope ends in `_N`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_NUMBERED = re.compile(r".+_\d+")


def layer_members(names: Iterable[str], layer: str, keras: str | None = None) -> list[str]:
    """The `names` (node names, or parts of TFLite's fused names) inside Keras layer `layer`'s
    scope (a layer name, or a path of nested ones), in the order given; `keras` the Keras that
    named them ("keras", "tf_keras" or None: unknown)."""
    names = list(names)
    wanted = [p for p in layer.strip("/").split("/") if p]
    exact, renamed = {}, {}  # name -> the scope holding the layer's scope
    for name in names if wanted else ():
        scopes = name.split("/")[:-1]
        for i in range(len(scopes) - len(wanted) + 1):
            run = scopes[i:i + len(wanted)]
            if run == wanted:
                exact.setdefault(name, "/".join(scopes[:i]))
            elif all(re.fullmatch(re.escape(w) + r"_\d+", s) for w, s in zip(wanted, run,
                                                                            strict=True)):
                renamed.setdefault(name, "/".join(scopes[:i]))
    if not exact and not renamed:
        return []
    if keras is None:
        parent = next(iter({**renamed, **exact}.values()))
        keras = "keras" if all(_NUMBERED.fullmatch(s) for s in _child_scopes(names, parent)) \
            else "tf_keras"
    return list(renamed if keras == "keras" else exact)


def _child_scopes(names: list[str], parent: str) -> set[str]:
    """The scopes directly inside `parent` ("" for the top)."""
    prefix = f"{parent}/" if parent else ""
    found = set()
    for name in names:
        if name.startswith(prefix):
            parts = name[len(prefix):].split("/")
            if len(parts) > 1:
                found.add(parts[0])
    return found
