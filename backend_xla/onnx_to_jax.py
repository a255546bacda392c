"""ONNX graph -> JAX function for one static batch size (which XLA then compiles).

The conversion happens while JAX traces the function: every node's handler runs once, values known
at conversion time stay numpy (so ``Shape``/``Slice``/``Concat`` chains fold to constants), and only
the nodes the requested outputs depend on are converted. Initializers larger than
``max_inline_constant_size`` bytes become parameters of the function, uploaded once and shared by
every batch size; smaller ones are inlined into the HLO as constants.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx

from engine.backend import INPUT_PLANES, OptionError

from . import ops
from .attention import find_attention, run_fused
from .errors import NetworkError
from .onnx_io import device_dtype, is_float, load_initializers, onnx_to_np_dtype, parse_dtype
from .onnx_passes import (
    ONNX_DOMAINS,
    check_ops,
    conv_filters,
    fold_weights,
    needed_nodes,
)
from .onnx_trace import WINOGRAD_SUFFIX, micro_batched, run_node
from .options import ATTENTION_CHOICES
from .packed import BOARD, unpacking

if TYPE_CHECKING:
    from .network_file import Model

DEFAULT_MAX_INLINE_CONSTANT_SIZE = 1024
"""Initializers up to this many bytes are inlined in the HLO; larger ones are parameters."""

FOLD_LIMIT_BYTES = 64 << 20
"""Weight-only nodes whose outputs total more than this are computed in the graph, not at load."""
MICRO_BATCH_ROWS = 8
"""A Winograd program runs larger batches in chunks of at most this many rows, one after the
other (``lax.map``): at 8 rows a 64-filter conv's Winograd temporaries (~0.5 MB each) stay in
the core's L2 cache; whole batches of 32 ran 1.16× and of 128 1.27× slower than chunks of 8
(Maia, one core, docs/performance.md)."""
LAYOUTS = ("NHWC", "NCHW")
"""Activation layouts: "NHWC" keeps conv outputs channels-last through the ops that allow it
(:mod:`backend_xla.ops.nhwc`); "NCHW" converts op by op in ONNX layout."""


def graph_inputs(inputs: Sequence[Any], batch_size: int, source: str) -> list[tuple]:
    """(name, shape, numpy dtype) of each graph input, a dynamic leading dim set to
    ``batch_size``; only the batch dim may be dynamic."""
    specs = []
    for value in inputs:
        ttype = value.type.tensor_type
        dims = []
        for i, d in enumerate(ttype.shape.dim):
            if d.HasField("dim_value") and (d.dim_value > 0 or i > 0):
                dims.append(int(d.dim_value))
            elif i == 0:
                dims.append(batch_size)
            else:
                raise NetworkError(
                    f"{source}: input {value.name!r}: expected a static size for dim {i}, "
                    f"got {d.dim_param or 'unknown'!r} (only the batch dim may be dynamic)"
                )
        dtype = onnx_to_np_dtype(ttype.elem_type, f"{source}: input {value.name!r}")
        specs.append((value.name, tuple(dims), dtype))
    return specs


def output_type(computed: np.dtype, io: np.dtype) -> np.dtype:
    """An output's type leaving the device: the io type, or the type it was computed in where
    that is narrower (bf16, f16): widening it there would only double the bytes of the copy
    back (the policy is the larger part of a GPU call's time, docs/history/gpu-sessions.md §7); the host widens
    it exactly."""
    if is_float(computed) and is_float(io) and np.dtype(computed).itemsize < np.dtype(io).itemsize:
        return np.dtype(computed)
    return io


@dataclass(frozen=True)
class TensorSpec:
    """Name, static shape and numpy dtype of a graph input or output."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype


def _opset(model: onnx.ModelProto) -> int:
    for entry in model.opset_import:
        if entry.domain in ONNX_DOMAINS:
            return int(entry.version)
    return 1


class Converter:
    """Holds one parsed model; :meth:`function` builds the JAX function for a batch size.

    ``float_override``: numpy dtype to compute every floating tensor in (None: as the model says).
    ``io_dtype``: dtype of the function's floating inputs/outputs (None: as the model says).
    """

    def __init__(
        self,
        model: onnx.ModelProto,
        source: str,
        *,
        outputs: Sequence[str] | None = None,
        float_override: Any = None,
        io_dtype: Any = None,
        base_dir=None,
        max_inline_constant_size: int = DEFAULT_MAX_INLINE_CONSTANT_SIZE,
        layout: str = "NHWC",
        conv_method: str = "auto",
        attention: str = "graph",
        packed_input: bool = False,
    ) -> None:
        if layout not in LAYOUTS:
            raise ValueError(f"layout: expected one of {LAYOUTS}, got {layout!r}")
        if attention not in ATTENTION_CHOICES:
            raise ValueError(f"attention: expected one of {ATTENTION_CHOICES}, got {attention!r}")
        self.layout = layout
        self.conv_method = conv_method
        self.model = model
        self.source = source
        self.opset = _opset(model)
        self.float_override = None if float_override is None else np.dtype(float_override)
        self.io_dtype = None if io_dtype is None else np.dtype(io_dtype)
        graph = model.graph
        self.constants, self.params = load_initializers(
            graph, base_dir, source, self.float_override, max_inline_constant_size
        )
        initializer_names = set(self.constants) | set(self.params)
        self.inputs = [i for i in graph.input if i.name not in initializer_names]
        produced = {o for n in graph.node for o in n.output} | initializer_names
        produced |= {i.name for i in self.inputs}
        self.output_names = list(outputs) if outputs else [o.name for o in graph.output]
        for name in self.output_names:
            if name not in produced:
                raise NetworkError(
                    f"{source}: expected output {name!r} in the graph, got outputs "
                    f"{[o.name for o in graph.output]}"
                )
        self.nodes = needed_nodes(graph, self.output_names)
        check_ops(self.nodes, source)
        self.max_inline_constant_size = max_inline_constant_size
        self.nodes, self.folded_nodes = fold_weights(
            self.nodes,
            self.constants,
            self.params,
            opset=self.opset,
            source=source,
            float_override=self.float_override,
            inline_limit=max_inline_constant_size,
            fold_limit=FOLD_LIMIT_BYTES,
        )
        filters = conv_filters(self.nodes, self.params, self.output_names, layout, conv_method)
        self.hwio_weights, self.winograd_weights = filters
        self.attention = attention
        self.attention_patterns = (
            find_attention(self.nodes, self.output_names) if attention != "graph" else {}
        )
        """The attentions to run fused (:mod:`backend_xla.attention`), by their last node's
        output."""
        self.packed_input = packed_input
        """Whether :meth:`function` takes lc0's packed planes (masks as uint32 [N, 112, 2], low
        word first, and values [N, 112]) and expands them on the device."""
        if packed_input:
            self._check_packable()
        self._prepared: dict[bool, dict[str, np.ndarray]] = {}
        used = {i for n in self.nodes for i in n.input} | set(self.output_names)
        self.params = {k: v for k, v in self.params.items() if k in used}
        self.inputs = [i for i in self.inputs if i.name in used]

    def winograd_batch(self, batch_size: int) -> bool:
        """Whether a program for ``batch_size`` rows (per device) runs the convs of
        :attr:`winograd_weights` as Winograd F(2×2): measured faster than XLA's convolution at
        every batch size, in micro-batches of :data:`MICRO_BATCH_ROWS` rows (a device's share
        of a split batch too, compiled as ``backend_xla.runtime.SPLIT_WINOGRAD_OPTIONS`` says)."""
        return bool(self.winograd_weights)

    def params_for(self, hwio_filters: bool) -> dict[str, np.ndarray]:
        """The parameters for a program built with ``function(..., hwio_filters)``: those of the
        file, conv filters HWIO if asked, and the Winograd transform of each filter in
        :attr:`winograd_weights` under ``name + WINOGRAD_SUFFIX``."""
        if hwio_filters not in self._prepared:
            params = {
                k: np.ascontiguousarray(np.transpose(v, (2, 3, 1, 0)))
                if hwio_filters and k in self.hwio_weights
                else v
                for k, v in self.params.items()
            }
            if self.winograd_weights:
                from .ops.conv_methods import winograd_weights

                for name in self.winograd_weights:
                    params[name + WINOGRAD_SUFFIX] = winograd_weights(
                        self.params[name], "winograd2"
                    )
            self._prepared[hwio_filters] = params
        return self._prepared[hwio_filters]

    def input_specs(self, batch_size: int) -> list[TensorSpec]:
        """Shapes/dtypes of :meth:`function`'s inputs for ``batch_size``: the graph's, or with
        :attr:`packed_input` the packed planes' masks and values."""
        if not self.packed_input:
            return self.graph_input_specs(batch_size)
        return [
            TensorSpec("masks", (batch_size, INPUT_PLANES, 2), np.dtype(np.uint32)),
            TensorSpec("values", (batch_size, INPUT_PLANES), self._io(np.dtype(np.float32))),
        ]

    def _check_packable(self) -> None:
        """Raises unless the graph has the one input that packed planes expand to."""
        specs = self.graph_input_specs(1)
        planes = (1, INPUT_PLANES, BOARD, BOARD)
        if len(specs) != 1 or tuple(specs[0].shape) != planes:
            raise NetworkError(
                f"{self.source}: packed_input: expected one input of [N, {INPUT_PLANES}, "
                f"{BOARD}, {BOARD}] planes, got {[(s.name, list(s.shape)) for s in specs]}"
            )

    def graph_input_specs(self, batch_size: int) -> list[TensorSpec]:
        """Shapes/dtypes of the graph inputs with a dynamic leading dim set to ``batch_size``."""
        return [
            TensorSpec(name, shape, self._io(dtype))
            for name, shape, dtype in graph_inputs(self.inputs, batch_size, self.source)
        ]

    def _io(self, dtype: np.dtype) -> np.dtype:
        return self.io_dtype if self.io_dtype is not None and is_float(dtype) else dtype

    def _compute(self, dtype: np.dtype) -> np.dtype:
        return self.float_override if self.float_override is not None and is_float(dtype) else dtype

    def function(
        self, batch_size: int, hwio_filters: bool = False
    ) -> tuple[Callable, list[TensorSpec]]:
        """``fn(params: dict, *inputs) -> tuple(outputs)`` for ``batch_size`` and its input specs.

        ``hwio_filters``: ``params`` hold the filters of :attr:`hwio_weights` as HWIO
        (``params_for(True)``); otherwise every parameter is as in the ONNX file. A Winograd
        program (:meth:`winograd_batch`) runs in micro-batches of :data:`MICRO_BATCH_ROWS` rows.
        """
        winograd = self.winograd_batch(batch_size)
        chunks = -(-batch_size // MICRO_BATCH_ROWS) if winograd else 1
        rows = -(-batch_size // chunks)
        fn = self._function(rows, hwio_filters, winograd)
        if chunks > 1:
            if self._rows_lead(fn, rows, hwio_filters):
                fn = micro_batched(fn, batch_size, rows, chunks)
            else:
                fn = self._function(batch_size, hwio_filters, winograd)
        return (unpacking(fn) if self.packed_input else fn), self.input_specs(batch_size)

    def _rows_lead(self, fn: Callable, rows: int, hwio_filters: bool) -> bool:
        """Whether every input and output of ``fn`` (built for ``rows``) has the rows on axis 0,
        so that a batch may be cut into chunks of ``rows``."""
        import jax

        specs = self.graph_input_specs(rows)
        if any(not s.shape or s.shape[0] != rows for s in specs):
            return False
        params = {
            k: jax.ShapeDtypeStruct(v.shape, v.dtype)
            for k, v in self.params_for(hwio_filters).items()
        }
        outs = jax.eval_shape(fn, params, *[jax.ShapeDtypeStruct(s.shape, s.dtype) for s in specs])
        return all(o.shape and o.shape[0] == rows for o in outs)

    def _function(self, batch_size: int, hwio_filters: bool, winograd: bool) -> Callable:
        hwio = self.hwio_weights if hwio_filters else frozenset()
        prepared = self.winograd_weights.keys() if winograd else frozenset()
        model_dtypes = [onnx_to_np_dtype(v.type.tensor_type.elem_type) for v in self.inputs]

        def fn(params: dict, *inputs):
            env: dict[str, Any] = dict(self.constants)
            env.update(params)
            for value, x, dtype in zip(self.inputs, inputs, model_dtypes):
                env[value.name] = x.astype(device_dtype(self._compute(dtype)))
            for node in self.nodes:
                pattern = self.attention_patterns.get(node.output[0]) if node.output else None
                if pattern is not None:
                    fused = run_fused(pattern, env, self.attention, node, self.source)
                    if fused is not None:
                        env[node.output[0]] = fused
                        continue
                run_node(node, env, self, hwio, prepared)
            outs = []
            for name in self.output_names:
                y = ops.as_nchw(env[name])
                if isinstance(y, np.ndarray):
                    import jax.numpy as jnp

                    y = jnp.asarray(y)
                outs.append(y.astype(device_dtype(output_type(y.dtype, self._io(y.dtype)))))
            return tuple(outs)

        return fn


def convert(model: Model, options: Mapping[str, Any], platform: str) -> Converter:
    """Stage 3 of a load (:func:`backend_xla.load_network`): the converter of ``model`` for the backend
    ``options`` and a device of ``platform``."""
    data_type = options["data_type"]
    conv_method = options["conv_method"]
    if conv_method == "auto" and platform != "cpu":
        # auto's Winograd in 8-row chunks suits a CPU core's cache (docs/performance.md
        # §6); an accelerator's own convolution takes the whole batch at once.
        conv_method = "lax"
    if options["attention"] == "cudnn" and platform == "cpu":
        raise OptionError(
            "attention=cudnn: expected a GPU (cuDNN's fused attention), got the CPU; "
            "allowed here: graph, xla"
        )
    packed = options["packed_input"]
    # auto: packed planes on an accelerator, where a batch then crosses to the device in a
    # twentieth of the bytes and the host skips expanding them (issue 39); on a CPU the float
    # planes measured no slower.
    return Converter(
        model.proto,
        model.name,
        outputs=model.heads.outputs,
        base_dir=model.base_dir,
        float_override=parse_dtype(data_type) if data_type else None,
        io_dtype=parse_dtype(options["io_datatype"]),
        max_inline_constant_size=options["max_inline_constant_size"],
        layout=options["layout"],
        conv_method=conv_method,
        attention=options["attention"],
        packed_input=platform != "cpu" if packed == "auto" else packed == "on",
    )
