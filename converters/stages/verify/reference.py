"""What verification compares against: the inputs (seeded random, the user's `--verify-data`, or
a golden folder's) and the original's outputs on them (run here, or read from the golden
folder), computed once per run for every target, in a thread that overlaps the export."""

from __future__ import annotations

from dataclasses import dataclass

from graphfreeze.data import golden
from graphfreeze.process import memory
from graphfreeze.stages.verify.diverge import reference_run
from graphfreeze.stages.verify.options import VerifyOptions
from graphfreeze.tensors import io_infos, sample_inputs


@dataclass(frozen=True)
class Reference:
    feeds: dict
    expected: list
    labels: object = None  # class indices, when the data has them
    classes: tuple[str, ...] | None = None
    where: str = "seeded inputs"
    run_rows: int = 64  # rows per run: the inputs' fixed batch, if they have one

    @property
    def rows(self) -> int:
        return golden.rows(self.feeds) or 1


def chunked(run, feeds: dict, rows: int) -> list:
    """run(feeds) -> [arrays], `rows` rows at a time, outputs concatenated (batch-less outputs
    of the first chunk kept as they are). The last chunk is padded to `rows` with copies of its
    last row (and the copies' outputs dropped): every call has one shape, so runtimes keep one
    interpreter and traced functions are not traced again."""
    import numpy as np

    total = {int(v.shape[0]) for v in feeds.values() if v.ndim}
    if len(total) != 1 or next(iter(total)) <= rows:
        return run(feeds)
    (count,) = total
    parts = []
    for k in range(0, count, rows):
        chunk = {n: v[k:k + rows] for n, v in feeds.items()}
        short = rows - len(next(iter(chunk.values())))
        if short:
            chunk = {n: np.concatenate([v, np.repeat(v[-1:], short, axis=0)])
                     for n, v in chunk.items()}
        got = run(chunk)
        parts.append([g[:rows - short] if short and np.ndim(g) and len(g) == rows else g
                      for g in got])
    return [np.concatenate(chunk) if np.ndim(chunk[0]) else chunk[0]
            for chunk in zip(*parts, strict=True)]


def rows_per_run(infos, feeds: dict, rows: int, where: str) -> int:
    """`rows`, or the inputs' fixed batch dimension: such an input takes exactly that many rows
    a run, so data of another row count (not a multiple of it) is refused in one line."""
    from graphfreeze.errors import InputError

    fixed = {info.name: info.shape[0] for info in infos
             if info.shape and info.shape[0] is not None and len(info.shape) > 1}
    counts = {int(feeds[n].shape[0]) for n in fixed if n in feeds and feeds[n].ndim}
    if len(set(fixed.values())) != 1 or len(counts) != 1:
        return rows
    name, batch = next(iter(fixed.items()))
    (count,) = counts
    if count % batch:
        raise InputError(f"{where}: input '{name}' has a fixed batch of {batch} rows; give a "
                         f"multiple of {batch} rows (got {count}), or pass --no-verify")
    return batch


def original_outputs(state, feeds: dict, rows: int = 64) -> list:
    """The original's outputs: checkpoint restored, flags at inference values, no dropout (in
    the run's TensorFlow child, if it has one)."""
    from graphfreeze.process import tensorflow_child

    graph_def, flag_feeds = reference_run(state)
    names = [t.name for t in state.outputs]
    return tensorflow_child.call(state.memo, _original_run, state.model, graph_def, flag_feeds,
                                 names, feeds, rows)


def _original_run(model, graph_def, flag_feeds: dict, names: list[str], feeds: dict,
                  rows: int) -> list:
    return chunked(lambda f: model.run_reference(graph_def, {**f, **flag_feeds}, names),
                   feeds, rows)


def artifact_outputs(state, artifact, feeds: dict, rows: int) -> list:
    """The artifact's outputs on `feeds`, `rows` a run (in the run's TensorFlow child, if it has
    one and the format's runtime needs TensorFlow: opened from its staged file there)."""
    import dataclasses

    from graphfreeze.process import tensorflow_child

    if artifact.format.floor:
        return _artifact_run(artifact, feeds, rows)
    if tensorflow_child.running(state.memo):
        artifact = dataclasses.replace(artifact, loaded=None, quantizer=None)
    return tensorflow_child.call(state.memo, _artifact_run, artifact, feeds, rows)


def _artifact_run(artifact, feeds: dict, rows: int) -> list:
    return chunked(artifact.open().run, feeds, rows)


def _key(options: VerifyOptions) -> tuple:
    return ("reference", options.seed, options.batch_size, options.verify_data, options.golden,
            options.image_scaling())


def _inputs(state, options: VerifyOptions, infos):
    """(feeds, labels, classes, where, expected or None) before the original runs."""
    if options.golden:
        from graphfreeze.data import golden

        feeds, expected, labels = golden.load(options.golden, infos, io_infos(state)[1])
        return feeds, labels, None, f"the golden inputs in {options.golden}", expected
    if options.verify_data:
        from graphfreeze.data import load

        data = load(options.verify_data, infos, options.image_scaling())
        return data.inputs, data.labels, data.classes, \
            f"{options.verify_data} ({data.count} rows)", None
    feeds = sample_inputs(infos, options.batch_size, options.seed, state.model.graph_file)
    return feeds, None, None, "seeded inputs", None


def _compute(state, options: VerifyOptions, infos, inputs=None) -> Reference:
    """The Reference; `inputs` (a Future) gets (feeds, rows) as soon as they are known, before
    the original runs on them."""
    try:
        feeds, labels, classes, where, expected = _inputs(state, options, infos)
        rows = rows_per_run(infos, feeds, options.rows_per_run, where)
    except BaseException as err:
        if inputs is not None:
            inputs.set_exception(err)
        raise
    if inputs is not None:
        inputs.set_result((feeds, rows))
    if expected is None:
        expected = original_outputs(state, feeds, rows)
    return Reference(feeds, expected, labels, classes, where, rows)


@dataclass(frozen=True)
class _Pending:
    inputs: object  # Future of (feeds, rows); None when computed in one go
    reference: object  # Future of the Reference


def prepare(state, options: VerifyOptions) -> None:
    """Start the reference in a thread while the stages before verify work (they mostly wait in
    TensorFlow's C++ with the GIL released); `shared` collects it."""
    from concurrent.futures import Future, ThreadPoolExecutor

    from graphfreeze.process.tensorflow_child import one_import_at_a_time

    key = _key(options)
    if key in state.memo:
        return
    one_import_at_a_time()  # (the thread may import TensorFlow, reading images, as a stage does)
    inputs = Future()
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="reference")
    state.memo[key] = _Pending(inputs, executor.submit(_compute, state, options,
                                                       io_infos(state)[0], inputs))
    executor.shutdown(wait=False)


def started_inputs(state, options: VerifyOptions) -> tuple[dict, int] | None:
    """(feeds, rows per run) of a reference already under way, as soon as they are known, so
    the artifact runs on them while the original still does; None when it is not started or its
    inputs failed (`shared` then says why)."""
    pending = state.memo.get(_key(options))
    if pending is None or pending.inputs is None or pending.inputs.exception() is not None:
        return None
    return pending.inputs.result()


def shared(state, options: VerifyOptions, infos) -> Reference:
    """The Reference for these options, computed once per run for all targets."""
    from concurrent.futures import Future

    key = _key(options)
    if key not in state.memo:
        done = Future()
        done.set_result(_compute(state, options, infos))
        state.memo[key] = _Pending(None, done)
        memory.release()  # the reference session's buffers, before the candidate's are made
    return state.memo[key].reference.result()
