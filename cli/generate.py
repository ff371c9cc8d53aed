"""`freeze generate ARTIFACT --prompt-ids 1,2,3`: a language-model artifact's own generation loop
(prefill, then decode with its KV cache), greedy: the tokens it makes and how fast."""

from __future__ import annotations

import click
from graphfreeze_cli.running import UsageRefused, quiet_tensorflow, run


def _ids(text: str) -> list[int]:
    try:
        ids = [int(t) for t in text.replace(" ", "").split(",") if t]
    except ValueError:
        raise UsageRefused(f"--prompt-ids {text}: give token ids as integers, e.g. 1,2,3") from None
    if not ids:
        raise UsageRefused("--prompt-ids: give at least one token id, e.g. 1,2,3")
    return ids


@click.command("generate")
@click.argument("artifact", metavar="ARTIFACT")
@click.option("--prompt-ids", required=True, metavar="IDS",
              help="The prompt as token ids, comma-separated (1,2,3).")
@click.option("--max-new-tokens", default=32, show_default=True, type=click.IntRange(min=1),
              help="Tokens to generate after the prompt.")
@click.option("--json", "as_json", is_flag=True, help="Print the tokens and timings as JSON.")
@click.option("--debug", is_flag=True, help="Show tracebacks and runtime logs.")
def generate_command(artifact, prompt_ids, max_new_tokens, as_json, debug):
    """Run a language-model ARTIFACT (a litert-lm or onnx-lm target's, with its sidecar beside
    it) greedily on --prompt-ids and print the new tokens and decode tokens/s."""

    def go():
        import json

        from graphfreeze.errors import ConfigError, InputError, RunError, install_hint
        from graphfreeze.io import storage
        from graphfreeze.registry import Registry
        from graphfreeze.sidecar import read
        from graphfreeze.tensors import infos

        prompt = _ids(prompt_ids)
        path = storage.expand(artifact)
        quiet_tensorflow(debug)
        sidecar = read(path)
        fmt = Registry.default().format(sidecar["format"])
        if fmt.missing():
            raise ConfigError(f"{artifact}: the {fmt.name} format needs "
                              f"{', '.join(fmt.missing())}, not installed; {install_hint(fmt.extra)}")
        try:
            session = fmt.open(path, *(infos(sidecar[role]) for role in ("inputs", "outputs")))
            if not hasattr(session, "generate"):
                raise InputError(f"{artifact}: a {sidecar['target']} artifact, which does not "
                                 "generate; freeze generate runs a litert-lm or onnx-lm target's "
                                 "artifact")
            made = session.generate(prompt, max_new_tokens)
        except RunError as err:
            raise InputError(f"{artifact}: {err}") from err
        speed = made.tokens_per_second()
        if as_json:
            click.echo(json.dumps({"tokens": made.tokens, "tokens_per_second": speed,
                                   "prefill_seconds": made.prefill_seconds}, indent=2))
            return
        click.echo(" ".join(str(t) for t in made.tokens))
        click.echo(f"{len(made.tokens)} tokens; prefill {made.prefill_seconds * 1000:.1f} ms"
                   + (f", decode {speed:.1f} tokens/s" if speed else ""))

    run(go, debug)
