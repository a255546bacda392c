"""lc0's network tools as modes: ``xlazero leela2onnx``, ``onnx2leela`` and ``describenet``
(lc0's src/tools/leela2onnx.cc, onnx2leela.cc, describenet.cc), with lc0's flags.

bin/leela2onnx and bin/describenet run these modes; bin/describenet also describes ONNX files
(:func:`describe_model`), which lc0's describenet does not read.
"""

from __future__ import annotations

import collections
import gzip
from pathlib import Path
from typing import Any

from engine.modes.flags import BOOL, CHOICE, INT, STRING, Flag, Mode, ModeError

_HLO = (
    "lc0's own ONNX->HLO conversion; bin/onnx2hlo NET.onnx --hlo-text-output=FILE writes the "
    "HLO that this project's backend compiles"
)
LEELA2ONNX_UNSUPPORTED = {
    "hlo-text-output": _HLO,
    "hlo-proto-output": _HLO,
    "hlo-batch-size": _HLO,
    "onnx2pytorch": "the graph is lc0's default one only",
}


NODE_NAMES = {
    "input-planes": ("/input/planes", "the input planes node", ""),
    "policy-head": ("/output/policy", "the policy head output node", ""),
    "wdl-head": ("/output/wdl", "the WDL head output node", "WdlHeadName"),
    "value-head": ("/output/value", "value policy head output node", ""),
    "mlh-head": ("/output/mlh", "the MLH head output node", "MlhHeadName"),
}
"""leela2onnx's node-name flags (without ``-name``): lc0's default name, help and UCI name. The
backend here reads the default names; other names are for other readers of the file."""


def leela2onnx_mode() -> Mode:
    flags = (
        Flag("input", STRING, "", "Path of the input Lc0 weights file."),
        Flag("output", STRING, "", "Path of the output ONNX file."),
        Flag("onnx-opset", INT, 17, "Opset to use in the ONNX model.", min=7, max=18),
        Flag("onnx-data-type", CHOICE, "f32", "Data type to use in the ONNX model.",
             choices=("f32", "f16", "bf16")),
        *(Flag(f"{flag}-name", STRING, name, f"ONNX name to use for {what}.", uci=uci)
          for flag, (name, what, uci) in NODE_NAMES.items()),
        Flag("value-head", STRING, "winner", "Value head to be used in the generated model. "
             "Typical values are 'winner', 'q' or 'st', but only 'winner' is always available."),
        Flag("policy-head", STRING, "vanilla", "Policy head to be used in the generated model. "
             "Typical values are 'vanilla', 'optimistic' or 'soft', but only 'vanilla' is always "
             "available."),
    )  # fmt: skip
    return Mode("leela2onnx", "Convert Leela network to ONNX.", flags, leela2onnx,
                LEELA2ONNX_UNSUPPORTED)  # fmt: skip


def _required(values: dict[str, Any], *names: str) -> None:
    for name in names:
        if not values[name]:
            raise ModeError(f"flag --{name} is required")


def leela2onnx(values: dict[str, Any]) -> int:
    from backend_xla.lc0 import WeightsError, build_onnx, read_weights

    _required(values, "input", "output")
    try:
        model = build_onnx(read_weights(values["input"]), values["onnx-data-type"],
                           values["policy-head"], values["value-head"],
                           opset=values["onnx-opset"])  # fmt: skip
        _rename(model, {name: values[f"{flag}-name"] for flag, (name, _, _) in NODE_NAMES.items()})
        Path(values["output"]).write_bytes(model.SerializeToString())
    except (WeightsError, OSError) as exc:
        raise ModeError(str(exc)) from exc
    fmt = {p.key: p.value for p in model.metadata_props}.get("lc0_input_format", "?")
    print(f"wrote {values['output']}: {len(model.graph.node)} nodes, input format {fmt}")
    return 0


def _rename(model, names: dict[str, str]) -> None:
    """The graph's inputs, outputs and the nodes' edges named ``names[old]`` (lc0's
    --input-planes-name and the head names)."""
    names = {old: new for old, new in names.items() if old != new}
    if not names:
        return
    graph = model.graph
    for value in (*graph.input, *graph.output):
        value.name = names.get(value.name, value.name)
    for node in graph.node:
        node.input[:] = [names.get(x, x) for x in node.input]
        node.output[:] = [names.get(x, x) for x in node.output]


INPUT_FORMATS = ("INPUT_UNKNOWN", "INPUT_CLASSICAL_112_PLANE", "INPUT_112_WITH_CASTLING_PLANE",
                 "INPUT_112_WITH_CANONICALIZATION", "INPUT_112_WITH_CANONICALIZATION_HECTOPLIES",
                 "INPUT_112_WITH_CANONICALIZATION_HECTOPLIES_ARMAGEDDON",
                 "INPUT_112_WITH_CANONICALIZATION_V2",
                 "INPUT_112_WITH_CANONICALIZATION_V2_ARMAGEDDON")  # fmt: skip
POLICY_FORMATS = ("POLICY_UNKNOWN", "POLICY_CLASSICAL", "POLICY_CONVOLUTION", "POLICY_ATTENTION")
VALUE_FORMATS = ("VALUE_UNKNOWN", "VALUE_CLASSICAL", "VALUE_WDL", "VALUE_PARAM")
MOVES_LEFT_FORMATS = ("MOVES_LEFT_NONE", "MOVES_LEFT_V1")
ONNX2LEELA_UNSUPPORTED = {
    "fix-rule50": "rewriting a tensorflow export's graph is not done here",
    "fix-wdl-softmax": "rewriting a tensorflow export's graph is not done here",
}


def onnx2leela_mode() -> Mode:
    def choice(name: str, uci: str, values: tuple[str, ...], default: str, help: str) -> Flag:
        return Flag(name, CHOICE, default, help, choices=values, uci=uci)

    def node(name: str, uci: str, help: str) -> Flag:
        return Flag(name, STRING, "", help, uci=uci)

    flags = (
        Flag("input", STRING, "", "Path of the input ONNX file.", uci="InputFile"),
        Flag("output", STRING, "", "Path of the output Lc0 weights file.", uci="OutputFile"),
        choice("input-format", "InputFormat", INPUT_FORMATS, "INPUT_CLASSICAL_112_PLANE",
               "Format in which the neural network expects input to be."),
        choice("policy-format", "PolicyFormat", POLICY_FORMATS, "POLICY_CLASSICAL",
               "Format of the policy head output."),
        choice("value-format", "ValueFormat", VALUE_FORMATS, "VALUE_WDL",
               "Format of the value head output."),
        choice("moves-left-format", "MovesLeftFormat", MOVES_LEFT_FORMATS, "MOVES_LEFT_V1",
               "Format of the moves left head output."),
        node("onnx-input", "OnnxInput", "The name of the input ONNX node."),
        node("onnx-output-policy", "OnnxOutputPolicy", "The name of the node for a policy head."),
        node("onnx-output-value", "OnnxOutputValue",
             "The name of the node for a classical value head."),
        node("onnx-output-wdl", "OnnxOutputWdl", "The name of the node for a wdl value head."),
        node("onnx-output-mlh", "OnnxOutputMlh", "The name of the node for a moves left head."),
        Flag("validate-weights", BOOL, True, "Do a basic check of the provided ONNX file.",
             uci="ValidateWeights"),
    )  # fmt: skip
    return Mode("onnx2leela", "Convert ONNX network to Leela net.", flags, onnx2leela,
                ONNX2LEELA_UNSUPPORTED)  # fmt: skip


def onnx2leela(values: dict[str, Any]) -> int:
    """lc0's ConvertOnnxToLeela: the ONNX file embedded in an lc0 ``Net`` (NETWORK_ONNX, min
    version 0.28), with the node names and formats the flags give."""
    import onnx

    from backend_xla.lc0 import schema
    from backend_xla.lc0.netproto import message

    _required(values, "input", "output")
    code = {n: {v: k for k, v in table.items()} for n, table in
            (("in", schema.INPUT_FORMATS), ("mlh", schema.MOVES_LEFT_FORMATS),
             ("pol", schema.POLICY_FORMATS), ("val", schema.VALUE_FORMATS))}  # fmt: skip
    try:
        blob = Path(values["input"]).read_bytes()
        model = onnx.load_from_string(blob)
    except Exception as exc:  # OSError, or onnx's DecodeError kinds
        raise ModeError(f"cannot read {values['input']} as ONNX: {exc}") from exc
    names = {k: values[f"onnx-{k}"] or None for k in
             ("input", "output-policy", "output-value", "output-wdl", "output-mlh")}  # fmt: skip
    data_type = _data_type(model, names["input"])
    network_format = {
        "network": {v: k for k, v in schema.NETWORK_STRUCTURES.items()}["NETWORK_ONNX"],
        "input": code["in"][values["input-format"]],
        "policy": code["pol"][values["policy-format"]],
        "value": code["val"][values["value-format"]],
        "output": 1 if names["output-value"] else 2 if names["output-wdl"] else None,
        "moves_left": code["mlh"][values["moves-left-format"]] if names["output-mlh"] else None,
    }
    if values["validate-weights"]:
        _validate(model, names)
    onnx_model = {"model": blob, "data_type": data_type, "input_planes": names["input"],
                  "output_policy": names["output-policy"], "output_value": names["output-value"],
                  "output_wdl": names["output-wdl"], "output_mlh": names["output-mlh"]}  # fmt: skip
    net = message("Net", {
        "magic": 0x1C0,
        "min_version": message("EngineVersion", {"major": 0, "minor": 28}),
        "format": message("Format", {"network_format": message("NetworkFormat", network_format)}),
        "onnx_model": message("OnnxModel", onnx_model),
    })  # fmt: skip
    with gzip.open(values["output"], "wb") as f:
        f.write(net.SerializeToString())
    print(f"wrote {values['output']}: {values['input']} as an lc0 network (NETWORK_ONNX, "
          f"{values['input-format']})\nDone.")  # fmt: skip
    return 0


ONNX_FLOAT, ONNX_FLOAT16, ONNX_BFLOAT16 = 1, 10, 16
"""lc0's OnnxModel.DataType values (ONNX's own element types)."""


def _data_type(model, input_name: str | None) -> int:
    """lc0's GetDataType: the input's element type, float or float16 (float without an input)."""
    for i in model.graph.input:
        if i.name == input_name and i.type.tensor_type.elem_type:
            elem = i.type.tensor_type.elem_type
            if elem not in (ONNX_FLOAT, ONNX_FLOAT16):
                raise ModeError(f"input {input_name}: unsupported data type {elem}")
            return elem
    return ONNX_FLOAT


def _validate(model, names: dict[str, str | None]) -> None:
    """lc0's ValidateNetwork: the named nodes exist, and the required ones are named."""
    inputs = {i.name for i in model.graph.input}
    outputs = {o.name for o in model.graph.output}
    for key, name in names.items():
        if name is not None and name not in (inputs if key == "input" else outputs):
            raise ModeError(f"node '{name}' (--onnx-{key}) doesn't exist in ONNX")
    if names["input"] is None:
        raise ModeError("the --onnx-input must be defined. Typical value for the ONNX networks "
                        "exported from Leela is /input/planes.")  # fmt: skip
    if names["output-policy"] is None:
        raise ModeError("the --onnx-output-policy must be defined. Typical value for the ONNX "
                        "networks exported from Leela is /output/policy.")  # fmt: skip
    if (names["output-value"] is None) == (names["output-wdl"] is None):
        raise ModeError("exactly one of --onnx-output-value and --onnx-output-wdl must be "
                        "defined (typically /output/value or /output/wdl)")  # fmt: skip


def describenet_mode() -> Mode:
    flags = (Flag("weights", STRING, "", "Path of the input Lc0 weights file.", short="w",
                  uci="WeightsFile"),)  # fmt: skip
    return Mode("describenet", "Shows details about the Leela network.", flags, describenet)


def describenet(values: dict[str, Any]) -> int:
    """lc0's describenet for an lc0 weight file (its format, body and heads), then the network
    as the backend here runs it (ONNX: inputs, outputs, ops); an ONNX file: the latter only."""
    from backend_xla.errors import NetworkError
    from backend_xla.lc0 import WeightsError

    _required(values, "weights")
    path = values["weights"]
    try:
        if path.endswith((".pb.gz", ".pb")):
            from backend_xla.lc0 import describe, load_lc0_onnx

            print("\n".join(describe(path)))
            print("-- as ONNX --")
            model = load_lc0_onnx(path)
        else:
            from backend_xla.onnx_io import load_model

            model = load_model(Path(path))
    except (NetworkError, WeightsError, ValueError, OSError) as exc:
        raise ModeError(str(exc)) from exc
    print("\n".join(describe_model(model)))
    return 0


def _shape(value) -> str:
    from backend_xla.errors import NetworkError
    from backend_xla.onnx_io import onnx_to_np_dtype

    dims = [
        d.dim_param or str(d.dim_value) if (d.dim_param or d.dim_value) else "?"
        for d in value.type.tensor_type.shape.dim
    ]
    try:
        dtype = onnx_to_np_dtype(value.type.tensor_type.elem_type).name
    except NetworkError:
        dtype = "?"
    return f"{dtype}[{', '.join(dims)}]"


def describe_model(model) -> list[str]:
    """Human-readable summary of an ONNX model: I/O, opsets, op counts, parameter count."""
    import numpy as np

    from backend_xla import ops

    g = model.graph
    inits = {i.name for i in g.initializer}
    params = sum(int(np.prod(i.dims)) for i in g.initializer)
    counts = collections.Counter(n.op_type for n in g.node)
    unsupported = sorted(op for op in counts if ops.handler_for(op) is None)
    opsets = ", ".join(f"{o.domain or 'ai.onnx'}:{o.version}" for o in model.opset_import)
    lines = [f"opsets: {opsets}"]
    lines += [f"input  {i.name}: {_shape(i)}" for i in g.input if i.name not in inits]
    lines += [f"output {o.name}: {_shape(o)}" for o in g.output]
    lines.append(
        f"nodes: {len(g.node)}; initializers: {len(g.initializer)}; parameters: {params:,}"
    )
    lines += [f"  {op:<22} {n}" for op, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    for p in model.metadata_props:
        lines.append(f"metadata {p.key} = {p.value}")
    lines.append("unsupported ops: " + (", ".join(unsupported) if unsupported else "none"))
    return lines
