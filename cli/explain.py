"""`freeze explain ARTIFACT`: the artifact's graph in Model Explorer, coloured by where it
diverges from the original (the overlays `--explain` wrote), served on 127.0.0.1 until Ctrl-C."""

from __future__ import annotations

import click
from graphfreeze_cli.running import run


@click.command("explain")
@click.argument("artifact", metavar="ARTIFACT")
@click.option("--port", type=click.IntRange(0, 65535), default=None, metavar="N",
              help="Serve on 127.0.0.1:N (0: any free port; default: the first free of "
                   "8080-8099).")
@click.option("--browser", is_flag=True, help="Also open the page in the default browser.")
@click.option("--debug", is_flag=True, help="Show tracebacks.")
def explain_command(artifact, port, browser, debug):
    """Open ARTIFACT (a .tflite, frozen .pb or SavedModel written with --explain) in Model
    Explorer with its overlays: each node's difference from the original and, for quantized
    TFLite, each layer's quantization error; the worst node selected. Needs
    graphfreeze[explorer]."""

    def serve():
        import sys
        import time

        from graphfreeze.explain import serve as explorer
        from graphfreeze.io import storage
        from graphfreeze_cli.running import committing, stop_signal

        explained = explorer.prepare(storage.expand(artifact))
        chosen = explorer.pick_port(port)
        with explorer.serving(explained, chosen) as alive:
            click.echo(f"Model Explorer: {explorer.url(explained, chosen)}")
            for kind, worst in sorted(explained.worst.items()):
                node, name, value = worst or ("", "", 0)
                click.echo(f"  {kind}: {explained.matched[kind]} nodes coloured, " + (
                    f"worst {name} ({value:g}){', selected' if node == explained.selected else ''}"
                    if worst else "every one exact"))
            click.echo(f"serving on 127.0.0.1:{chosen} only; Ctrl-C stops it")
            sys.stdout.flush()  # the URL now, also when stdout is a pipe or a file
            if browser:
                import webbrowser

                webbrowser.open_new_tab(explorer.url(explained, chosen))
            committing()  # nothing to write: a signal from now on stops the server cleanly
            while stop_signal() is None and alive():
                time.sleep(0.2)
        if stop_signal() is None:
            from graphfreeze.errors import ConfigError

            raise ConfigError(f"Model Explorer's server on 127.0.0.1:{chosen} stopped by itself")
        click.echo("Model Explorer stopped", err=True)

    run(serve, debug)
