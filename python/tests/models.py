"""Small ONNX models for the tests, written with the onnx package (Debian's python3-onnx)."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def conv_relu_add(channels=16, hw=28, name="conv_relu_add", batch=1):
    """x → Conv 3×3 → Relu → Conv 1×1 → Add(x) → GlobalAveragePool: a residual block."""
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((channels, channels, 3, 3)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((channels, channels, 1, 1)).astype(np.float32), "w2")
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], kernel_shape=[1, 1], name="conv2"),
        helper.make_node("Add", ["c2", "x"], ["a"], name="add"),
        helper.make_node("GlobalAveragePool", ["a"], ["y"], name="gap"),
    ]
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, channels, hw, hw])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, channels, 1, 1])], [w1, w2])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    return model
