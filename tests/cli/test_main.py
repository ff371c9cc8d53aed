"""`freeze` starts with what the command run needs: `freeze --help` imports no format, numpy or
TensorFlow, `freeze scan FILE` none of them either for a checkpoint, a SavedModel or a frozen
graph (each subcommand is imported when it runs)."""

from __future__ import annotations

import json
import subprocess
import sys

import click
import pytest
from graphfreeze_cli.main import main

CODE = """import json, sys
from graphfreeze_cli.main import main
try:
    main(prog_name="freeze")
finally:
    print(json.dumps(sorted(sys.modules)))
"""
HEAVY = ("tensorflow", "numpy", "rich", "keras", "tf_keras", "graphfreeze.formats.",
         "graphfreeze.stages", "graphfreeze.convert")


def loaded(*args: str, cwd=None) -> tuple[int, str, set[str]]:
    """exit code, output and the modules loaded by `freeze ARGS` in a process of its own."""
    run = subprocess.run([sys.executable, "-c", CODE, *args], capture_output=True, text=True,
                         cwd=cwd)
    *lines, modules = run.stdout.splitlines()
    return run.returncode, "\n".join(lines), set(json.loads(modules))


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.startswith(HEAVY) or m in ("numpy", "tensorflow"))


@pytest.mark.parametrize("args", [("--help",), ("scan", "--help"), ("inspect", "--help")])
def test_help_imports_no_format_numpy_or_tensorflow(args):
    code, out, modules = loaded(*args)
    assert code == 0 and "Usage: freeze" in out
    assert heavy(modules) == [] and "graphfreeze.registry" not in modules


def test_scan_imports_what_scanning_needs(samples, other_samples):
    paths = [samples / "iris" / "model.ckpt-200", other_samples / "frozen.pb",
             other_samples / "tf2_savedmodel", other_samples / "model.keras"]
    code, out, modules = loaded("scan", *map(str, paths))
    assert code == 0 and out.count("ok  ") == 4, out
    assert heavy(modules) == []
    lazy = {m for m in modules if m.startswith("graphfreeze_cli.")}
    assert lazy == {"graphfreeze_cli.main", "graphfreeze_cli.flags", "graphfreeze_cli.running",
                    "graphfreeze_cli.scan"}


def test_every_lazy_command_is_listed_under_its_name():
    with click.Context(main) as ctx:
        lazy = set(main.lazy)
        assert {"batch", "cache", "explain", "reduce", "scan", "verify"} <= lazy
        for name in lazy:
            command = main.get_command(ctx, name)
            assert isinstance(command, click.Command) and command.name == name
        assert lazy < set(main.list_commands(ctx))


@pytest.mark.parametrize("name", ["iris", "cnn_v2"])
def test_inspect_no_gaps_is_the_report_without_gaps_and_without_tensorflow(samples, freeze,
                                                                           name):
    path = str(samples / name / "model.ckpt-200")
    code, out, modules = loaded("inspect", "--no-gaps", "--json", path)
    assert code == 0 and [m for m in heavy(modules) if not m.startswith("rich")] == [], out
    quick, full = json.loads(out), json.loads(freeze("inspect", "--json", path).output)
    assert full.pop("targets") and "targets" not in quick
    assert quick == full


@pytest.mark.parametrize("given", ["", " , "])
def test_a_target_list_naming_nothing_is_refused(given):
    """An empty shell variable as --target would have meant android, silently."""
    from click.testing import CliRunner

    result = CliRunner().invoke(main, ["model.ckpt-200", "--outputs", "probs", "--target", given])
    assert result.exit_code == 2 and "--target names no target" in result.output


def test_help_puts_the_commands_first_then_the_options_by_group_and_the_terms():
    code, out, _ = loaded("--help")
    lines = out.splitlines()
    assert code == 0 and lines[1].strip() == "or: freeze COMMAND [ARGS]..."
    commands = lines.index("Commands:")
    assert commands < 20 and any(line.startswith("  verify ") for line in lines[commands:])
    titles = [line for line in lines if line.endswith("options:")]
    assert titles == ["Model options:", "Names options:", "Targets and files options:",
                      "Verification options:", "Conversion (targets that take them) options:",
                      "Benchmark options:", "Other options:"]
    verification = out.split("Verification options:")[1].split("options:")[0]
    assert "--tolerance" in verification and "--save-golden" in verification
    terms = out.split("Terms in the output:")[1]
    for term in ("freeze convert", "gpu: N/M ops", "rmse/scale", "all checked ops convert"):
        assert term in terms
