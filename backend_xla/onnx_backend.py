"""The general ONNX→XLA converter as an ONNX backend (:class:`onnx.backend.base.Backend`).

    from backend_xla.onnx_backend import XlaBackend
    rep = XlaBackend.prepare(model, "CPU")      # an XlaBackendRep
    outputs = rep.run([x, y])                   # numpy arrays, in graph output order
    outputs = XlaBackend.run_model(model, [x, y])
    outputs = XlaBackend.run_node(node, [x, y])  # one NodeProto, built into a model on the fly

This is how ONNX's own backend node tests run (``tests/backend_xla/test_onnx_backend.py``). The
converter compiles for static shapes, so :meth:`XlaBackendRep.run` adapts the model to each
feed, as an exporter of a real network would: integer inputs (shapes, axes, indices, repeats)
become initializers, since their values decide output shapes, and every other input gets the
static shape of the array it is fed. One program is compiled per distinct feed signature and
reused. JAX runs without x64, so outputs are cast back to the types the graph declares.

Devices: ``"CPU"`` always; ``"CUDA"`` / ``"CUDA:i"`` when JAX sees a GPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
import onnx.backend.base
from onnx import helper, numpy_helper

from .onnx_io import onnx_to_np_dtype

__all__ = ["XlaBackend", "XlaBackendRep", "prepare", "run_model", "run_node", "supports_device"]


def _jax_device(device: str):
    """The JAX device an ONNX device string names (``"CPU"``, ``"CUDA"``, ``"CUDA:1"``)."""
    import jax

    parsed = onnx.backend.base.Device(device)
    index = int(parsed.device_id or 0)
    platform = "cpu" if parsed.type == onnx.backend.base.DeviceType.CPU else "gpu"
    try:
        devices = jax.devices(platform)
    except RuntimeError as exc:  # no backend of that platform
        raise ValueError(
            f"device {device!r}: expected a device JAX has, got none of platform "
            f"{platform!r} ({exc})"
        ) from None
    if index >= len(devices):
        raise ValueError(f"device {device!r}: expected an index below {len(devices)}, got {index}")
    return devices[index]


def _bind(model: onnx.ModelProto, feed: dict[str, np.ndarray]) -> onnx.ModelProto:
    """``model`` with integer inputs turned into initializers of their fed values and every other
    input given the static shape of the array fed to it."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    keep = []
    for value in model.graph.input:
        array = feed.get(value.name)
        if array is not None and array.dtype.kind in "iu":
            model.graph.initializer.append(numpy_helper.from_array(array, value.name))
            continue
        if array is not None:
            shape = value.type.tensor_type.shape
            shape.ClearField("dim")
            for d in array.shape:
                shape.dim.add().dim_value = d
        keep.append(value)
    del model.graph.input[:]
    model.graph.input.extend(keep)
    return model


def _signature(feed: dict[str, np.ndarray]) -> tuple:
    """What decides the bound model: every shape and dtype, and the values of integer inputs."""
    return tuple(
        (name, a.shape, a.dtype.str, a.tobytes() if a.dtype.kind in "iu" else None)
        for name, a in sorted(feed.items())
    )


class XlaBackendRep(onnx.backend.base.BackendRep):
    """A prepared model: :meth:`run` converts and compiles it for each new feed signature."""

    def __init__(self, model: onnx.ModelProto, device: str = "CPU", source: str | None = None):
        self.model = model
        self.device = device
        self.source = source or f"<onnx model {model.graph.name or 'unnamed'}>"
        initializers = {t.name for t in model.graph.initializer}
        self.input_names = [i.name for i in model.graph.input if i.name not in initializers]
        self._compiled: dict[tuple, tuple] = {}

    def run(self, inputs: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        """Outputs (numpy, graph output order) for ``inputs``: a list in graph input order
        (initializers excluded), a dict by input name, or one array."""
        import jax

        if isinstance(inputs, dict):
            feed = {name: np.asarray(inputs[name]) for name in self.input_names if name in inputs}
        else:
            items = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
            if len(items) > len(self.input_names):
                raise ValueError(
                    f"{self.source}: expected at most {len(self.input_names)} inputs "
                    f"({self.input_names}), got {len(items)}"
                )
            feed = {name: np.asarray(x) for name, x in zip(self.input_names, items)}
        key = _signature(feed)
        if key not in self._compiled:
            self._compiled[key] = self._compile(feed)
        fn, params, names, dtypes = self._compiled[key]
        with jax.default_device(_jax_device(self.device)):
            outs = fn(params, *[feed[name] for name in names])
        return tuple(
            np.asarray(y) if dtype is None else np.asarray(y).astype(dtype)
            for y, dtype in zip(outs, dtypes)
        )

    def _compile(self, feed: dict[str, np.ndarray]) -> tuple:
        import jax

        from .onnx_to_jax import Converter

        conv = Converter(_bind(self.model, feed), self.source)
        # A fed leading dim of 0 reads as dynamic to the converter: hand it the batch size 0.
        empty = any(
            a.ndim and a.shape[0] == 0 for name, a in feed.items() if a.dtype.kind not in "iu"
        )
        fn, _ = conv.function(0 if empty else 1)
        dtypes = [
            None
            if v.type.tensor_type.elem_type == onnx.TensorProto.UNDEFINED
            else onnx_to_np_dtype(v.type.tensor_type.elem_type, self.source)
            for v in self.model.graph.output
        ]
        return jax.jit(fn), conv.params_for(False), [i.name for i in conv.inputs], dtypes


class XlaBackend(onnx.backend.base.Backend):
    """ONNX backend over :class:`backend_xla.onnx_to_jax.Converter` (ops: ``backend_xla.ops``)."""

    @classmethod
    def is_compatible(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> bool:
        """Whether every node of ``model`` is an op the converter registers."""
        from .ops import supported_ops

        supported = set(supported_ops())
        return all(n.domain in ("", "ai.onnx") and n.op_type in supported for n in model.graph.node)

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> XlaBackendRep:
        """Check ``model`` (onnx.checker, via the base class) and wrap it for :meth:`run`."""
        if not cls.supports_device(device):
            raise ValueError(f"device {device!r}: expected one of CPU, CUDA[:i] that JAX has")
        super().prepare(model, device, **kwargs)
        return XlaBackendRep(model, device)

    @classmethod
    def run_model(
        cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU", **kwargs: Any
    ) -> tuple[np.ndarray, ...]:
        """``prepare(model, device).run(inputs)``."""
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(
        cls,
        node: onnx.NodeProto,
        inputs: Any,
        device: str = "CPU",
        outputs_info: Sequence[tuple[Any, Sequence[int]]] | None = None,
        **kwargs: Any,
    ) -> tuple[np.ndarray, ...]:
        """Run one node on ``inputs`` (a list in ``node.input`` order, or a dict by name).

        ``outputs_info``: ``(numpy dtype, shape)`` per output; without it outputs come back in
        the types the converter computes them in. ``opset`` (kwarg): the opset to build the
        model with (default: onnx's current one).
        """
        names = [n for n in node.input if n]
        if isinstance(inputs, dict):
            arrays = {n: np.asarray(inputs[n]) for n in names}
        else:
            arrays = {n: np.asarray(x) for n, x in zip(names, inputs)}
        graph_inputs = [
            helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
            for n, a in arrays.items()
        ]
        graph_outputs = []
        for i, name in enumerate(o for o in node.output if o):
            if outputs_info is not None and i < len(outputs_info):
                dtype, shape = outputs_info[i]
                graph_outputs.append(
                    helper.make_tensor_value_info(
                        name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), shape
                    )
                )
            else:
                graph_outputs.append(helper.make_empty_tensor_value_info(name))
        opset = kwargs.pop("opset", onnx.defs.onnx_opset_version())
        model = helper.make_model(
            helper.make_graph([node], f"run_node_{node.op_type}", graph_inputs, graph_outputs),
            opset_imports=[helper.make_opsetid("", opset)],
        )
        rep = XlaBackendRep(model, device, f"<onnx node {node.name or node.op_type}>")
        return rep.run(arrays)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        try:
            _jax_device(device)
        except (ValueError, RuntimeError):
            return False
        return True


prepare = XlaBackend.prepare
run_model = XlaBackend.run_model
run_node = XlaBackend.run_node
supports_device = XlaBackend.supports_device
