"""TensorFlow's generated protobuf modules, copied by `graphfreeze.proto.snapshot` (do not edit)."""
