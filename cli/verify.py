"""`freeze verify ARTIFACT [--golden DIR]`: check an artifact written earlier against golden
outputs, without the original model (by default those its run saved, as its sidecar records)."""

from __future__ import annotations

import click
from graphfreeze_cli import flags
from graphfreeze_cli.running import UsageRefused, quiet_tensorflow, run

JUDGED = ("tolerance", "rtol", "check_stat", "max_accuracy_drop")  # the flags `verify` takes


def _judged(func):
    for flag in reversed([f for f in flags.declared("stage") if f.name in JUDGED]):
        func = flags._click_option(flag)(func)  # noqa: SLF001 -- the same flags as `freeze`
    return func


@click.command("verify")
@click.argument("artifact", metavar="ARTIFACT")
@click.option("--golden", metavar="DIR",
              help="Golden outputs saved with --save-golden (default: those the run that wrote "
                   "ARTIFACT saved, as its sidecar records).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--unsafe", is_flag=True,
              help="Trust the sidecar: read the golden folder it records even outside the "
                   "artifact's folder (an absolute path, ../.., gs://).")
@_judged
@click.option("--debug", is_flag=True, help="Show tracebacks and TensorFlow logs.")
def verify_command(artifact, golden, as_json, unsafe, debug, **values):
    """Run ARTIFACT (with its sidecar beside it) in its own runtime on the golden inputs and
    judge it against the golden outputs, by its target's verification. Without --golden: the
    golden folder the run that wrote ARTIFACT saved (`freeze ... --save-golden DIR`)."""

    def check():
        import json

        from graphfreeze.io import storage
        from graphfreeze.registry import Registry
        from graphfreeze.stages.verify.verify_file import verify_file
        from graphfreeze_cli import show

        path = storage.expand(artifact)
        folder = storage.expand(golden) if golden else _recorded_golden(artifact, path, unsafe)
        quiet_tensorflow(debug)
        given = {k: v for k, v in values.items() if v is not None}
        report = verify_file(path, folder, Registry.default(), given)
        if as_json:
            click.echo(json.dumps(report, indent=2, sort_keys=True, default=str))
            return
        out = show.Console(highlight=False, soft_wrap=True)
        out.print(f"{artifact} ({report['target']}): passed against {report['data']}")
        for name, m in report["metrics"].items():
            top1 = m.get("top1_agreement")
            out.print(f"  {name}: max |diff| {m['max_abs_diff']:.2g}, mean |diff| "
                      f"{m['mean_abs_diff']:.2g}" + ("" if top1 is None else
                                                      f", top-1 agreement {top1:.0%}"))
        accuracy = report.get("accuracy")
        if accuracy:
            out.print(f"  top-1 accuracy {accuracy['artifact']:.2%} (golden original "
                      f"{accuracy['original']:.2%}, drop {accuracy['drop']:+.2%})")

    run(check, debug)


def _recorded_golden(artifact: str, path: str, unsafe: bool = False) -> str:
    """The golden folder ARTIFACT's sidecar records; UsageRefused (exit 2) naming the fix when
    there is none to verify against."""
    from graphfreeze.data.golden import ARRAYS
    from graphfreeze.errors import InputError
    from graphfreeze.io import storage
    from graphfreeze.sidecar import golden, read

    if not storage.exists(path):
        raise InputError(f"{artifact}: not found; give an artifact graphfreeze wrote")
    folder = golden(path, read(path), unsafe)
    fix = "pass --golden DIR, a folder written by `freeze ... --save-golden DIR`"
    if folder is None:
        raise UsageRefused(f"{artifact}: its sidecar records no golden outputs to verify "
                           f"against (the run that wrote it had no --save-golden); {fix}")
    if not storage.exists(storage.join(folder, ARRAYS)):
        raise UsageRefused(f"{artifact}: its sidecar records golden outputs in {folder}, "
                           f"which holds none now; {fix}")
    return folder
