"""graphfreeze: freeze TensorFlow models into clean, verified, device-ready artifacts.

Importing it changes nothing of the process (no environment variable, no other package's
`sys.modules` entry): the environment TensorFlow, OpenVINO and onnxruntime read when imported is
set by `graphfreeze.process.environment.set_up()`, which a run calls (the CLI at start,
`convert.prepare`/`execute`, wherever graphfreeze first imports TensorFlow).
"""

__version__ = "0.1.0"  # the package's version (pyproject.toml reads it: declared once)
