"""`freeze scan`: check model files for what an untrusted model may do, without converting them.
Thin: paths to graphfreeze.inspect.scan.scan, one line per file or finding, the exit code."""

from __future__ import annotations

import sys

import click

FOUND = 3  # exit code: a finding, or a path that is not a model (as a bad input model is)


@click.command("scan")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@click.option("--debug", is_flag=True, help="Show tracebacks and TensorFlow logs.")
def scan_command(paths, as_json, debug):
    """Check models for ops that touch the host, assets outside the model, Keras layers that run
    code, and broken structure -- without loading or converting them.

    A folder is searched recursively for models. Exit 3 if anything is found.

    \b
    Examples:
      freeze scan models/
      freeze scan export/1 model.keras --json
    """
    from graphfreeze_cli.running import run

    def action():
        import json

        from graphfreeze.inspect.scan import scan

        results = scan(paths)  # TensorFlow only if a check needs it
        if as_json:
            click.echo(json.dumps({"schema_version": 1, "ok": all(not r.findings for r in results),
                                   "files": [r.as_json() for r in results]}, indent=2))
        else:
            for result in results:
                for finding in result.findings:
                    click.echo(finding.message)
                if not result.findings:
                    click.echo(f"ok  {result.path} ({result.kind})")
        if any(r.findings for r in results):
            sys.stdout.flush()
            sys.exit(FOUND)

    run(action, debug)
