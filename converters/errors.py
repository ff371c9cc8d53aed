"""One exception hierarchy; every message names the file or node at fault and the fix; and
every exit code the `freeze` command has, in one place."""

EXIT_JOBS_FAILED = 7  # freeze batch: some jobs failed (each job's own error is in the reports)
EXIT_OVER_BUDGET = 8  # freeze batch: a job broke a --fail-on budget
EXIT_CODES = """Exit codes: 0 ok, 1 internal error, 2 usage, 3 bad input model or name,
4 output exists or unwritable, 5 verification mismatch, 6 target/plugin/manifest configuration,
7 batch: some jobs failed, 8 batch: a budget was broken."""


class GraphFreezeError(Exception):
    """Base class: `str(err)` is the one line the CLI prints."""

    exit_code = 1


class InputError(GraphFreezeError):
    """The model files or the names asked for are wrong."""

    exit_code = 3


class OutputError(GraphFreezeError):
    """An output exists (without --force) or cannot be written."""

    exit_code = 4


class VerificationError(GraphFreezeError):
    """The converted model's outputs differ from the original's beyond tolerance. `details`:
    lines saying where it diverges; `divergence`: the same as data."""

    exit_code = 5
    details: list[str] = []
    divergence: dict | None = None


class RunError(GraphFreezeError):
    """A format's runtime cannot run the artifact (`plugins.Session`): str() says why, without
    the path; verification and `freeze verify` word it for their callers."""

    exit_code = 3


class ConfigError(GraphFreezeError):
    """A target, stage, option or plugin is malformed or unknown."""

    exit_code = 6


def first_line(err: BaseException) -> str:
    """The first line of an exception's message (TensorFlow's `.message` if it has one), or its
    type's name: what goes inside our one-line errors. TensorFlow's internal text is left out
    (`{{function_node __wrapped__...}}`, NodeDef dumps, `[Op:...]`, a graph execution error's
    Python frames): a node is named as `node 'X'`."""
    text = (getattr(err, "message", None) or str(err)).strip()
    lines = [line.strip() for line in plain(text).splitlines() if line.strip()]
    return lines[0] if lines else type(err).__name__


def plain(text: str) -> str:
    """TensorFlow's error text without its internals (see first_line)."""
    import re

    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if lines and lines[0].startswith("Graph execution error"):  # "Detected at node ... frames
        nodes = [i for i, line in enumerate(lines) if re.match(r"Node: '[^']*'$", line)]
        if nodes and nodes[-1] + 1 < len(lines):  # ... Node: 'X' / the kernel's message"
            node = lines[nodes[-1]][len("Node: '"):-1]
            text = f"node '{node}': {lines[nodes[-1] + 1]}"
        else:
            rest = [line for line in lines[1:] if not line.startswith(("Detected at", "File ",
                                                                        "<stack", "[["))]
            text = rest[-1] if rest else lines[0]
    text = re.sub(r"\{\{function_node [^}]*\}\}\s*", "", text)
    text = re.sub(r"\s*\[\[\{\{node [^}]*\}\}\]\]", "", text)
    text = _drop_node_defs(text)
    text = re.sub(r"\{\{node ([^}]*)\}\}", r"node '\1'", text)
    return re.sub(r"\s*\[Op:[^\]]*\]( name:( [^\s,;)]+)?)?", "", text).strip()


def _drop_node_defs(text: str) -> str:
    """`'{{node X}} = Op[attrs](inputs)'` -> `node 'X'` (attrs may nest brackets)."""
    import re

    out, at = [], 0
    for match in re.finditer(r"'?\{\{node ([^}]*)\}\} = [\w>]+", text):
        if match.start() < at:
            continue
        end = match.end()
        for opening, closing in (("[", "]"), ("(", ")")):
            if text[end:end + 1] == opening:
                depth = 0
                while end < len(text):
                    depth += {opening: 1, closing: -1}.get(text[end], 0)
                    end += 1
                    if depth == 0:
                        break
        if match.group(0).startswith("'") and text[end:end + 1] == "'":
            end += 1
        out += [text[at:match.start()], f"node '{match.group(1)}'"]
        at = end
    return "".join(out) + text[at:]


def install_hint(extra: str) -> str:
    """`pip install ...` that adds `extra` to graphfreeze as this environment installed it (a
    checkout, editable or not, a wheel file, a git URL; PEP 610's direct_url.json), with this
    environment's own pip. graphfreeze is not on PyPI: a bare `graphfreeze[extra]` would find
    another project's package, so without a record it names what to put there."""
    import json
    import re
    import sys
    from importlib import metadata
    from urllib.parse import unquote, urlparse

    pip = f"{sys.executable} -m pip install"
    record = {}  # (a checkout's own graphfreeze.egg-info, first on sys.path there, has none)
    for dist in metadata.distributions(name="graphfreeze"):
        try:
            record = json.loads(dist.read_text("direct_url.json") or "{}")
        except ValueError:
            continue
        if record:
            break
    url = record.get("url", "")
    path = unquote(urlparse(url).path) if url.startswith("file://") else ""
    if "vcs_info" in record:  # (credentials in the URL stay out of messages and CI logs)
        url = re.sub(r"//[^/@]*@", "//", url)
        commit = record["vcs_info"].get("commit_id")
        return f"{pip} 'graphfreeze[{extra}] @ {record['vcs_info']['vcs']}+{url}" \
               f"{'@' + commit if commit else ''}'"
    if path and "dir_info" in record:
        editable = "-e " if record["dir_info"].get("editable") else ""
        return f"{pip} {editable}'{path}[{extra}]'"
    if path:
        return f"{pip} '{path}[{extra}]'"
    return f"{pip} 'CHECKOUT_OR_WHEEL[{extra}]' (the graphfreeze checkout or the wheel `make " \
           "dist` builds, as you installed it)"
