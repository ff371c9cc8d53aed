"""`freeze reduce`: a failing conversion (or verification) shrunk to the smallest subgraph of the
frozen graph that still fails the same way, written as a small frozen `.pb` (+ its inputs as an
`.npz` for divergences) with the one command that reproduces it with the stock converter.

trials.py (each trial a real `freeze` run of the target in a child process), signature.py (what
"fails the same way" means), cut.py (subgraphs: a node as the output, cut points as
placeholders), search.py (the delta debugging), repro.py (the files and the stock command),
stock.py (the stock converter's script), run.py (all of it in order), batch.py
(`freeze batch --reduce`).
"""
