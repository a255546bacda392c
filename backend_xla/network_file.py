"""A network's file: read (ONNX or an lc0 weight file), checked for lc0's inputs and outputs,
and converted for the options and the device's platform (plain functions of
:class:`backend_xla.network.XlaNetwork`'s load)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from engine.backend import OptionError

from .errors import NetworkError

if TYPE_CHECKING:
    import onnx  # imported where a file is read: a warm start from the caches never needs it

    from .onnx_to_jax import Converter

OUTPUT_POLICY = "/output/policy"
OUTPUT_WDL = "/output/wdl"
OUTPUT_VALUE = "/output/value"
OUTPUT_MLH = "/output/mlh"
INPUT_FORMAT_KEY = "lc0_input_format"

UNKEYED_OPTIONS = ("background_compile", "cache_dir", "hlo_proto_dump_dir")
"""Backend options that do not change a compiled program (left out of its cache key)."""


def conversion_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The options a converted network and its programs depend on (their cache keys')."""
    return {k: v for k, v in options.items() if k not in UNKEYED_OPTIONS}


def is_model(path) -> bool:
    """Whether ``path`` is an onnx.ModelProto (without importing onnx for a path)."""
    onnx_module = sys.modules.get("onnx")
    return onnx_module is not None and isinstance(path, onnx_module.ModelProto)


def external_data(model) -> bool:
    """Whether an ONNX model keeps weights in other files (which the file's digest, the key of
    the converted network, does not cover: such a network is not kept converted)."""
    import onnx

    return any(t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer)


def read_model(path: str | os.PathLike | onnx.ModelProto, options: Mapping[str, Any]):
    """(model, source name, directory for external data); ``options``: the parsed backend
    options (an lc0 weight file's heads are chosen by policy_head and value_head)."""
    from .onnx_io import load_model

    if is_model(path):
        assert not isinstance(path, (str, os.PathLike))
        return path, f"<ONNX model {path.graph.name or 'unnamed'}>", None
    p = Path(path)
    if p.name.endswith(".pb.gz") or p.suffix == ".pb":
        try:
            from .lc0 import load_lc0_onnx
        except ImportError as exc:
            raise NetworkError(
                f"{p}: lc0 weight files need backend_xla.lc0, which is not "
                f"available ({exc}); convert it to ONNX with lc0 leela2onnx"
            ) from exc
        model = load_lc0_onnx(
            str(p), policy_head=options["policy_head"], value_head=options["value_head"]
        )
        return model, str(p), p.parent
    return load_model(p), str(p), p.parent


class Heads(NamedTuple):
    """What a network computes, as the engine reads it."""

    has_wdl: bool
    has_mlh: bool
    input_format: int

    @property
    def outputs(self) -> list[str]:
        """The graph outputs to compute, in the order the backend reads them."""
        value = OUTPUT_WDL if self.has_wdl else OUTPUT_VALUE
        return [OUTPUT_POLICY, value] + ([OUTPUT_MLH] if self.has_mlh else [])


def check_model(model, source: str, options: Mapping[str, Any]) -> Heads:
    """The heads of ``model``, after checking its input and outputs are lc0's."""
    from .onnx_io import INPUT_NAME

    graph_inputs = {i.name for i in model.graph.input}
    if INPUT_NAME not in graph_inputs:
        raise NetworkError(f"{source}: expected input {INPUT_NAME!r}, got {sorted(graph_inputs)}")
    outputs = [o.name for o in model.graph.output]
    if OUTPUT_POLICY not in outputs or not ({OUTPUT_WDL, OUTPUT_VALUE} & set(outputs)):
        raise NetworkError(
            f"{source}: expected outputs {OUTPUT_POLICY!r} and "
            f"{OUTPUT_WDL!r} or {OUTPUT_VALUE!r}, got {outputs}"
        )
    meta = {p.key: p.value for p in model.metadata_props}
    fmt = meta.get(INPUT_FORMAT_KEY) or options["input_format"] or 1
    try:
        input_format = int(fmt)
    except ValueError:
        raise NetworkError(
            f"{source}: metadata {INPUT_FORMAT_KEY}: expected an integer, got {fmt!r}"
        ) from None
    return Heads(OUTPUT_WDL in outputs, OUTPUT_MLH in outputs, input_format)


def convert(
    model, source: str, base_dir, outputs: list[str], options: Mapping[str, Any], platform: str
) -> Converter:
    """The converter of ``model`` for the backend ``options`` and a device of ``platform``."""
    from .onnx_io import parse_dtype
    from .onnx_to_jax import Converter

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
    return Converter(
        model,
        source,
        outputs=outputs,
        base_dir=base_dir,
        float_override=parse_dtype(data_type) if data_type else None,
        io_dtype=parse_dtype(options["io_datatype"]),
        max_inline_constant_size=options["max_inline_constant_size"],
        layout=options["layout"],
        conv_method=conv_method,
        attention=options["attention"],
        packed_input=packed_input(options, platform),
    )


def packed_input(options: Mapping[str, Any], platform: str) -> bool:
    """Whether the programs take lc0's packed planes: ``auto`` on an accelerator, where a batch
    then crosses to the device in a twentieth of the bytes and the host skips expanding them
    (issue 39); on a CPU the float planes measured no slower."""
    choice = options["packed_input"]
    return platform != "cpu" if choice == "auto" else choice == "on"


def convert_file(path, outputs: list[str], options: Mapping[str, Any], platform: str) -> Converter:
    """The converter of the file at ``path`` (a network first loaded from the cache of
    converted networks, once something needs more than its parameters)."""
    model, source, base_dir = read_model(path, options)
    return convert(model, source, base_dir, outputs, options, platform)
