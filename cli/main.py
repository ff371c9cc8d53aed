"""`freeze`: the command line. Thin: parse, call graphfreeze, print. No TensorFlow import here."""

from __future__ import annotations

import os
import sys

import click
from graphfreeze import __version__
from graphfreeze.errors import GraphFreezeError, first_line

if "--debug" not in sys.argv:  # before TensorFlow is ever imported: keep its C++ logs quiet
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# tf.keras as tf_keras (Keras 2): what tensorflow-model-optimization needs; Keras 3 `.keras`
# files are loaded with the `keras` package itself.
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

EXIT_CODES = """Exit codes: 0 ok, 1 internal error, 2 usage, 3 bad input model or name,
4 output exists or unwritable, 5 verification mismatch, 6 target/plugin configuration."""


class DefaultToConvert(click.Group):
    """`freeze --ckpt ...` runs `convert`; `freeze targets`/`freeze inspect` run subcommands."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("--version",) and \
                not (args[0] in ("--help", "-h") and len(args) == 1):
            args = ["convert", *args]
        return super().parse_args(ctx, args)

    def format_help(self, ctx, formatter):
        convert_cmd = self.commands["convert"]
        with click.Context(convert_cmd, info_name=ctx.info_name, parent=None) as sub:
            convert_cmd.format_usage(sub, formatter)
            convert_cmd.format_help_text(sub, formatter)
            convert_cmd.format_options(sub, formatter)
        self.format_commands(ctx, formatter)
        formatter.write_paragraph()
        formatter.write_text(EXIT_CODES)


@click.group(cls=DefaultToConvert, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="graphfreeze")
def main() -> None:
    """Freeze TensorFlow models into clean, verified, device-ready artifacts."""


def _expand(path):
    return os.path.expanduser(path) if path and "://" not in path else path


def _split(values: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(v.strip() for value in values for v in value.split(",") if v.strip())


@main.command("convert")
@click.argument("path", required=False, metavar="[PATH]")
@click.option("--ckpt", "ckpt", metavar="PREFIX|MODEL_DIR",
              help="Checkpoint prefix (model.ckpt-200) or an Estimator-style model_dir.")
@click.option("--saved-model", metavar="DIR", help="SavedModel directory (TF1 or TF2).")
@click.option("--keras", "keras_file", metavar="FILE", help="Keras model file (.keras or .h5).")
@click.option("--graph", "graph_file", metavar="FILE", help="Frozen graph (.pb or .pbtxt).")
@click.option("--meta", metavar="PATH", help="Meta graph file (default: PREFIX.meta).")
@click.option("--step", type=int, metavar="N", help="Checkpoint step to use from a model_dir.")
@click.option("--tag", default="serve", show_default=True, help="SavedModel meta graph tag.")
@click.option("--signature", default="serving_default", show_default=True,
              help="SavedModel signature.")
@click.option("--custom-objects", multiple=True, metavar="MODULE:ATTR",
              help="Keras custom layer/function to load with (repeatable).")
@click.option("--unsafe", is_flag=True,
              help="Keras: allow loading code stored in the file (Lambda layers).")
@click.option("--outputs", "outputs", multiple=True, metavar="NAMES",
              help="Output node or tensor names, comma-separated (probs or probs:0).")
@click.option("--inputs", "inputs", multiple=True, metavar="NAMES",
              help="Input names (default: the placeholders the outputs need).")
@click.option("--target", "targets", multiple=True, metavar="NAMES",
              help="Target(s), comma-separated or repeated (default: android). See `freeze targets`.")
@click.option("-o", "--output", metavar="PATH",
              help="Output file (one target) or DIR/ (default: beside the model).")
@click.option("--force", is_flag=True, help="Overwrite existing outputs.")
@click.option("--no-verify", is_flag=True, help="Skip comparing against the original model.")
@click.option("--tolerance", type=float, metavar="X",
              help="Max abs difference allowed by verification (default: the target's).")
@click.option("--as-text", is_flag=True, help="server: write saved_model.pbtxt (text) instead.")
@click.option("--opset", type=int, metavar="N",
              help="onnx: ONNX opset (default: newest tf2onnx and onnxruntime both support).")
@click.option("--allow-tf-ops", is_flag=True,
              help="tflite*: let ops TFLite lacks run as TensorFlow kernels (SELECT_TF_OPS).")
@click.option("--calibration", metavar="FILE.npz",
              help="edge-int8: representative inputs, one array per input name.")
@click.option("--debug", is_flag=True, help="Show tracebacks and TensorFlow logs.")
def convert_command(path, ckpt, saved_model, keras_file, graph_file, meta, step, tag, signature,
                    custom_objects, unsafe, outputs, inputs, targets, output, force, no_verify,
                    tolerance, as_text, opset, allow_tf_ops, calibration, debug):
    """Freeze a model: variables to constants, training ops stripped, exported, verified.

    PATH is any model (kind detected from the files); or name it with --ckpt, --saved-model,
    --keras or --graph.

    \b
    Examples:
      freeze --ckpt model_dir/model.ckpt-200 --outputs probs
      freeze export/1 --target android,tflite,onnx
    """
    from graphfreeze.convert import Request

    given = [(k, v) for k, v in (("auto", path), ("checkpoint", ckpt),
                                 ("saved_model", saved_model), ("keras", keras_file),
                                 ("frozen_graph", graph_file)) if v]
    if len(given) != 1:
        raise click.UsageError("give one model: PATH, --ckpt, --saved-model, --keras or --graph")
    kind, source = given[0]

    given = {"tolerance": tolerance, "opset": opset, "calibration": _expand(calibration),
             "as_text": as_text or None, "allow_tf_ops": allow_tf_ops or None}
    overrides = {k: v for k, v in given.items() if v is not None}
    request = Request(source=source, kind=kind, meta=meta, step=step, tag=tag,
                      signature=signature, custom_objects=tuple(custom_objects), unsafe=unsafe,
                      outputs=_split(outputs),
                      inputs=_split(inputs), targets=_split(targets) or ("android",),
                      output=output, force=force, verify=not no_verify, overrides=overrides)
    _run(lambda: _convert(request, debug), debug)


def _convert(request, debug: bool):
    from graphfreeze.convert import convert
    from rich.console import Console

    _quiet_tensorflow(debug)
    err = Console(stderr=True)
    with err.status("loading", spinner="dots") as status:
        written = convert(request, on_stage=lambda t, s: status.update(f"{t}: {s}"))
    _print_written(written)


def _print_written(written) -> None:
    from rich.console import Console

    out = Console(highlight=False, soft_wrap=True)
    first = written[0].sidecar
    for role in ("inputs", "outputs"):
        for t in first[role]:
            out.print(f"{role[:-1]:<7} {t['name']:<24} {t['dtype']:<8} {_shape(t['shape'])}")
    for w in written:
        car = w.sidecar
        out.print(f"[bold]{w.target}[/]: wrote {w.path} ({_size(car['bytes'])}, "
                  f"{car['node_count']} nodes)")
        if car["format"] == "frozen_graph_pb":
            feeds = ", ".join(f'"{t["node"]}"' for t in car["inputs"])
            fetches = ", ".join(f'"{t["node"]}"' for t in car["outputs"])
            out.print(f"  android: feed({feeds}), fetch({fetches})")
        if car["format"] == "saved_model":
            out.print(f"  signature {car['signature']}: inputs "
                      f"{', '.join(car['signature_inputs'])}; outputs "
                      f"{', '.join(car['signature_outputs'])}")
        if car.get("external_data"):
            out.print(f"  weights in {car['external_data']} (keep it beside the model)")
        out.print(f"  sidecar: {w.sidecar_path}")
    Console(highlight=False, width=max(out.width, 120)).print(_verification_table(written))
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    for warning in sorted({x for w in written for x in w.sidecar.get("warnings", [])}):
        err.print(f"[bold yellow]warning:[/] {warning}")


def _shape(shape) -> str:
    return "?" if shape is None else "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def _verification_table(written):
    from rich.table import Table

    table = Table(title="compared with the original on seeded inputs", title_justify="left")
    for col in ("target", "file", "size", "output", "max |diff|", "mean |diff|", "top-1", "ok"):
        table.add_column(col, no_wrap=col != "file", overflow="fold", justify="right" if col in (
            "size", "max |diff|", "mean |diff|", "top-1") else "left")
    for w in written:
        car = w.sidecar
        check = car.get("verification")
        name = car["file"]
        if not check:
            table.add_row(w.target, name, _size(car["bytes"]), "-", "not verified", "", "", "")
            continue
        for output, m in check["metrics"].items():
            top1 = m.get("top1_agreement")
            table.add_row(w.target, name, _size(car["bytes"]), output, f"{m['max_abs_diff']:.2g}",
                          f"{m['mean_abs_diff']:.2g}", "" if top1 is None else f"{top1:.0%}",
                          "yes" if check["passed"] else "no")
            name = ""  # the file once per target
    return table


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


@main.command("targets")
def targets_command():
    """List the targets and the stages each runs."""
    from rich.console import Console
    from rich.table import Table

    def show():
        from graphfreeze.registry import Registry

        registry = Registry.default()
        table = Table(title="graphfreeze targets", show_lines=False)
        for col in ("target", "description", "stages", "provider"):
            table.add_column(col)
        for name in registry.target_names():
            target = registry.target(name)
            stages = " → ".join(s.use for s in target.stages)
            table.add_row(name, target.description, stages, target.provider)
        Console(soft_wrap=True).print(table)

    _run(show, debug=False)


@main.command("inspect")
@click.argument("path", metavar="PATH")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (stable keys).")
@click.option("--tag", default="serve", show_default=True, help="SavedModel meta graph tag.")
@click.option("--meta", metavar="PATH", help="Checkpoint meta graph (default: PREFIX.meta).")
@click.option("--step", type=int, metavar="N", help="Checkpoint step in a model_dir.")
@click.option("--debug", is_flag=True, help="Show tracebacks and TensorFlow logs.")
def inspect_command(path, as_json, tag, meta, step, debug):
    """Tell what a model is: kind, variables, signatures, likely inputs and outputs, op counts,
    size, and per target the ops it cannot take."""

    def show():
        import json

        from graphfreeze.inspect import inspect

        _quiet_tensorflow(debug)
        report = inspect(path, tag=tag, meta=meta, step=step)
        if as_json:
            click.echo(json.dumps(report, indent=2, sort_keys=True))
        else:
            _print_report(report)

    _run(show, debug)


def _print_report(report: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    out = Console(highlight=False, soft_wrap=True, width=max(Console().width, 120))
    out.print(f"[bold]{report['path']}[/]: {report['kind'].replace('_', ' ')}, "
              f"{_size(report.get('size_bytes', 0))}")
    if report.get("tag_sets"):
        out.print("tag sets: " + "; ".join(",".join(t) for t in report["tag_sets"]))
    for sig in report.get("signatures", []):
        ins = ", ".join(f"{t['key']}={t['name']}" for t in sig["inputs"])
        outs = ", ".join(f"{t['key']}={t['name']}" for t in sig["outputs"])
        out.print(f"signature {sig['key']}: {ins} -> {outs}")
    table = Table(title="likely inputs and outputs", title_justify="left")
    for col in ("role", "name", "dtype", "shape"):
        table.add_column(col)
    for role in ("inputs", "outputs"):
        for t in report.get(role, []):
            label = t["name"] + (f" (key {t['key']})" if t.get("key") else "")
            table.add_row(role[:-1], label, t["dtype"] or "?", _shape(t["shape"]))
    out.print(table)
    if report.get("other_outputs"):
        out.print("other candidate outputs: " + ", ".join(report["other_outputs"]))
    if report.get("flags"):
        out.print("flags folded at inference: " +
                  ", ".join(f"{k}={v}" for k, v in report["flags"].items()))
    variables = report.get("variables", [])
    total = sum(v["bytes"] for v in variables)
    table = Table(title=f"variables: {len(variables)}, {_size(total)}", title_justify="left")
    for col in ("name", "shape", "dtype", "bytes"):
        table.add_column(col, justify="right" if col == "bytes" else "left")
    for v in variables[:20]:
        table.add_row(v["name"], _shape(v["shape"]), v["dtype"], _size(v["bytes"]))
    if len(variables) > 20:
        table.add_row(f"... {len(variables) - 20} more (--json lists all)", "", "", "")
    out.print(table)
    ops = sorted(report.get("op_counts", {}).items(), key=lambda kv: (-kv[1], kv[0]))
    out.print(f"ops ({sum(n for _, n in ops)} nodes): " +
              ", ".join(f"{op} {n}" for op, n in ops[:15]) + (" ..." if len(ops) > 15 else ""))
    targets = report.get("targets", {})
    onnx = targets.get("onnx", {})
    out.print(f"onnx (opset {onnx.get('opset')}): " +
              (", ".join(onnx.get("unsupported", [])) or "all ops convert"))
    tflite = targets.get("tflite", {})
    text = ", ".join(tflite.get("unsupported", [])) or "all checked ops convert"
    if tflite.get("needs_allow_tf_ops"):
        text += f" (with --allow-tf-ops: {', '.join(tflite['needs_allow_tf_ops'])})"
    if tflite.get("unchecked"):
        text += f"; unchecked (only inside functions): {', '.join(tflite['unchecked'])}"
    out.print(f"tflite builtins: {text}")


def _quiet_tensorflow(debug: bool) -> None:
    """Import TensorFlow with its C++ start-up chatter (oneDNN, CUDA probes) kept off stderr.

    TF 2.21 logs those through absl before TF_CPP_MIN_LOG_LEVEL applies, so the import and the
    first device initialisation run with file descriptor 2 pointed at /dev/null.
    """
    if debug:
        return
    import logging

    from graphfreeze.quiet import native_stderr_off

    logging.getLogger("tensorflow").setLevel(logging.ERROR)
    with native_stderr_off():
        import tensorflow as tf

        tf.config.list_physical_devices()
    tf.get_logger().setLevel("ERROR")
    tf.autograph.set_verbosity(0)


class _Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP: unwound like Ctrl-C, so temporaries are removed and nothing is written."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _stop_on(signum, frame) -> None:
    raise _Stopped(signum)


def _run(action, debug: bool) -> None:
    import signal

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _stop_on)
    try:
        action()
    except GraphFreezeError as err:
        if debug:
            raise
        click.echo(f"error: {err}", err=True)
        sys.exit(err.exit_code)
    except KeyboardInterrupt as err:
        click.echo("interrupted; nothing written", err=True)
        sys.exit(128 + getattr(err, "signum", 2))
    except Exception as err:  # a bug: one line, the traceback with --debug
        if debug:
            raise
        click.echo(f"internal error: {type(err).__name__}: {first_line(err)} (rerun with --debug)",
                   err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
