"""The delta debugging, over cut points of the frozen graph (Polygraphy's `debug reduce` bisects
the outputs, then the inputs; ddmin's last step removes what is left one node at a time):

0. the nodes the failure names (its error's nodes or ops, the first diverging node), each
   alone with its inputs as placeholders (the one-op case in one trial), then with the nodes
   one and two edges above it (a divergence often shows one node below its cause);
1. the output: those nodes, else bisection over the graph's nodes in order for the earliest node whose
   subgraph still fails;
2. the inputs: every tensor the output needs cut to a placeholder at once, else bisection over
   the output's upstream nodes for the longest prefix that can be cut away;
3. one node at a time: each node left cut to a placeholder, and the output moved to one of its
   inputs, while the failure stays the same, until nothing more goes (1-minimal).

`fails(outputs, cuts) -> bool` runs one trial (cached here: a subgraph is tried once)."""

from __future__ import annotations

from collections.abc import Callable

NEAR = 3  # a named node is tried with the nodes up to 2 edges above it before bisecting


class Search:
    def __init__(self, graph, fails: Callable, budget: int = 80,
                 log: Callable[[str], None] = lambda line: None):
        self.graph, self._fails, self.budget, self.log = graph, fails, budget, log
        self.tried: dict[tuple, bool] = {}

    def fails(self, outputs, cuts=()) -> bool:
        key = (tuple(outputs), self.graph.normal(outputs, cuts))
        if key not in self.tried:
            if len(self.tried) >= self.budget:
                return False
            self.tried[key] = self._fails(key[0], key[1])
        return self.tried[key]

    def run(self, outputs, hints=()) -> tuple[tuple[str, ...], frozenset[str]]:
        for hint in [h for h in self.graph.compute(outputs) if h in set(hints)][:3]:
            near = {hint}
            for depth in range(NEAR):  # the named node with what is nearest it, the rest cut
                cuts = [n for n in self._upstream((hint,)) if n not in near]
                if self.fails((hint,), cuts):
                    self.log(f"output: {hint}, with {depth} node(s) above it")
                    return self.minimal((hint,), self.graph.normal((hint,), cuts))
                near |= {i for n in near for i in self.graph.data_inputs(n)}
        outputs = self.output(tuple(outputs), hints)
        self.log(f"output: {', '.join(outputs)}")
        cuts = self.inputs(outputs)
        return self.minimal(outputs, cuts)

    def output(self, outputs, hints):
        order = self.graph.compute(outputs)
        for hint in [h for h in order if h in set(hints)][:3]:
            if self.fails((hint,)):
                return (hint,)
        lo, hi = -1, len(order)  # order[hi] fails (hi = len: the given outputs)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.fails((order[mid],)):
                hi = mid
            else:
                lo = mid
        return outputs if hi == len(order) else (order[hi],)

    def _upstream(self, outputs) -> list[str]:
        return [n for n in self.graph.compute(outputs)
                if n in self.graph.cuttable and n not in outputs]

    def inputs(self, outputs) -> frozenset[str]:
        upstream = self._upstream(outputs)
        if not upstream or self.fails(outputs, upstream):
            return self.graph.normal(outputs, upstream)
        lo, hi = 0, len(upstream)  # cutting upstream[:lo] fails, upstream[:hi] does not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.fails(outputs, upstream[:mid]):
                lo = mid
            else:
                hi = mid
        return self.graph.normal(outputs, upstream[:lo])

    def minimal(self, outputs, cuts):
        changed = True
        while changed and len(self.tried) < self.budget:
            changed = False
            for node in self.graph.data_inputs(outputs[0]) if len(outputs) == 1 else ():
                if node not in cuts and node in self.graph.kept(outputs, cuts) and \
                        self.fails((node,), cuts):
                    outputs, cuts = (node,), self.graph.normal((node,), cuts)
                    self.log(f"output: {node}")
                    changed = True
                    break
            kept = self.graph.kept(outputs, cuts)
            for node in reversed(self.graph.order):
                if node in kept and node in self.graph.cuttable and node not in cuts and \
                        node not in outputs and self.fails(outputs, cuts | {node}):
                    cuts, changed = self.graph.normal(outputs, cuts | {node}), True
                    kept = self.graph.kept(outputs, cuts)
        return outputs, cuts
