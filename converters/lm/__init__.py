"""Causal language models, whatever format they go to: a keras-hub CausalLM's KV cache layout
(layout.py), its cached forward pass as one step over per-layer caches (step.py), and greedy
generation over a runtime's step (generation.py): the floor the litert-lm and onnx-lm formats
and verify_generation share."""
