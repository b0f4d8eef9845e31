"""Kernel blocks: the base class of a customized kernel written in Python (nn-Meter's BaseBlock)."""


class BaseBlock:
    """A kernel block built from a config dict. Subclasses set `input_shape` (one input without the batch
    dimension) and `input_tensor_shape` (all inputs), and implement get_model(), which returns the kernel
    as an ONNX model (onnx.ModelProto or serialized bytes) or a torch.nn.Module."""

    def __init__(self, config):
        self.config = config
        self.input_shape = None
        self.input_tensor_shape = None

    def get_model(self):
        raise NotImplementedError("a customized kernel must implement get_model()")
