import tensorflow as tf
from graphfreeze.graph.serialize import serialize_chunks
from graphfreeze.graph.skeleton import skeleton
from graphfreeze.names import TensorRef
from graphfreeze.tensors import tensor_infos

v1 = tf.compat.v1


def sample_graph(with_function: bool):
    graph = tf.Graph()
    with graph.as_default():
        x = v1.placeholder(tf.float32, [None, 300], name="x")
        w = tf.constant([[0.5] * 20] * 300)
        y = tf.matmul(x, w, name="y")
        if with_function:
            @tf.function
            def twice(t):
                return t * 2.0
            twice(y)
    return graph.as_graph_def()


def test_streamed_bytes_equal_protobuf_serialization():
    for with_function in (False, True):
        graph_def = sample_graph(with_function)
        assert b"".join(serialize_chunks(graph_def)) == \
            graph_def.SerializeToString(deterministic=True)


def test_skeleton_keeps_shapes_without_the_weights():
    graph_def = sample_graph(False)
    bare = skeleton(graph_def)
    assert bare.ByteSize() < graph_def.ByteSize() / 10
    (info,) = tensor_infos(graph_def, [TensorRef("y")])
    assert info.shape == (None, 20) and info.dtype == "float32"


def test_graph_over_the_protobuf_limit_is_refused_before_writing(sample, tmp_path):
    from graphfreeze.convert import Request, convert
    from graphfreeze.errors import ConfigError
    from graphfreeze.registry import Registry, parse_target

    registry = Registry.default(plugins=False)
    registry.add_target(parse_target({
        "schema_version": 1, "name": "tiny-limit", "description": "android with a 1 KB limit",
        "stages": [{"use": "freeze_variables"}, {"use": "strip_training"},
                   {"use": "optimize_for_inference"}, {"use": "export_frozen_graph", "max_bytes": 1024}]},
        "test"))
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "model.pb"
    ckpt = sample("iris") / "model.ckpt-200"
    try:
        convert(Request(source=str(ckpt), outputs=("probs",), targets=("tiny-limit",),
                        output=str(out)), registry)
    except ConfigError as err:
        assert "of one protobuf, which a frozen GraphDef is" in str(err) and \
            "use the server target" in str(err), str(err)
    else:
        raise AssertionError("a graph over max_bytes was written")
    assert list(out_dir.iterdir()) == []


def test_a_splat_constant_is_judged_by_its_bytes_not_its_shape(tmp_path):
    """The size check reads shapes first (upb's ByteSize would serialize every weight): a
    constant of 4 MB by its shape but one value in the file is written under a 64 KB limit."""
    from graphfreeze.convert import Request, convert
    from graphfreeze.registry import Registry, parse_target

    graph = tf.Graph()
    with graph.as_default():
        x = v1.placeholder(tf.float32, [1000, 1000], name="x")
        tf.add(x, tf.constant(0.5, shape=[1000, 1000]), name="y")
    graph_def = graph.as_graph_def()
    (const,) = [n for n in graph_def.node if n.op == "Const"]
    assert const.attr["value"].tensor.ByteSize() < 100  # a splat: one value
    (tmp_path / "splat.pb").write_bytes(graph_def.SerializeToString())
    registry = Registry.default(plugins=False)
    registry.add_target(parse_target({
        "schema_version": 1, "name": "small-limit", "description": "android, 64 KB limit",
        "stages": [{"use": "freeze_variables"}, {"use": "strip_training"},
                   {"use": "optimize_for_inference"},
                   {"use": "export_frozen_graph", "max_bytes": 65536}]}, "test"))
    (written,) = convert(Request(source=str(tmp_path / "splat.pb"), outputs=("y",),
                                 targets=("small-limit",), output=str(tmp_path / "out.pb"),
                                 verify=False), registry)
    assert 0 < (tmp_path / "out.pb").stat().st_size < 65536
