"""graph/consts.set_tensor: the bytes a TensorProto gets are the array's, in C order, whether
they are taken as they are (a whole view of a checkpoint read's `bytes`) or copied."""

from __future__ import annotations

import numpy as np
import pytest
from graphfreeze.graph.consts import set_tensor
from graphfreeze.proto.tf import tensor_pb2

DATA = np.arange(24, dtype=np.float32).tobytes()
WHOLE = np.frombuffer(DATA, np.float32).reshape(2, 3, 4)


@pytest.mark.parametrize("value", [
    WHOLE, WHOLE.reshape(6, 4), WHOLE.view(np.int32), WHOLE.view(">f4"),
    WHOLE.transpose(2, 0, 1), WHOLE[:, ::-1], WHOLE[1:], np.frombuffer(b"", np.float32),
    np.frombuffer(DATA, np.float32, count=4, offset=8), np.float32(2.5).reshape(()),
], ids=["whole", "reshaped", "viewed", "byteswapped-dtype", "transposed", "reversed", "sliced",
        "empty", "offset", "scalar"])
def test_the_content_is_the_arrays_bytes_in_c_order(value):
    proto = tensor_pb2.TensorProto()
    set_tensor(proto, value)
    assert proto.tensor_content == np.ascontiguousarray(value).tobytes()
    assert [d.size for d in proto.tensor_shape.dim] == list(value.shape)


def test_a_whole_view_of_bytes_is_taken_as_they_are():
    from graphfreeze.graph.consts import value_bytes

    assert value_bytes(WHOLE) is DATA and value_bytes(WHOLE.reshape(6, 4)) is DATA
    assert value_bytes(WHOLE[1:]) is not DATA and value_bytes(WHOLE.transpose(2, 0, 1)) is not DATA
