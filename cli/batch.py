"""`freeze batch`: many models at once, for build pipelines. Thin: options to
graphfreeze.batch.run, progress lines, reports, the exit code."""

from __future__ import annotations

import sys

import click

BATCH_FAILED = 7  # exit code: some jobs failed (each job's own error is in the reports)


@click.command("batch")
@click.argument("sources", nargs=-1, required=True, metavar="MANIFEST.toml | PATH...")
@click.option("--outputs", multiple=True, metavar="NAMES", help="PATH mode: output names.")
@click.option("--inputs", multiple=True, metavar="NAMES", help="PATH mode: input names.")
@click.option("--target", "targets", multiple=True, metavar="NAMES",
              help="PATH mode: target(s) (default: android).")
@click.option("--out-dir", metavar="DIR", help="PATH mode: artifacts go to DIR/NAME/ (dist).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), metavar="N",
              help="Worker processes (default: what cores and memory allow).")
@click.option("--cache", "cache_dir", metavar="DIR",
              help="Cache folder, local, gs:// or ram:// (default: ~/.cache/graphfreeze).")
@click.option("--no-cache", is_flag=True, help="Convert everything; read and write no cache.")
@click.option("--shard", metavar="K/N", help="Take shard K of N (stable, by job name).")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), metavar="S",
              help="Stop a job after S seconds.")
@click.option("--fail-fast", is_flag=True, help="Stop at the first failed job.")
@click.option("--executor", default="local", metavar="NAME",
              show_default=True, help="Where jobs run: local, ray, or a plugin's executor.")
@click.option("--address", metavar="ADDR", help="ray: an existing cluster (default: a local one).")
@click.option("--report", "report_dir", metavar="DIR",
              help="Where report.json, junit.xml and report.html go (default: the out_dir).")
@click.option("--debug", is_flag=True, help="Show tracebacks and TensorFlow logs.")
def batch_command(sources, outputs, inputs, targets, out_dir, jobs, cache_dir, no_cache, shard,
                  timeout, fail_fast, executor, address, report_dir, debug):
    """Convert many models: a manifest (models.toml) or paths with shared options.

    Cached by content (a re-run converts only what changed), sharded for CI matrices, run in
    worker processes or on Ray. Exit code 7 if any job failed.

    \b
    Examples:
      freeze batch models.toml --jobs 2
      freeze batch runs/*/ --outputs probs --target android,tflite --shard 1/4
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
                        fail_fast, executor, address, report_dir), debug)


def _batch(manifest, paths, shared, jobs, cache, shard, timeout, fail_fast, executor, address,
           report_dir) -> None:
    from graphfreeze import batch
    from graphfreeze.batch.report import job_line, summary_line, write_reports

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
                           address=address, on_result=show)
    finally:
        if progress is not None:
            progress.stop()
    folder = report_dir or _default_report_dir(report, shared)
    written = write_reports(report, folder)
    click.echo(summary_line(report))
    click.echo(f"reports: {written['html']}, {written['junit']}, {written['json']}")
    if report.interrupted:
        click.echo("interrupted; finished jobs kept, a re-run resumes from the cache", err=True)
        sys.exit(130)
    if report.failed:
        sys.exit(BATCH_FAILED)


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
