"""A network's file, stages 1 and 2 of a load (:func:`backend_xla.load_network`): read (ONNX or an lc0
weight file), and checked for lc0's input and outputs."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from .errors import NetworkError

if TYPE_CHECKING:
    import onnx  # imported where a file is read: a warm start from the caches never needs it

OUTPUT_POLICY = "/output/policy"
OUTPUT_WDL = "/output/wdl"
OUTPUT_VALUE = "/output/value"
OUTPUT_MLH = "/output/mlh"
INPUT_FORMAT_KEY = "lc0_input_format"


def is_model(path) -> bool:
    """Whether ``path`` is an onnx.ModelProto (without importing onnx for a path)."""
    onnx_module = sys.modules.get("onnx")
    return onnx_module is not None and isinstance(path, onnx_module.ModelProto)


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


class Model(NamedTuple):
    """Stages 1 and 2's value: the network's ONNX model and what lc0's conventions say of it."""

    proto: Any
    """The onnx.ModelProto (an lc0 weight file converted as lc0's leela2onnx would write it)."""
    name: str
    """The network's name in messages (its file's path)."""
    base_dir: Path | None
    """The folder of an ONNX file's external data."""
    heads: Heads
    external: bool
    """Whether weights lie in other files (which the file's digest, the key of the converted
    network, does not cover: such a network is not kept converted)."""


def read(path: str | os.PathLike | onnx.ModelProto, options: Mapping[str, Any]) -> Model:
    """Stage 1, the file read: ONNX, or an lc0 weight file with the heads ``policy_head`` and
    ``value_head`` choose; stage 2, lc0's graph: its input and outputs checked, its heads and input
    format (the model's metadata, else ``input_format``). One body, so that the reading is done
    before the checking begins (a network's load enters each file once)."""
    import onnx

    from .onnx_io import INPUT_NAME, load_model

    if is_model(path):
        assert not isinstance(path, (str, os.PathLike))
        model, name, base_dir = path, f"<ONNX model {path.graph.name or 'unnamed'}>", None
    elif (p := Path(path)).name.endswith(".pb.gz") or p.suffix == ".pb":
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
        name, base_dir = str(p), p.parent
    else:
        model, name, base_dir = load_model(p), str(p), p.parent

    graph_inputs = {i.name for i in model.graph.input}
    if INPUT_NAME not in graph_inputs:
        raise NetworkError(f"{name}: expected input {INPUT_NAME!r}, got {sorted(graph_inputs)}")
    outputs = [o.name for o in model.graph.output]
    if OUTPUT_POLICY not in outputs or not ({OUTPUT_WDL, OUTPUT_VALUE} & set(outputs)):
        raise NetworkError(
            f"{name}: expected outputs {OUTPUT_POLICY!r} and "
            f"{OUTPUT_WDL!r} or {OUTPUT_VALUE!r}, got {outputs}"
        )
    meta = {p.key: p.value for p in model.metadata_props}
    fmt = meta.get(INPUT_FORMAT_KEY) or options["input_format"] or 1
    try:
        input_format = int(fmt)
    except ValueError:
        raise NetworkError(
            f"{name}: metadata {INPUT_FORMAT_KEY}: expected an integer, got {fmt!r}"
        ) from None
    heads = Heads(OUTPUT_WDL in outputs, OUTPUT_MLH in outputs, input_format)
    external = any(t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer)
    return Model(model, name, base_dir, heads, external)
