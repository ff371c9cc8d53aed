"""The TensorFlow-free floor: TensorFlow's file formats read (and GraphDefs written) with
protobuf and numpy alone.

- `tf/`: TensorFlow's own generated `_pb2` modules (GraphDef, MetaGraphDef, SavedModel, OpDef,
  BundleEntryProto, ...), copied from the pinned TensorFlow by `snapshot.py`; once TensorFlow is
  imported too, its modules and these give the same classes (one descriptor pool, same files).
- `ops.py`: the op registry and graph versions (op_defs.pb, registry.json; `snapshot.py`).
- `dtypes.py`, `tensors.py`: DataType names and sizes; a TensorProto's numpy value.
- `table.py`, `bundle.py`: the V2 checkpoint (`.index` table, `.data-*` shards); `slices.py`:
  what a V1 checkpoint lists.
"""
