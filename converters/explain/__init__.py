"""Where an artifact diverges, drawn on its graph: Model Explorer overlays (`overlay.py`, written
by `--explain`), the graph Model Explorer reads for each format (`graphs.py`), and `freeze
explain ARTIFACT` (`serve.py`: Model Explorer's server on 127.0.0.1 with the artifact and its
overlays loaded)."""
