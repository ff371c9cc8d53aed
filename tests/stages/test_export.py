import tensorflow as tf
from graphfreeze.names import TensorRef
from graphfreeze.stages.export import serialize_chunks, skeleton, tensor_infos

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
