"""The repro script: the stock converter on the reduced `.pb`, as a user would call it, with
the target's settings, written by the target's format (its folder's `repro.py`: `script(options,
pb, inputs, outputs, compare)`: the conversion, calling `failed(err)` on the converter's error,
and to compare, `converted(feeds)`); for a divergence, the converted model run on the `.npz`
against TensorFlow, exit 1 beyond the tolerance. A format without one: the script says it
converts. Its last line starts with `REPRO:` and says what happened."""

from __future__ import annotations

HEAD = '''"""Reproduces, with the stock converter: {failure}
(reduced by `freeze reduce --target {target}`: {nodes})
Run: python {name}"""
import os
import sys

import numpy as np
import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))
PB = os.path.join(HERE, {pb!r})
INPUTS = {inputs!r}  # name -> shape (None: any size)
OUTPUTS = {outputs!r}
NPZ = {npz!r}
FEEDS = dict(np.load(os.path.join(HERE, NPZ))) if NPZ else None
graph_def = tf.compat.v1.GraphDef.FromString(open(PB, "rb").read())


def failed(err):
    print(f"REPRO: {{type(err).__name__}}: {{' '.join(str(err).split())[:3000]}}")
    sys.exit(2)
'''

COMPARE = '''
want = tf.compat.v1.Session(graph=tf.Graph()).__enter__()
tf.graph_util.import_graph_def(graph_def, name="")
want = want.run([k + ":0" for k in OUTPUTS], {{k + ":0": v for k, v in FEEDS.items()}})
rows = len(next(iter(FEEDS.values())))
got = [np.concatenate(parts) for parts in zip(*[converted({{k: v[i:i + 1] for k, v in FEEDS.items()}})
                                                for i in range(rows)], strict=True)]
worst = max(float(np.abs(w.astype(np.float64) - g).max()) for w, g in zip(want, got))
mean = max(float(np.abs(w.astype(np.float64) - g).mean()) for w, g in zip(want, got))
if (ATOL is not None and worst > ATOL) or (MEAN is not None and mean > MEAN):
    print(f"REPRO: diverges at {{', '.join(OUTPUTS)}}: max |diff| {{worst:.3g}}, "
          f"mean |diff| {{mean:.3g}} (tolerance {{ATOL}}, mean {{MEAN}})")
    sys.exit(1)
print(f"REPRO: agrees (max |diff| {{worst:.3g}}, mean |diff| {{mean:.3g}})")
'''


def script(fmt, options, pb: str, npz: str | None, inputs, outputs, failure: str,
           target: str, atol, mean) -> str:
    """The repro script's text for format `fmt` (a plugins.Format, or None)."""
    name = pb[:-3] + ".py"
    text = HEAD.format(failure=failure.replace('"""', "'''"), target=target, name=name, pb=pb,
                       inputs=dict(inputs), outputs=outputs, npz=npz,
                       nodes="a frozen graph of " + ", ".join(outputs))
    stock = fmt.part("repro", "script") if fmt is not None else None
    if stock is not None:
        text += stock(options, pb, inputs, outputs, bool(npz))
        if npz:
            return text + f"\nATOL, MEAN = {atol!r}, {mean!r}\n" + COMPARE.format()
    return text + '\nprint("REPRO: converts")\n'
