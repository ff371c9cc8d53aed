"""Shape inference without TensorFlow: TensorFlow's shape functions for the ops inference graphs
are made of, run as its importer runs them (input types checked, `_output_shapes` merged), so a
graph of those ops is checked and its inputs' and outputs' shapes known without importing
TensorFlow. An op without a function here, or an input whose value TensorFlow might work out
where this cannot, answers `Unsupported`: TensorFlow then does it (tests/graph/shapes compares
both on every op here, broken inputs included)."""
