"""errors.first_line on TensorFlow's own errors: the message without TensorFlow's internals."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from graphfreeze.errors import first_line

v1 = tf.compat.v1


def raised(call) -> BaseException:
    with pytest.raises(Exception) as info:
        call()
    return info.value


def test_a_node_def_dump_becomes_the_node_name():
    def shapes_disagree():
        with tf.Graph().as_default():
            tf.matmul(v1.placeholder(tf.float32, [2, 4]), v1.placeholder(tf.float32, [5, 3]),
                      name="dense/MatMul")

    line = first_line(raised(shapes_disagree))
    assert line == ("Dimensions must be equal, but are 4 and 5 for node 'dense/MatMul' with "
                    "input shapes: [2,4], [5,3].")


def test_an_eager_ops_function_node_and_op_are_left_out(tmp_path):
    prefix = str(tmp_path / "ckpt")
    tf.raw_ops.SaveV2(prefix=prefix, tensor_names=["w"], shape_and_slices=[""],
                      tensors=[tf.zeros([1000])])
    data = tmp_path / "ckpt.data-00000-of-00001"
    data.write_bytes(data.read_bytes()[:100])
    err = raised(lambda: tf.raw_ops.RestoreV2(prefix=prefix, tensor_names=["w"],
                                              shape_and_slices=[""], dtypes=[tf.float32]))
    assert "{{function_node" in err.message
    line = first_line(err)
    assert "{{" not in line and "[Op:" not in line and "requested" in line, line


def test_a_graph_execution_error_is_the_kernels_message_at_its_node():
    graph = tf.Graph()
    with graph.as_default():
        x = v1.placeholder(tf.float32, [None, 4], name="x")
        w = v1.placeholder_with_default(np.zeros([5, 3], np.float32), [None, None], name="w")
        y = tf.matmul(x, w, name="logits")
    with v1.Session(graph=graph) as session:
        err = raised(lambda: session.run(y, {x: np.ones([1, 4], np.float32)}))
    assert err.message.startswith("Graph execution error")
    assert first_line(err) == "node 'logits': Matrix size-incompatible: In[0]: [1,4], In[1]: [5,3]"


def test_plain_messages_are_kept():
    assert first_line(ValueError("x.pb: bad\nmore")) == "x.pb: bad"
    assert first_line(KeyError()) == "KeyError"


def test_a_missing_extra_is_added_as_this_environment_installed_graphfreeze():
    """A checkout installed editable (as `make` does): pip of this environment, the checkout's
    folder with the extra (graphfreeze is not on PyPI; the wheel and dir cases: tests/e2e)."""
    import sys
    from pathlib import Path

    from graphfreeze.errors import install_hint

    root = Path(__file__).resolve().parent.parent
    assert install_hint("ray") == f"{sys.executable} -m pip install -e '{root}[ray]'"


@pytest.mark.parametrize("record, hint", [
    ({"url": "https://user:token@git.example/org/graphfreeze.git",
      "vcs_info": {"vcs": "git", "commit_id": "abc123"}},
     "'graphfreeze[ray] @ git+https://git.example/org/graphfreeze.git@abc123'"),  # no token
    ({"url": "file:///w/dist/graphfreeze-0.1.0-py3-none-any.whl", "archive_info": {}},
     "'/w/dist/graphfreeze-0.1.0-py3-none-any.whl[ray]'"),
    ({"url": "file:///w/graphfreeze", "dir_info": {}}, "'/w/graphfreeze[ray]'"),
    ({"url": "https://files.example/graphfreeze.whl", "archive_info": {}},
     "'CHECKOUT_OR_WHEEL[ray]'"),  # a download: nothing on this machine to name
])
def test_a_missing_extra_names_each_way_graphfreeze_is_installed(tmp_path, monkeypatch, record, hint):
    """PEP 610's record of a git URL (its credentials left out), a wheel file, a folder, a
    downloaded file."""
    import json
    import sys

    from graphfreeze.errors import install_hint

    info = tmp_path / "graphfreeze-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: graphfreeze\nVersion: 0.1.0\n")
    (info / "direct_url.json").write_text(json.dumps(record))
    monkeypatch.syspath_prepend(str(tmp_path))
    said = install_hint("ray")
    assert said.startswith(f"{sys.executable} -m pip install ") and hint in said
    assert "token" not in said
