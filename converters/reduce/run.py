"""`freeze reduce` in order: the model frozen as the target freezes it (its stages up to the
converter, then the frozen-graph export); the target run on that graph `tries` times (it must
fail, and the same way each time); the search over its subgraphs, each trial a real run of the
target in a child process; the repro files written; the stock converter run on them."""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from graphfreeze.errors import InputError, OutputError
from graphfreeze.reduce import signature as signatures
from graphfreeze.reduce.trials import Trials

if TYPE_CHECKING:
    from graphfreeze.reduce.repro import Reduced

ROWS = 8  # rows of the inputs a divergence is reduced on


def reduce(request, out_dir: str | None = None, tries: int = 2, timeout: float | None = None,
           budget: int = 80, log: Callable[[str], None] = lambda line: None,
           force: bool = False) -> Reduced:
    """Reduce the failure of `request` (a convert.Request with one target) and write the repro
    into `out_dir` (default: beside the model); an InputError when it does not fail, or not
    the same way every time."""
    from graphfreeze.convert import prepare
    from graphfreeze.io import storage
    from graphfreeze.io.temporaries import private_dir, remove

    if len(request.targets) != 1:
        raise InputError(f"reduce takes one --target (given: {', '.join(request.targets)})")
    if out_dir:  # a folder the repro cannot go to: said before any trial
        folder = out_dir.rstrip("/") or "/"
        if storage.exists(folder) and not storage.isdir(folder):
            raise OutputError(f"{out_dir}: is a file, not a folder; choose another -o")
        storage.check_writable([storage.join(folder, "repro")], True)
    start = time.monotonic()
    work = private_dir("graphfreeze-reduce-work")
    try:
        prepared = prepare(dataclasses.replace(request, output=work + "/", force=True))
        with Trials(timeout) as trials:
            job = _Job(request, prepared, work, trials, log)
            job.freeze()
            job.baseline(tries)
            outputs, cuts = job.search(budget)
            from graphfreeze.reduce.repro import write

            return write(job, outputs, cuts, out_dir, tries, start, force)
    finally:
        remove(work)


class _Job:
    def __init__(self, request, prepared, work, trials, log):
        self.request, self.prepared, self.work, self.trials, self.log = \
            request, prepared, work, trials, log
        self.target = request.targets[0]
        self.feeds: dict = {}  # divergences: the inputs, and the cut tensors' values
        self.sig = None
        self.divergence = None
        self.divergences: dict = {}  # subgraph -> where it diverged (the repro's overlay)

    def freeze(self) -> None:
        """The frozen graph the converter gets: the target's own stages before its export,
        then export_frozen_graph (run in the child)."""
        from graphfreeze.options import parse_options
        from graphfreeze.plan import Step, TargetPlan

        plan = self.prepared.plans[0]
        first = next(i for i, s in enumerate(plan.steps) if s.stage.suffix)
        export = self.prepared.registry.stage("export_frozen_graph")
        self.format = self.prepared.registry.format_of(plan.steps[first].stage.name)
        self.export_options = plan.steps[first].options
        self.verify_options = next((s.options for s in plan.steps if s.stage.name == "verify"),
                                   None)
        steps = (*plan.steps[:first], Step(export, parse_options(export.options, {}, "reduce")))
        pb = os.path.join(self.work, "frozen.pb")
        frozen = dataclasses.replace(self.prepared, plans=[TargetPlan(plan.target, steps)],
                                     paths={self.target: pb}, sidecars={self.target: pb + ".json"})
        self.log(f"freezing {self.request.source} as target {self.target} does")
        import threading

        # TensorFlow's import here, while the child freezes (the driver reads the graph with it)
        loading = threading.Thread(target=__import__, args=("tensorflow",), daemon=True)
        loading.start()
        outcome = self.trials.run(frozen)
        loading.join()
        if not outcome.ok:
            raise InputError(f"{self.request.source}: fails before the converter, while freezing "
                             f"({outcome.error}); reduce shrinks converter failures and "
                             "divergences, so fix this first")
        files = outcome.files.files
        from tensorflow.core.framework.graph_pb2 import GraphDef

        self.graph_def = GraphDef.FromString(files["frozen.pb"])
        self.sidecar = json.loads(files["frozen.pb.json"])
        self.pb = pb
        self.outputs = tuple(t["node"] for t in self.sidecar["outputs"])
        self.op_types = {n.op for n in self.graph_def.node}
        self.names = {n.name for n in self.graph_def.node}
        self.graph = None

    def trial(self, graph_def, outputs, verify: bool, feeds: dict | None = None):
        """One run of the target on `graph_def`: its Signature (None: it converts)."""
        self.submit(graph_def, outputs, verify, feeds)
        return self.result()

    def result(self):
        outcome = self.trials.result()
        self.divergence = (outcome.details or {}).get("divergence")  # the last trial's
        return signatures.of(outcome, self.op_types, self.names)

    def submit(self, graph_def, outputs, verify: bool, feeds: dict | None = None) -> None:
        from graphfreeze.convert import Request, prepare

        path = os.path.join(self.work, "trial.pb")
        with open(path, "wb") as f:
            f.write(graph_def.SerializeToString())
        options = dict(self.request.stage_options)
        if feeds:
            import numpy as np

            np.savez(os.path.join(self.work, "trial.npz"), **feeds)
            options["verify_data"] = os.path.join(self.work, "trial.npz")
            options.pop("calibration", None)
        placeholders = [n.name for n in graph_def.node if n.op == "Placeholder"]
        request = Request(source=path, kind="frozen_graph", outputs=tuple(outputs),
                          inputs=tuple(placeholders), targets=(self.target,),
                          output=os.path.join(self.work, "out") + "/", force=True, verify=verify,
                          stage_options=options, target_options=self.request.target_options)
        self.trials.submit(prepare(request, self.prepared.registry))

    def baseline(self, tries: int) -> None:
        """The target on the frozen graph, `tries` times: it must fail, the same way."""
        verify = self.request.verify and self.verify_options is not None
        if verify:
            self.feeds = self._inputs()
        seen = []
        for _ in range(max(1, tries)):
            self.submit(self.graph_def, self.outputs, verify, self._feeds(self.graph_def))
            if self.graph is None:  # read the graph while the child converts it
                from graphfreeze.reduce.cut import Graph

                self.graph = Graph.of(self.graph_def)
            seen.append(self.result())
            if any(s is None for s in seen) and any(s is not None for s in seen) or \
                    seen[0] is not None and not seen[0].matches(seen[-1]):
                said = "; ".join(f"try {i + 1}: {s.said() if s else 'converts'}"
                                 for i, s in enumerate(seen))
                raise InputError(f"{self.request.source}: the {self.target} failure is not "
                                 f"deterministic ({said}); reduce needs one that recurs: make "
                                 "it deterministic (seeds, no random ops), then reduce again")
        if seen[0] is None:
            raise InputError(f"{self.request.source}: converts to {self.target}"
                             f"{' and verifies' if verify else ''} ({len(seen)} of "
                             f"{len(seen)} tries): nothing to reduce, nothing written")
        self.sig = seen[0]
        # a converter's failure is reduced without verifying; a verification's with it
        self.verify = verify and (self.sig.kind == signatures.DIVERGES or
                                  self.sig.text.startswith("5:"))
        if not self.verify:
            self.feeds = {}
        self.log(f"fails: {self.sig.said()} ({len(seen)} of {len(seen)} tries)")

    def _inputs(self) -> dict:
        """The seeded inputs verification would make (or the user's .npz), ROWS rows."""
        from graphfreeze.tensors import sample_inputs

        data = self.request.stage_options.get("verify_data")
        if data:
            if not str(data).endswith(".npz"):
                raise InputError(f"{data}: reduce reads --verify-data as one .npz (one array per "
                                 "input, named like it)")
            from graphfreeze.data.load import read_arrays

            arrays = read_arrays(str(data), "save one with numpy.savez, one array per input")
            return {k.rsplit(":", 1)[0]: v for k, v in arrays.items() if k != "labels"}
        seed = self.verify_options.seed
        rows = max(ROWS, self.verify_options.batch_size)
        return {k.rsplit(":", 1)[0]: v for k, v in sample_inputs(self._infos(), rows,
                                                                  seed).items()}

    def _infos(self) -> list:
        from graphfreeze.tensors import TensorInfo

        return [TensorInfo(t["name"], t["dtype"], None if t["shape"] is None
                           else tuple(t["shape"])) for t in self.sidecar["inputs"]]

    def _feeds(self, graph_def) -> dict | None:
        """The values of `graph_def`'s placeholders: the inputs, and the cut tensors as the
        whole graph computes them from those inputs."""
        if not self.feeds:
            return None
        wanted = [n.name for n in graph_def.node if n.op == "Placeholder"]
        missing = [n for n in wanted if n not in self.feeds]
        if missing:
            from graphfreeze.graph.skeleton import run_frozen
            from graphfreeze.stages.verify.diverge import by_rows, fixed_batch

            fetch = [f"{n}:0" for n in missing]
            values = by_rows(lambda f: dict(zip(fetch, run_frozen(self.graph_def, f, fetch),
                                                strict=True)),
                             {f"{k}:0": v for k, v in self.feeds.items()
                              if k in self.graph.ops and self.graph.ops[k] == "Placeholder"},
                             fixed_batch(self._infos()))  # a fixed batch: as verification runs
            self.feeds.update((n, values[f"{n}:0"]) for n in missing)
        return {n: self.feeds[n] for n in wanted}

    def search(self, budget: int):
        from graphfreeze.reduce.search import Search

        def fails(outputs, cuts) -> bool:
            sub = self.graph.subgraph(outputs, cuts)
            sig = self.trial(sub, outputs, self.verify, self._feeds(sub))
            same = self.sig.matches(sig)
            from graphfreeze.reduce.cut import key

            if same and self.divergence:
                self.divergences[key(sub)] = self.divergence
            self.log(f"trial {self.trials.count}: {len(sub.node)} nodes, output "
                     f"{', '.join(outputs)}: {'fails the same way' if same else 'does not'}")
            return same

        hints = list(self.sig.nodes)
        if self.sig.kind == signatures.DIVERGES:
            hints.append(self.sig.text)
        hints += [n for n in self.graph.order if self.graph.ops[n] in self.sig.ops]
        return Search(self.graph, fails, budget, self.log).run(self.outputs, hints)

