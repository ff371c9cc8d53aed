"""`freeze reduce MODEL --target T`: a failing conversion or verification shrunk to the smallest
subgraph that still fails the same way, written with the one command that reproduces it."""

from __future__ import annotations

import click
from graphfreeze_cli import flags
from graphfreeze_cli.running import quiet_tensorflow, run


def reduce_command(source_flags, source_options):
    """The command, given `freeze`'s own source flags (cli/main.py owns them)."""

    @click.command("reduce")
    @click.argument("path", required=False, metavar="[PATH]")
    @flags.kind_flags
    @source_flags
    @flags.name_flags
    @click.option("--target", "target", required=True, metavar="NAME",
                  help="The one target that fails (see `freeze targets`).")
    @click.option("-o", "--output", metavar="DIR",
                  help="Folder for the repro files (default: beside the model).")
    @click.option("--force", is_flag=True, help="Overwrite existing repro files.")
    @click.option("--no-verify", is_flag=True,
                  help="Reduce the conversion's failure only (verification not run).")
    @click.option("--tries", default=2, show_default=True, type=click.IntRange(1, 50),
                  help="Runs of the whole graph (and of the repro) that must fail alike.")
    @click.option("--trial-timeout", type=click.FloatRange(min=1), metavar="SECONDS",
                  help="A trial running longer is stopped (counts as a hang).")
    @click.option("--budget", default=80, show_default=True, type=click.IntRange(1),
                  help="Most trials (conversions of a subgraph) to run.")
    @flags.options("stage")
    @click.option("--debug", is_flag=True, help="Show tracebacks and TensorFlow logs.")
    def command(path, kind, source_option, unsafe, outputs, inputs, target, output, force,
                no_verify, tries, trial_timeout, budget, debug, **values):
        """Shrink a failing conversion (TFLiteConverter, tf2onnx, OpenVINO) or a verification
        that fails to the smallest subgraph that fails the same way: writes
        NAME.TARGET.reduced.pb (+ .npz inputs for a divergence), .py (the stock converter on
        it) and .json. Exit 3 if the model does not fail, or not the same way every try.

        \b
        Example:
          freeze reduce model.ckpt-200 --outputs probs --target onnx -o repro/
        """
        from graphfreeze.convert import Request
        from graphfreeze.names import parse_names

        named = flags.kinds_given(values)
        given = ([(kind, path)] if path else []) + named
        if len(given) != 1:
            raise click.UsageError("give one model: PATH, or one of the kind flags")
        kind, source = given[0]
        if len(parse_names((target,))) != 1:
            raise click.UsageError(f"--target {target}: reduce takes one target")
        request = Request(source=source, kind=kind, unsafe=unsafe,
                          source_options=source_options(values, source_option),
                          outputs=tuple(parse_names(outputs)), inputs=tuple(parse_names(inputs)),
                          targets=tuple(parse_names((target,))), output=output, force=force,
                          verify=not no_verify, stage_options=flags.given("stage", values),
                          flags=True)
        run(lambda: _reduce(request, tries, trial_timeout, budget, debug), debug)

    return command


def _reduce(request, tries, timeout, budget, debug) -> None:
    from graphfreeze.process.quiet import native_stderr_off
    from graphfreeze.reduce.run import reduce
    from graphfreeze_cli import show

    quiet_tensorflow(debug)
    err = show.Console(stderr=True)
    with native_stderr_off(), err.status("reducing", spinner="dots") as status:
        result = reduce(request, request.output, tries, timeout, budget,
                        log=lambda line: status.update(line) if not debug else err.print(line),
                        force=request.force)
    out = show.Console(highlight=False, soft_wrap=True)
    before, after = result.nodes
    ops = ", ".join(f"{n} {op}" if n > 1 else op for op, n in sorted(result.ops.items()))
    out.print(f"fails: {result.failure}")
    out.print(f"reduced {before} nodes to {after} ({ops}) in {result.trials} trials, "
              f"{result.seconds:.0f} s")
    for path in result.files.values():
        out.print(f"  wrote {path}")
    stock = dict(result.stock)
    if len(stock.get("last_line", "")) > 240:
        stock["last_line"] = stock["last_line"][:240] + "..."
    if not stock.get("ran"):
        verdict = f"not run ({stock.get('why')})"
    elif stock["same"]:
        verdict = f"fails the same way: {stock['last_line']}"
    elif stock["fails"]:
        verdict = f"fails, in other words: {stock['last_line']}"
    else:
        verdict = f"does not fail ({stock['last_line']}); only graphfreeze's run does"
    out.print(f"stock converter ({result.command}): {verdict}")
