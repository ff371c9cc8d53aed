"""TensorFlow's generated protobuf modules, copied from the pinned TensorFlow wheel by
`python -m graphfreeze.proto.snapshot` (do not edit). Generated from TensorFlow's `.proto` files,
Copyright The TensorFlow Authors, Apache License 2.0 (as the TensorFlow wheel ships them)."""
