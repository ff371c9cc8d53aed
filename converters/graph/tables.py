"""Lookup tables frozen into the graph, as freeze_graph keeps TF1 tables: a `HashTableV2` node,
its keys and values as constants, a `LookupTableImportV2` filling it, and one `init_all_tables`
NoOp that runs every import (the name `tf.compat.v1.tables_initializer` gives it).

A TF2 function reads a table through a captured resource handle, which TensorFlow's freezing
leaves as a placeholder nobody can feed. `freeze_tables` exports each captured table's contents
(`LookupTableExportV2` on the loaded table) and puts the table itself in its place. Tables whose
contents change at run time (`MutableHashTable`, `DenseHashTable`) cannot be constants: refused.
Whoever runs the frozen graph runs `init_all_tables` once before the outputs (`run_init`).
"""

from __future__ import annotations

from graphfreeze.errors import InputError

TABLE_INIT = "init_all_tables"
FIND_OPS = ("LookupTableFindV2", "LookupTableFind")
READ_OPS = (*FIND_OPS, "LookupTableSizeV2", "LookupTableExportV2")
WRITE_OPS = ("LookupTableInsertV2", "LookupTableRemoveV2", "LookupTableImportV2",
             "InitializeTableV2", "InitializeTableFromTextFileV2")
MUTABLE_KINDS = {"MutableHashTableV2": "MutableHashTable",
                 "MutableHashTableOfTensorsV2": "MutableHashTable (of tensors)",
                 "MutableDenseHashTableV2": "DenseHashTable"}
TABLE_OPS = ("HashTableV2", "HashTable", *MUTABLE_KINDS)


def init_node(graph_def) -> str | None:
    """The table initializer node a frozen graph carries, else None."""
    return next((n.name for n in graph_def.node if n.name == TABLE_INIT), None)


def has_tables(graph_def) -> bool:
    return any(n.op in TABLE_OPS for n in graph_def.node)


def run_init(session, graph, feeds=None) -> None:
    """Run the graph's `init_all_tables` (if any) in `session` before its outputs."""
    if any(op.name == TABLE_INIT for op in graph.get_operations()):
        session.run(graph.get_operation_by_name(TABLE_INIT), feeds or None)


def _creator_ops(table) -> set[str]:
    """Op types of the function that created a loaded table (its kind)."""
    create = getattr(table, "_create_resource", None)
    try:
        graph_def = create.get_concrete_function().graph.as_graph_def()
    except (AttributeError, TypeError, ValueError):
        return set()
    return {n.op for n in graph_def.node} | \
        {n.op for f in graph_def.library.function for n in f.node_def}


def _tables_by_handle(trackable) -> dict[int, object]:
    """id(resource handle) -> the loaded table object owning it."""
    import tensorflow as tf
    from tensorflow.python.trackable import resource

    found = {}
    if trackable is None:
        return found
    for obj in tf.train.TrackableView(trackable).descendants():
        if isinstance(obj, resource.CapturableResource):
            try:
                found[id(obj.resource_handle)] = obj
            except (AttributeError, ValueError, TypeError):
                continue
    return found


def freeze_tables(graph_def, func, owner=None, where: str = "the model"):
    """`graph_def` (frozen from `func`) with every captured lookup table frozen in, plus
    `init_all_tables`; `owner` is the loaded object holding the tables (their kinds)."""
    import tensorflow as tf
    from graphfreeze.graph.consts import make_const
    from graphfreeze.graph.graphdefs import consumers, free_name, nodes_by_name, rename_nodes
    from tensorflow.core.framework import node_def_pb2

    handles = {internal.op.name: external for external, internal in func.graph.captures
               if external.dtype == tf.resource}
    by_name = nodes_by_name(graph_def)
    direct = consumers(graph_def)

    def through_identities(name: str) -> list[str]:
        found = []
        for user in direct.get(name, ()):
            found += through_identities(user) if by_name[user].op == "Identity" else [user]
        return found

    users = {name: through_identities(name) for name in handles if name in by_name}
    tables = [name for name, node in by_name.items() if name in handles and
              node.op == "Placeholder" and any(by_name[u].op in READ_OPS + WRITE_OPS
                                               for u in users.get(name, ()))]
    if not tables:
        return graph_def
    owners = _tables_by_handle(owner)
    taken = set(by_name)
    renames, added, inits = {}, [], []
    for name in sorted(tables):
        use = [by_name[u] for u in users[name]]
        writer = next((u for u in use if u.op in WRITE_OPS), None)
        table = owners.get(id(handles[name]))
        kind = next((MUTABLE_KINDS[op] for op in _creator_ops(table) if op in MUTABLE_KINDS),
                    None)
        reader = next((u for u in use if u.op in READ_OPS), use[0])
        if kind or writer is not None:
            why = f"a {kind}" if kind else f"written at run time by '{writer.name}' ({writer.op})"
            raise InputError(f"{where}: lookup table read by '{reader.name}' is {why}: its "
                             "contents change at run time, so they cannot be frozen into "
                             "constants; build the lookup with a tf.lookup.StaticHashTable "
                             "(or StaticVocabularyTable) and export again")
        find = next((u for u in use if u.op in FIND_OPS), None)
        if find is None:
            raise InputError(f"{where}: lookup table read by '{reader.name}' ({reader.op}) has no "
                             "lookup to tell its key and value types; look it up with "
                             "table.lookup in the exported function")
        key_dtype, value_dtype = find.attr["Tin"].type, find.attr["Tout"].type
        keys, values = tf.raw_ops.LookupTableExportV2(
            table_handle=handles[name], Tkeys=tf.as_dtype(key_dtype),
            Tvalues=tf.as_dtype(value_dtype))
        new = free_name("hash_table", taken)
        taken.add(new)
        renames[name] = new
        node = by_name[name]
        node.op = "HashTableV2"
        for attr in list(node.attr):
            del node.attr[attr]
        node.attr["key_dtype"].type = key_dtype
        node.attr["value_dtype"].type = value_dtype
        node.attr["shared_name"].s = new.encode()
        node.attr["container"].s = b""
        node.attr["use_node_name_sharing"].b = False
        keys_node = make_const(f"{new}/keys", keys.numpy())
        values_node = make_const(f"{new}/values", values.numpy())
        init = node_def_pb2.NodeDef(name=f"{new}/table_init", op="LookupTableImportV2",
                                    input=[new, keys_node.name, values_node.name])
        init.attr["Tin"].type = key_dtype
        init.attr["Tout"].type = value_dtype
        added += [keys_node, values_node, init]
        inits.append(init.name)
    graph_def, _ = rename_nodes(graph_def, renames)
    graph_def.node.extend(added)
    graph_def.node.add(name=TABLE_INIT, op="NoOp", input=[f"^{i}" for i in inits])
    return graph_def


def saved_model_converter(graph_def, inputs: list[str], outputs: list[str]):
    """TFLiteConverter.from_saved_model on a TF1 SavedModel of `graph_def` whose init op is
    `init_all_tables`, as TensorFlow converts a SavedModel with tables: its HASHTABLE ops are
    filled by an initializer subgraph the interpreter runs once (CALL_ONCE); inputs keep their
    unknown dims and their tensor names. The folder lives as long as the converter."""
    import tempfile

    import tensorflow as tf

    folder = tempfile.TemporaryDirectory(prefix="graphfreeze-tables-")
    path = f"{folder.name}/saved_model"
    graph = tf.Graph()  # (graph/session imports this module: no import back)
    with graph.as_default(), tf.compat.v1.Session(graph=graph) as sess:
        tf.graph_util.import_graph_def(graph_def, name="")
        builder = tf.compat.v1.saved_model.Builder(path)
        signature = tf.compat.v1.saved_model.predict_signature_def(
            {n.rsplit(":", 1)[0]: graph.get_tensor_by_name(n) for n in inputs},
            {n.rsplit(":", 1)[0]: graph.get_tensor_by_name(n) for n in outputs})
        init = TABLE_INIT if any(op.name == TABLE_INIT for op in graph.get_operations()) else None
        builder.add_meta_graph_and_variables(
            sess, ["serve"], signature_def_map={"serving_default": signature},
            main_op=graph.get_operation_by_name(init) if init else None, strip_default_attrs=True)
        builder.save()
    conv = tf.lite.TFLiteConverter.from_saved_model(path)
    conv._graphfreeze_folder = folder  # noqa: SLF001 -- removed with the converter
    return conv


def initialized_tables(graph_def) -> dict:
    """{shared name (bytes): (keys, values)} of the frozen tables, as tf2onnx's
    `process_tf_graph(initialized_tables=...)` takes them (its LookupTableFindV2 handler)."""
    from graphfreeze.graph.consts import tensor_array
    from graphfreeze.graph.graphdefs import node_of, nodes_by_name

    by_name = nodes_by_name(graph_def)
    found = {}
    for node in graph_def.node:
        if node.op != "LookupTableImportV2":
            continue
        table, keys, values = (by_name.get(node_of(n)) for n in node.input[:3])
        if table is not None and keys is not None and values is not None and \
                keys.op == values.op == "Const":
            name = table.attr["shared_name"].s or table.name.encode()
            found[name] = (tensor_array(keys.attr["value"].tensor),
                           tensor_array(values.attr["value"].tensor))
    return found
