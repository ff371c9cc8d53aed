"""`freeze batch`: many models at once, for build pipelines. Thin: options to
graphfreeze.batch.run, progress lines, reports, the exit code."""

from __future__ import annotations

import sys

import click
from graphfreeze_cli.cache import cache_option


@click.command("batch")
@click.argument("sources", nargs=-1, required=True, metavar="MANIFEST.toml | PATH...")
@click.option("--outputs", multiple=True, metavar="NAMES", help="PATH mode: output names.")
@click.option("--inputs", multiple=True, metavar="NAMES", help="PATH mode: input names.")
@click.option("--target", "targets", multiple=True, metavar="NAMES",
              help="PATH mode: target(s) (default: android).")
@click.option("--out-dir", metavar="DIR", help="PATH mode: artifacts go to DIR/NAME/ (dist).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), metavar="N",
              help="Worker processes (default: what cores and memory allow).")
@click.option("--max-memory", metavar="SIZE", callback=lambda ctx, param, value: _size(value),
              help="Memory the jobs running at once may take, by each job's estimate from its "
                   "model's size (e.g. 16G; default: what the machine has available): a job "
                   "waits until its estimate fits; ray: each task reserves its estimate.")
@cache_option
@click.option("--no-cache", is_flag=True, help="Convert everything; read and write no cache.")
@click.option("--shard", metavar="K/N", callback=lambda ctx, param, value: _shard(value),
              help="Take shard K of N (stable, by job name).")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), metavar="S",
              help="Stop a job after S seconds.")
@click.option("--fail-fast", is_flag=True, help="Stop at the first failed job.")
@click.option("--executor", default="local", metavar="NAME",
              show_default=True, help="Where jobs run: local, ray, or a plugin's executor.")
@click.option("--address", metavar="ADDR",
              help="ray: an existing cluster (default: $RAY_ADDRESS, else a local Ray).")
@click.option("--resource", "resources", multiple=True, metavar="NAME[=N]",
              callback=lambda ctx, param, value: _resources(value),
              help="ray: a custom resource each job takes (1 if no N): jobs go to the cluster's "
                   "nodes that have it (repeatable).")
@click.option("--report", "report_dir", metavar="DIR",
              help="Where report.json, junit.xml and report.html go (default: the out_dir).")
@click.option("--baseline", metavar="PATH",
              help="Compare with an earlier run's report.json (local or gs://): size, nodes, "
                   "|diff|, accuracy, latency per model and target.")
@click.option("--fail-on", "fail_on", multiple=True, metavar="RULE",
              help='A budget against the baseline, e.g. "size > +5%", "top1 < -0.5%", '
                   '"ops > +0", "latency > +10%" (repeatable); a job breaking one is '
                   "over-budget (exit 8).")
@click.option("--benchmark", is_flag=True,
              help="Time every artifact in its own runtime (see freeze --benchmark).")
@click.option("--reduce", "reduce", is_flag=True,
              help="Reduce each failed job's failure (see freeze reduce); the reports link it.")
@click.option("--debug", is_flag=True, help="Show tracebacks and TensorFlow logs.")
def batch_command(sources, outputs, inputs, targets, out_dir, jobs, max_memory, cache_dir,
                  no_cache, shard, timeout, fail_fast, executor, address, resources, report_dir,
                  baseline, fail_on, benchmark, reduce, debug):
    """Convert many models: a manifest (models.toml) or paths with shared options.

    Cached by content (a re-run converts only what changed), sharded for CI matrices, run in
    worker processes or on Ray. With --baseline, each artifact is compared with an earlier
    run's and --fail-on budgets are checked. Exit code 7 if any job failed, else 8 if one
    broke a budget.

    \b
    Examples:
      freeze batch models.toml --jobs 2
      freeze batch runs/*/ --outputs probs --target android,tflite --shard 1/4
      freeze batch models.toml --baseline main/report.json --fail-on "size > +5%"
    """
    from graphfreeze_cli.running import run

    manifest = sources[0] if len(sources) == 1 and sources[0].endswith(".toml") else None
    shared = {"outputs": outputs, "inputs": inputs, "targets": targets, "out_dir": out_dir}
    shared = {k: v for k, v in shared.items() if v}
    if manifest and shared:
        raise click.UsageError("with a manifest, set --outputs/--inputs/--target/--out-dir in it")
    for key in ("targets", "outputs", "inputs"):  # "a,b" split as a manifest's lists are
        if key in shared:
            shared[key] = list(shared[key])
    run(lambda: _batch(manifest, None if manifest else list(sources), shared, jobs,
                        None if no_cache else (cache_dir or "default"), shard, timeout,
                        fail_fast, executor, address, resources, report_dir, baseline, fail_on,
                        {"benchmark": True} if benchmark else None, reduce, max_memory), debug)


def _resources(values: tuple[str, ...]) -> dict[str, float]:
    """`--resource NAME[=N]`s as Ray's {name: amount}."""
    out = {}
    for text in values:
        name, sep, amount = (part.strip() for part in text.partition("="))
        try:
            value = float(amount) if sep else 1.0
        except ValueError:
            value = 0.0
        if not name or not value > 0:
            raise click.BadParameter(f"{text!r}: write NAME or NAME=N with N > 0, e.g. "
                                     "tensorflow=1", param_hint="--resource")
        out[name] = value
    return out


def _size(text: str | None) -> int | None:
    """`--max-memory SIZE` in bytes, checked as the options are read (a usage error, exit 2)."""
    from graphfreeze.batch.cache_admin import parse_size
    from graphfreeze.errors import ConfigError

    try:
        size = parse_size(text, "--max-memory") if text else None
    except ConfigError:
        size = 0
    if size is not None and size < 1 << 20:
        raise click.BadParameter(f"{text!r}: write a size of 1M or more, e.g. 16G, 512M or 1.5GB",
                                 param_hint="--max-memory")
    return size


def _shard(text: str | None) -> str | None:
    """`--shard K/N`, checked as the options are read (a usage error, exit 2)."""
    from graphfreeze.batch.shards import parse_shard
    from graphfreeze.errors import ConfigError

    try:
        if text:
            parse_shard(text)
    except ConfigError as err:
        raise click.BadParameter(f"{text!r}: write it as K/N with 1 <= K <= N, e.g. 1/4",
                                 param_hint="--shard") from err
    return text


def _batch(manifest, paths, shared, jobs, cache, shard, timeout, fail_fast, executor, address,
           resources, report_dir, baseline, fail_on, stage_options, reduce=False,
           max_memory=None) -> None:
    from graphfreeze import batch
    from graphfreeze.batch.report import end_lines, job_line, summary_line, write_reports

    if report_dir:  # a folder the reports cannot go to: said before any job runs
        from graphfreeze.io import storage

        storage.check_writable([storage.join(report_dir, "report.json")], True, "--report")
    progress, task = _progress()

    def show(result) -> None:
        line = job_line(result)
        if progress is None:
            click.echo(line)
            sys.stdout.flush()
        else:
            progress.console.print(line, highlight=False, markup=False)
            progress.advance(task)

    try:
        if progress is not None:
            progress.start()
        report = batch.run(manifest, paths, shared, jobs=jobs, cache=cache, shard=shard,
                           timeout=timeout, fail_fast=fail_fast, executor=executor,
                           address=address, resources=resources, baseline=baseline,
                           fail_on=tuple(fail_on), stage_options=stage_options, reduce=reduce,
                           max_memory=max_memory, on_result=show)
    finally:
        if progress is not None:
            progress.stop()
    folder = report_dir or _default_report_dir(report, shared)
    written = write_reports(report, folder, flag="--report" if report_dir else "out_dir")
    for line in end_lines(report):
        click.echo(line)
    if reduce:
        from graphfreeze.reduce.batch import line as reduced_line

        for result in report.jobs:
            if reduced_line(result):
                click.echo(f"{result.name}:{reduced_line(result)}")
    click.echo(summary_line(report))
    md = f", {written['md']}" if "md" in written else ""
    click.echo(f"reports: {written['html']}, {written['junit']}, {written['json']}{md}")
    _step_summary(written)
    if report.interrupted:
        click.echo("interrupted; finished jobs kept, a re-run resumes from the cache", err=True)
        sys.exit(130)
    if report.failed:
        from graphfreeze.errors import EXIT_JOBS_FAILED

        sys.exit(EXIT_JOBS_FAILED)
    if report.over_budget:
        from graphfreeze.errors import EXIT_OVER_BUDGET

        sys.exit(EXIT_OVER_BUDGET)


def _step_summary(written: dict) -> None:
    """On GitHub Actions, report.md is appended to the job's summary page."""
    import os

    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if not target or "md" not in written:
        return
    from graphfreeze.io import storage

    try:
        with open(target, "ab") as f:
            f.write(storage.read_bytes(written["md"]))
    except OSError as err:
        click.echo(f"warning: cannot append report.md to $GITHUB_STEP_SUMMARY ({err})", err=True)


def _default_report_dir(report, shared) -> str:
    return report.extra.get("out_dir") or shared.get("out_dir", "dist")


def _progress():
    """A rich progress bar on a terminal; None in CI logs (plain lines instead)."""
    if not sys.stdout.isatty():
        return None, None
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    progress = Progress(TextColumn("converting"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), transient=True)
    return progress, progress.add_task("jobs", total=None)
