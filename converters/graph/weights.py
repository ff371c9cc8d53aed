"""A frozen graph's weights held apart from its GraphDef, from the freeze to the export.

upb (protobuf's Python runtime) frees a message's memory only with the whole message: weights
that a pass replaces (fold_batch_norms' scaled convolution weights) or copies stay in memory as
long as the graph does. So the variables `freeze_variables` reads are held here instead, as
numpy arrays, each freed once no graph node names it: their Const nodes keep their dtype and
shape and an attr (`consts.WEIGHT_ATTR`; refused in a model file: graph/checks/validate)
naming their value. The graph stages read values through `consts.node_value` and make new
ones through `consts.make_const` while the run's `Weights` are `held`; the export streams the
bytes in node by node (`serialize_chunks`: the same bytes); a stage that does not say it takes
them apart (`Stage.weights_apart`) gets the graph with its values put back (`attach`).
"""

from __future__ import annotations

import itertools
import secrets
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
from graphfreeze.graph.consts import HELD, WEIGHT_ATTR, set_tensor, value_bytes
from graphfreeze.graph.graphdefs import copied

_KEYS = itertools.count()  # keys unique in the process: a renamed or copied node keeps its own
_TOKEN = secrets.token_hex(6)  # ... and no file's attr can name one


class Weights:
    """key -> numpy array (read-only) of each Const held apart."""

    def __init__(self, arrays: dict | None = None):
        self.arrays: dict[str, np.ndarray] = dict(arrays or {})
        self.shared = False  # a state a later target starts from holds them: copy, never edit
        self._own: set[str] = set()  # keys whose memory only their array holds (see `own`)

    def hold(self, node, value: np.ndarray, own: bool = False, tensor: bool = True) -> None:
        """Make `node` a Const of `value` held here (its tensor: dtype and shape only; with
        `tensor=False` it has them and is kept as it is); `own`: nothing else holds `value`'s
        memory (a fresh read), so a pass may edit it in place."""
        key = f"{_TOKEN}{next(_KEYS)}"
        value = value.view()
        value.flags.writeable = False
        self.arrays[key] = value
        if own:
            self._own.add(key)
        if tensor:
            set_tensor(node.attr["value"].tensor, value, content=False)
            node.attr["dtype"].type = node.attr["value"].tensor.dtype
        node.attr[WEIGHT_ATTR].s = key.encode()

    def holds(self, node) -> bool:
        """Whether `node`'s held value is here (a key no file can guess: a file's own attr
        of that name is refused by validation)."""
        return _key(node) in self.arrays

    def taken(self, own: bool) -> Weights:
        """These values for a run to hold; `own`: the run is their last reader (a pass may
        edit those these own in place), else it copies what it edits."""
        out = Weights(self.arrays)
        if own:
            out._own = set(self._own)
        return out

    def value(self, node) -> np.ndarray:
        return self.arrays[_key(node)]

    def editable(self, node) -> np.ndarray | None:
        """`node`'s value, writable, for a pass that replaces `node` (its only reader) by a
        Const of the edited value: when these Weights own its memory; else None."""
        key = _key(node) if WEIGHT_ATTR in node.attr else None
        if self.shared or key not in self._own:
            return None
        value = self.arrays[key].view()
        try:
            value.flags.writeable = True
        except ValueError:  # (read-only memory: bytes)
            return None
        self._own.discard(key)  # (the edited value is held under the new node's key)
        return value

    def release(self, node) -> None:
        """`node` is gone from the graph being built: its value may be freed now."""
        if WEIGHT_ATTR in node.attr:
            self.arrays.pop(_key(node), None)

    def owned(self) -> Weights:
        """These, to edit: themselves, or a copy when a kept state holds them too."""
        return Weights(self.arrays) if self.shared else self

    def keep_only(self, graph_def) -> None:
        """Free what no node of `graph_def` names."""
        used = {_key(n) for n in graph_def.node if WEIGHT_ATTR in n.attr}
        for key in set(self.arrays) - used:
            del self.arrays[key]


def _key(node) -> str:
    """The key a held node's value is under (a file's bytes: undecodable ones never match)."""
    return node.attr[WEIGHT_ATTR].s.decode(errors="replace")


def is_held(node) -> bool:
    return node.op == "Const" and WEIGHT_ATTR in node.attr


@contextmanager
def held(weights: Weights | None) -> Iterator[Weights | None]:
    """Within: `consts.node_value` reads from `weights`, `consts.make_const` holds big values
    there (nothing is held apart with None)."""
    token = HELD.set(weights)
    try:
        yield weights
    finally:
        HELD.reset(token)


def attached_node(node, weights: Weights):
    """A copy of a held node with its value in it (as if it had never been held apart)."""
    node = copied(node)
    _put_back(node, weights)
    return node


def attach(graph_def, weights: Weights) -> None:
    """Put every held value back into `graph_def`'s nodes, in place."""
    for node in graph_def.node:
        if is_held(node):
            _put_back(node, weights)


def _put_back(node, weights: Weights) -> None:
    """The value's bytes into `node`'s tensor, which has its dtype and shape (and whatever
    else the file's tensor had: graph/held_values.py)."""
    node.attr["value"].tensor.tensor_content = value_bytes(weights.value(node))
    del node.attr[WEIGHT_ATTR]
