"""`freeze`: the command line. Thin: parse, call graphfreeze, print. No TensorFlow import here."""

from __future__ import annotations

import os
import signal
import sys

# `freeze` run as a program (not imported by a test or another program): until a command runs,
# nothing is written, so a signal ends the process at once (running.run takes over from there)
_PROGRAM = bool(sys.argv and (os.path.basename(sys.argv[0]) == "freeze" or
                              os.path.abspath(sys.argv[0]) == os.path.abspath(__file__)))
if _PROGRAM:
    def _exit_now(signum, frame):
        os.write(2, b"interrupted; nothing written\n")
        os._exit(128 + signum)

    for _signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(_signum, _exit_now)

if "--debug" in sys.argv:  # TensorFlow's C++ logs on (graphfreeze sets them off by default)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "0")

import importlib  # noqa: E402

import click  # noqa: E402
from graphfreeze import __version__  # noqa: E402
from graphfreeze.errors import EXIT_CODES  # noqa: E402
from graphfreeze.process.environment import set_up  # noqa: E402
from graphfreeze_cli import flags, running  # noqa: E402
from graphfreeze_cli.running import closed_pipe_ok, quiet_tensorflow, run  # noqa: E402

running.PROGRAM = _PROGRAM
set_up()  # the environment TensorFlow, OpenVINO and onnxruntime read, before any of them loads

# the commands defined in other modules, imported when run or listed (`freeze scan FILE` imports
# only graphfreeze_cli.scan): click's documented LazyGroup
LAZY = {"batch": "graphfreeze_cli.batch:batch_command",
        "cache": "graphfreeze_cli.cache:cache_command",
        "explain": "graphfreeze_cli.explain:explain_command",
        "generate": "graphfreeze_cli.generate:generate_command",
        "scan": "graphfreeze_cli.scan:scan_command",
        "verify": "graphfreeze_cli.verify:verify_command"}


class LazyGroup(click.Group):
    """A group whose `lazy` commands ({name: "module:attr" naming a command, or a function
    making one}) are imported when first used."""

    def __init__(self, *args, lazy: dict | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx):
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx, cmd_name):
        if cmd_name in self.lazy and cmd_name not in self.commands:
            command = self.lazy[cmd_name]
            if isinstance(command, str):
                module, attr = command.split(":")
                command = getattr(importlib.import_module(module), attr)
            self.add_command(command if isinstance(command, click.Command) else command(),
                             cmd_name)
        return super().get_command(ctx, cmd_name)


class DefaultToConvert(LazyGroup):
    """`freeze --ckpt ...` runs `convert`; `freeze targets`/`freeze inspect` run subcommands."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.list_commands(ctx) and args[0] not in ("--version",) and \
                not (args[0] in ("--help", "-h") and len(args) == 1):
            self._check_not_a_typo(ctx, args[0])
            args = ["convert", *args]
        return super().parse_args(ctx, args)

    def _check_not_a_typo(self, ctx, word: str) -> None:
        """`freeze inpsect m`: a word that is no file but close to a command is a usage error
        naming the command, not a model path."""
        import difflib

        if word.startswith("-") or "/" in word or os.path.lexists(os.path.expanduser(word)):
            return
        close = difflib.get_close_matches(word, [c for c in self.list_commands(ctx) if c != "convert"],
                                          n=1, cutoff=0.6)
        if close:
            raise click.UsageError(f"unknown command '{word}'; did you mean {close[0]}?", ctx)

    def make_context(self, *args, **kwargs):
        with closed_pipe_ok():  # `freeze --help | head -1`
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx):
        with closed_pipe_ok():  # a subcommand's --help, or its output
            return super().invoke(ctx)

    def format_help(self, ctx, formatter):
        """`freeze --help`: both usages, what `freeze PATH` does, the commands, then `convert`'s
        options by group, the terms the output uses and the exit codes."""
        convert_cmd = self.get_command(ctx, "convert")
        with click.Context(convert_cmd, info_name=ctx.info_name, parent=None) as sub:
            convert_cmd.format_usage(sub, formatter)
            formatter.write_usage(ctx.info_name or "freeze", "COMMAND [ARGS]...", prefix="   or: ")
            convert_cmd.format_help_text(sub, formatter)
            self.format_commands(ctx, formatter)
            convert_cmd.format_options(sub, formatter)
        from graphfreeze_cli.terms import TERMS

        with formatter.section("Terms in the output"):
            formatter.write_dl([(term, meaning[0].upper() + meaning[1:] + ".")
                                for term, meaning in TERMS])
        formatter.write_paragraph()
        formatter.write_text(EXIT_CODES)


@click.group(cls=DefaultToConvert, lazy=LAZY, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="graphfreeze")
def main() -> None:
    """Freeze TensorFlow models into clean, verified, device-ready artifacts."""


def _source_options(values: dict, extra) -> dict:
    """The source options given on the command line (each source takes those it knows)."""
    from graphfreeze.io import tomlread as tomllib

    given = flags.given("source", values)
    for item in extra:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.UsageError(f"--source-option {item}: write it as KEY=VALUE")
        try:
            given[key.strip()] = tomllib.loads(f"v = {value}")["v"]
        except tomllib.TOMLDecodeError:
            given[key.strip()] = value
    return given


def source_flags(func):
    """Options naming the model's source kind and the options sources take."""
    func = click.option("--unsafe", is_flag=True,
                        help="Trust the model: allow code stored in it (Keras Lambda layers) and "
                             "ops that touch the host's files or network.")(func)
    func = click.option("--source-option", "source_option", multiple=True, metavar="KEY=VALUE",
                        help="An option of a plugin source (repeatable).")(func)
    func = flags.options("source")(func)
    return click.option("--kind", default="auto", show_default=True, metavar="NAME",
                        help="Source kind (see `freeze targets`); default: detected from "
                             "files.")(func)


@main.command("convert", cls=flags.GroupedOptions)
@click.argument("path", required=False, metavar="[PATH]")
@flags.kind_flags
@source_flags
@flags.name_flags
@click.option("--target", "targets", multiple=True, metavar="NAMES",
              help="Target(s), comma-separated or repeated (default: android). See `freeze targets`.")
@click.option("-o", "--output", metavar="PATH",
              help="Output file (one target) or DIR/ (default: beside the model).")
@flags.options("run")
@click.option("--force", is_flag=True, help="Overwrite existing outputs.")
@click.option("--no-verify", is_flag=True, help="Skip comparing against the original model.")
@flags.options("stage")
@click.option("--debug", is_flag=True, help="Show tracebacks and TensorFlow logs.")
def convert_command(path, kind, source_option, unsafe, outputs, inputs, targets, output, force,
                    no_verify, debug, **values):
    """Freeze a model: variables to constants, training ops stripped, exported, verified.

    PATH is any model (kind detected from the files); or name it with --ckpt, --saved-model,
    --keras or --graph.

    \b
    Examples:
      freeze --ckpt model.ckpt-200 --outputs probs
      freeze export/1 --target android,tflite,onnx
    """
    from graphfreeze.convert import Request
    from graphfreeze.names import parse_names

    named = flags.kinds_given(values)
    kind_flags = ", ".join(s.flag for s in flags.sources() if s.flag)
    if kind != "auto" and named:
        raise click.UsageError(f"give --kind with PATH, not with {kind_flags} (they name the "
                               "kind already)")
    given = [(kind, path)] if path else []
    given += named
    if len(given) != 1:
        raise click.UsageError(f"give one model: PATH, {kind_flags}")
    kind, source = given[0]
    if targets and not parse_names(targets):
        raise click.UsageError("--target names no target; name one or more (see `freeze "
                               "targets`), or leave --target out for android")
    request = Request(source=source, kind=kind, unsafe=unsafe,
                      source_options=_source_options(values, source_option),
                      outputs=tuple(parse_names(outputs)), inputs=tuple(parse_names(inputs)),
                      targets=tuple(parse_names(targets)) or ("android",),
                      output=output, force=force, verify=not no_verify,
                      stage_options=flags.given("stage", values),
                      run_options=flags.given("run", values), flags=True)
    run(lambda: _convert(request, debug), debug)


def _convert(request, debug: bool):
    import dataclasses

    from graphfreeze.convert import execute, prepare
    from graphfreeze.process.quiet import native_stderr_off, quiet_when_imported
    from graphfreeze_cli import show
    from graphfreeze_cli.running import committing

    with native_stderr_off():  # an option check may import TensorFlow (--opset: tf2onnx's range)
        prepared = prepare(request)  # a wrong name, path or option: said before TF loads
    if prepared.run.report:  # the run as `freeze batch` reports a job
        from graphfreeze.batch.report import one_run

        prepared = dataclasses.replace(prepared, reporter=one_run)
    if not debug:  # imported by the stage that needs it, if one does
        quiet_when_imported()
    err = show.Console(stderr=True)
    with err.status("loading", spinner="dots") as status:
        written = execute(prepared, on_stage=lambda t, s: status.update(f"{t}: {s}"),
                          on_commit=committing)
    show.written(written, prepared.run.report)


@main.command("targets")
def targets_command():
    """List the targets and the stages each runs, and the model sources."""

    def list_them():
        from graphfreeze.registry import Registry
        from graphfreeze_cli import show

        show.targets(Registry.default())

    run(list_them, debug=False, private_tmp=False)


@main.command("inspect")
@click.argument("path", metavar="PATH")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (stable keys).")
@click.option("--device", type=click.Choice(["gpu"]),
              help="Which ops the device's delegate takes and which fall back to the CPU, and "
                   "why (a .tflite, or the model converted to TFLite in memory).")
@click.option("--no-gaps", is_flag=True,
              help="Skip the per-target op gaps (and TensorFlow's trial import); shapes from "
                   "the graph's records: a checkpoint is read without importing TensorFlow.")
@source_flags
@flags.name_flags
@click.option("--debug", is_flag=True, help="Show tracebacks and TensorFlow logs.")
def inspect_command(path, as_json, device, no_gaps, kind, source_option, unsafe, outputs, inputs,
                    debug, **values):
    """Tell what a model is: kind, variables, signatures, likely inputs and outputs, op counts,
    size, and per target the ops it cannot take. --outputs and --inputs choose the graph
    --device converts."""
    from graphfreeze.names import parse_names

    if no_gaps and device:
        raise click.UsageError("--device judges the device's gaps; give it without --no-gaps")
    if (outputs or inputs) and not device:
        raise click.UsageError("--outputs and --inputs choose what --device converts; the "
                               "report covers the whole model")

    def describe():
        import contextlib
        import json

        from graphfreeze.inspect.report import device_report, inspect
        from graphfreeze.process.quiet import native_stderr_off
        from graphfreeze_cli import show

        options = _source_options(values, source_option)
        given = {"kind": kind, "options": options, "unsafe": unsafe, "strict": True,
                 "on_load": lambda: quiet_tensorflow(debug)}  # a wrong path: said first
        if device:
            report = device_report(path, device, **given, outputs=tuple(parse_names(outputs)),
                                   inputs=tuple(parse_names(inputs)))
        elif no_gaps:  # TensorFlow only if a shape is not recorded: imported quietly then
            with contextlib.nullcontext() if debug else native_stderr_off():
                report = inspect(path, **{**given, "on_load": lambda: None}, gaps=False)
        else:
            report = inspect(path, **given)
        if as_json:
            click.echo(json.dumps(report, indent=2, sort_keys=True))
        elif device:
            show.device(report)
        else:
            show.report(report)

    run(describe, debug)



def _reduce_command():
    """`freeze reduce` takes `freeze`'s own source flags."""
    from graphfreeze_cli.reduce import reduce_command

    return reduce_command(source_flags, _source_options)


main.lazy["reduce"] = _reduce_command


if __name__ == "__main__":
    main()
