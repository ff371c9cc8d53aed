"""What "fails the same way" means. A trial's outcome becomes a Signature: the kind of failure
(converter error, divergence, crash, timeout) and, for errors, the message with the model's
path, node names and numbers masked and the op types it names set apart; for divergences, the
node where it first diverges. A candidate fails the same way when its kind and wording match
and the ops it names are some of those the original named."""

from __future__ import annotations

import re
from dataclasses import dataclass

ERROR, DIVERGES, CRASH, TIMEOUT = "error", "diverges", "crash", "timeout"


@dataclass(frozen=True)
class Signature:
    kind: str
    text: str  # the masked message, or the node it first diverges at
    ops: frozenset[str] = frozenset()  # op types the message names
    nodes: tuple[str, ...] = ()  # node names the message names (hints: where to cut)
    message: str = ""  # as said

    def matches(self, other: Signature | None) -> bool:
        """`other` (a candidate's) fails the way this one (the original's) does."""
        if other is None or other.kind != self.kind or other.text != self.text:
            return False
        return other.ops <= self.ops and (bool(other.ops) or not self.ops)

    def said(self) -> str:
        if self.kind == DIVERGES:
            return "diverges beyond tolerance" + (f", first at node '{self.text}'"
                                                  if self.text else "")
        return self.message


def of(outcome, ops: set[str], nodes: set[str]) -> Signature | None:
    """The Signature of a JobOutcome (None: it converted and verified). `ops`, `nodes`: the op
    types and node names of the graph it ran (told apart from the words around them)."""
    if outcome.ok:
        return None
    if outcome.status == "timed-out":
        return Signature(TIMEOUT, "", message="the conversion hangs (timed out)")
    details = outcome.details or {}
    if details.get("crashed"):
        return Signature(CRASH, "", message=outcome.error)
    divergence = details.get("divergence") or {}
    if outcome.exit_code == 5 and (divergence or "against the original" in outcome.error):
        first = (divergence.get("first") or [{}])[0].get("node")
        return Signature(DIVERGES, first or "", message=outcome.error)
    return _error(outcome.exit_code, outcome.error or "", ops, nodes)


def _error(code: int, error: str, ops: set[str], nodes: set[str]) -> Signature:
    message = error.split(": ", 1)[1] if re.match(r"^\S+: ", error) else error  # the path
    named_ops, named_nodes, words = set(), [], []
    for token in re.split(r"([\w./-]+)", message):
        bare = token.removeprefix("tf.").removeprefix("tfl.")
        if token in nodes or token.rsplit(":", 1)[0] in nodes:
            named_nodes.append(token.rsplit(":", 1)[0])
            if bare in ops:  # a node named like an op type: it is the op the message names
                named_ops.add(bare)
            words.append("NODE")
        elif bare in ops:
            named_ops.add(bare)
            words.append("OP")
        else:
            words.append(re.sub(r"\d+", "N", token))
    text = "".join(words)
    text = re.sub(r"NODE \(OP\)", "OP", text)
    text = re.sub(r"(?:(?:OP|NODE)(?:, | and ))+(OP|NODE)", r"\1", text)  # lists: one
    return Signature(ERROR, f"{code}:{text}", frozenset(named_ops),
                     tuple(dict.fromkeys(named_nodes)), message)
