"""The two helpers the ONNX test-data generators of this folder share
(gen_passes.py, gen_upsample.py): constants become initializers, nodes are
named. Needs python3-onnx and numpy (developer tools)."""
import numpy as np
from onnx import helper, numpy_helper


class Builder:
    def __init__(self):
        self.inits, self.nodes = [], []

    def const(self, name, value, dtype=np.float32):
        """An initializer named name; returns the name."""
        self.inits.append(
            numpy_helper.from_array(np.array(value, dtype=dtype), name))
        return name

    def node(self, op, inputs, outputs, name, **attrs):
        self.nodes.append(
            helper.make_node(op, inputs, outputs, name=name, **attrs))

    def save(self, path, name, inputs, outputs, opset=13):
        """The graph of the nodes and initializers so far as a model at
        path (IR version 8, the default domain at opset)."""
        g = helper.make_graph(self.nodes, name, inputs, outputs, self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="mplan-tests")
        m.ir_version = 8
        with open(path, "wb") as f:
            f.write(m.SerializeToString())
