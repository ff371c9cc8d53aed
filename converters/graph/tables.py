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

import contextlib

from graphfreeze.errors import InputError
from graphfreeze.graph.graphdefs import all_nodes

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


def creator_nodes(resource) -> list:
    """The NodeDefs of the function that created a loaded resource (`_create_resource`: a
    table's kind, a TF-Text resource's creator op), its library's bodies included; [] if none."""
    create = getattr(resource, "_create_resource", None)
    try:
        graph_def = create.get_concrete_function().graph.as_graph_def()
    except (AttributeError, TypeError, ValueError):
        return []
    return all_nodes(graph_def)


def resources_by_handle(owner) -> dict[int, object]:
    """id(resource handle) -> the loaded resource (table, TF-Text model) owning it."""
    import tensorflow as tf
    from tensorflow.python.trackable import resource

    found = {}
    if owner is None:
        return found
    for obj in tf.train.TrackableView(owner).descendants():
        if isinstance(obj, resource.CapturableResource):
            try:
                found[id(obj.resource_handle)] = obj
            except (AttributeError, ValueError, TypeError):
                continue
    return found


def freeze_tables(graph_def, func, owner=None, where: str = "the model"):
    """`graph_def` (frozen from `func`) with every lookup table it reads frozen in, plus
    `init_all_tables`: tables `func` captures (TF2: a placeholder for the handle) and tables
    made in the graph without their initializer (a TF1 SavedModel's, filled when it loaded);
    `owner` is the loaded object holding the tables (their kinds)."""
    import tensorflow as tf
    from graphfreeze.graph.graphdefs import consumers, free_name, nodes_by_name
    from graphfreeze.graph.renames import rename_nodes

    handles = {internal.op.name: external for external, internal in func.graph.captures
               if external.dtype == tf.resource}
    by_name = nodes_by_name(graph_def)
    direct = consumers(graph_def)

    def through_identities(name: str) -> list[str]:
        found = []
        for user in direct.get(name, ()):
            found += through_identities(user) if by_name[user].op == "Identity" else [user]
        return found

    users = {name: through_identities(name) for name, node in by_name.items()
             if name in handles or node.op in TABLE_OPS}
    captured = [name for name in sorted(handles) if name in by_name and
                by_name[name].op == "Placeholder" and
                any(by_name[u].op in READ_OPS + WRITE_OPS for u in users[name])]
    made = [name for name, node in sorted(by_name.items()) if node.op in TABLE_OPS and
            not any(by_name[u].op in WRITE_OPS for u in users[name])]
    if not captured and not made:
        return graph_def
    owners = resources_by_handle(owner)
    taken = set(by_name)
    renames, added = {}, []
    for name in captured + made:
        use = [by_name[u] for u in users[name]]
        reader = next((u for u in use if u.op in READ_OPS), use[0] if use else by_name[name])
        if name in handles:
            table = owners.get(id(handles[name]))
            kind = next((MUTABLE_KINDS[n.op] for n in creator_nodes(table)
                         if n.op in MUTABLE_KINDS), None)
        else:
            kind = MUTABLE_KINDS.get(by_name[name].op)
        writer = next((u for u in use if u.op in WRITE_OPS), None)
        if kind or writer is not None:
            why = f"a {kind}" if kind else f"written at run time by '{writer.name}' ({writer.op})"
            raise InputError(f"{where}: lookup table read by '{reader.name}' is {why}: its "
                             "contents change at run time, so they cannot be frozen into "
                             "constants; build the lookup with a tf.lookup.StaticHashTable "
                             "(or StaticVocabularyTable) and export again")
        if name in handles:
            find = next((u for u in use if u.op in FIND_OPS), None)
            if find is None:
                raise InputError(f"{where}: lookup table read by '{reader.name}' ({reader.op}) "
                                 "has no lookup to tell its key and value types; look it up "
                                 "with table.lookup in the exported function")
            dtypes, handle = (find.attr["Tin"].type, find.attr["Tout"].type), handles[name]
            new = free_name("hash_table", taken)
        else:  # the table the loader filled, found by its shared name
            node = by_name[name]
            dtypes = (node.attr["key_dtype"].type, node.attr["value_dtype"].type)
            handle = tf.raw_ops.HashTableV2(
                key_dtype=dtypes[0], value_dtype=dtypes[1], shared_name=node.attr[
                    "shared_name"].s, container=node.attr["container"].s,
                use_node_name_sharing=node.attr["use_node_name_sharing"].b)
            new = name
        taken.add(new)
        renames[name] = new
        added += _filled(by_name[name], new, dtypes, tf.raw_ops.LookupTableExportV2(
            table_handle=handle, Tkeys=tf.as_dtype(dtypes[0]), Tvalues=tf.as_dtype(dtypes[1])))
    graph_def, _ = rename_nodes(graph_def, {k: v for k, v in renames.items() if k != v})
    graph_def.node.extend(added)
    graph_def.node.add(name=TABLE_INIT, op="NoOp",
                       input=[f"^{n.name}" for n in added if n.op == "LookupTableImportV2"])
    return graph_def


def _filled(node, name: str, dtypes, contents) -> list:
    """`node` made a HashTableV2 (shared by its own name: deterministic), and the nodes filling
    it with `contents` (keys, values)."""
    from graphfreeze.graph.consts import make_const
    from tensorflow.core.framework import node_def_pb2

    node.op = "HashTableV2"
    del node.input[:]
    for attr in list(node.attr):
        del node.attr[attr]
    node.attr["key_dtype"].type, node.attr["value_dtype"].type = dtypes
    node.attr["shared_name"].s = name.encode()
    node.attr["container"].s = b""
    node.attr["use_node_name_sharing"].b = False
    keys = make_const(f"{name}/keys", contents[0].numpy())
    values = make_const(f"{name}/values", contents[1].numpy())
    init = node_def_pb2.NodeDef(name=f"{name}/table_init", op="LookupTableImportV2",
                                input=[name, keys.name, values.name])
    init.attr["Tin"].type, init.attr["Tout"].type = dtypes
    return [keys, values, init]


@contextlib.contextmanager
def without_initializer_lists(func):
    """`func`'s graph without its TF1 table initializer collection while it is frozen:
    TensorFlow's freezing hands the collection to grappler, which refuses initializers the
    pruned signature left out (a TF1 SavedModel's `key_value_init`)."""
    import tensorflow as tf

    key = tf.compat.v1.GraphKeys.TABLE_INITIALIZERS
    saved = list(func.graph.get_collection(key))
    func.graph.clear_collection(key)
    try:
        yield
    finally:
        for item in saved:
            func.graph.add_to_collection(key, item)


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
    from graphfreeze.graph.consts import node_value
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
            found[name] = (node_value(keys), node_value(values))
    return found
