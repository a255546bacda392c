"""Implementation of bin/onnx2hlo and bin/describenet: a module so that tests can call them, and
in bin/, not installed, since the engine never runs them."""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

import numpy as np
import onnx

from backend_xla import ops
from backend_xla.errors import NetworkError, UnsupportedOpError
from backend_xla.onnx_io import load_model, onnx_to_np_dtype, parse_dtype
from backend_xla.onnx_to_jax import ONNX_DOMAINS, Converter


def _load_any(path: str) -> tuple[onnx.ModelProto, Path]:
    p = Path(path)
    if p.name.endswith(".pb.gz"):
        from backend_xla.lc0 import load_lc0_onnx

        return load_lc0_onnx(str(p)), p.parent
    return load_model(p), p.parent


def truncate_at_unsupported(model: onnx.ModelProto) -> onnx.ModelProto:
    """The graph up to the first node with an unsupported op; its inputs become the outputs."""
    nodes = list(model.graph.node)
    first = next(
        (
            i
            for i, n in enumerate(nodes)
            if n.domain not in ONNX_DOMAINS or ops.handler_for(n.op_type) is None
        ),
        None,
    )
    if first is None:
        return model
    kept = nodes[:first]
    produced = {o for n in kept for o in n.output}
    outputs = [name for name in nodes[first].input if name in produced]
    if not outputs:
        raise NetworkError(
            f"node {nodes[first].name!r} ({nodes[first].op_type}) is unsupported "
            "and none of its inputs is computed by earlier nodes: nothing to emit"
        )
    partial = onnx.ModelProto()
    partial.CopyFrom(model)
    del partial.graph.node[:]
    partial.graph.node.extend(kept)
    del partial.graph.output[:]
    partial.graph.output.extend(onnx.helper.make_tensor_value_info(n, 0, None) for n in outputs)
    return partial


def onnx2hlo_main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="onnx2hlo", description="Convert an ONNX network (or lc0 .pb.gz) to XLA HLO."
    )
    parser.add_argument("net")
    parser.add_argument("--hlo-text-output", help="FILE or - for stdout")
    parser.add_argument("--hlo-proto-output", help="FILE (serialized HloModuleProto)")
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--data-type", choices=("f32", "f16", "bf16"), default=None)
    parser.add_argument("--io-data-type", choices=("f32", "f16", "bf16"), default=None)
    parser.add_argument("--max-inline-constant-size", type=int, default=1024)
    parser.add_argument(
        "--conv-method",
        choices=("lax", "auto", "winograd2"),
        default="lax",
        help="lax (default): one convolution per Conv, as lc0's own conversion, for any XLA "
        "device; auto: as backend_xla runs it on a CPU (Winograd, parameters made at load)",
    )
    parser.add_argument(
        "--allow-partial-result",
        action="store_true",
        help="on an unsupported op, emit the graph up to it instead of failing",
    )
    args = parser.parse_args(argv)
    if not args.hlo_text_output and not args.hlo_proto_output:
        args.hlo_text_output = "-"
    try:
        import jax

        model, base_dir = _load_any(args.net)
        if args.allow_partial_result:
            model = truncate_at_unsupported(model)
        conv = Converter(
            model,
            args.net,
            base_dir=base_dir,
            float_override=parse_dtype(args.data_type) if args.data_type else None,
            io_dtype=parse_dtype(args.io_data_type) if args.io_data_type else None,
            max_inline_constant_size=args.max_inline_constant_size,
            conv_method=args.conv_method,
        )
        fn, specs = conv.function(args.batch_size)
        params = {
            k: jax.ShapeDtypeStruct(v.shape, v.dtype) for k, v in conv.params_for(False).items()
        }
        lowered = jax.jit(fn).lower(
            params, *[jax.ShapeDtypeStruct(s.shape, s.dtype) for s in specs]
        )
        computation = lowered.compiler_ir("hlo")
        assert computation is not None  # None only for a dialect jax does not know
    except (NetworkError, UnsupportedOpError) as exc:
        print(f"onnx2hlo: {exc}", file=sys.stderr)
        return 1
    if args.hlo_text_output:
        text = computation.as_hlo_text()
        if args.hlo_text_output == "-":
            sys.stdout.write(text)
        else:
            Path(args.hlo_text_output).write_text(text)
    if args.hlo_proto_output:
        Path(args.hlo_proto_output).write_bytes(computation.as_serialized_hlo_module_proto())
    return 0


def _shape(value: onnx.ValueInfoProto) -> str:
    dims = [
        d.dim_param or str(d.dim_value) if (d.dim_param or d.dim_value) else "?"
        for d in value.type.tensor_type.shape.dim
    ]
    try:
        dtype = onnx_to_np_dtype(value.type.tensor_type.elem_type).name
    except NetworkError:
        dtype = "?"
    return f"{dtype}[{', '.join(dims)}]"


def describe_model(model: onnx.ModelProto) -> list[str]:
    """Human-readable summary of an ONNX model: I/O, opsets, op counts, parameter count."""
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


def describenet_main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="describenet", description="Describe an ONNX network or lc0 weight file."
    )
    parser.add_argument("net")
    args = parser.parse_args(argv)
    try:
        if args.net.endswith(".pb.gz"):
            try:
                from backend_xla.lc0 import describe
            except ImportError:
                describe = None  # type: ignore[assignment]  # without lc0 support: ONNX only
            if describe is not None:
                print("\n".join(describe(args.net)))
                print("-- as ONNX --")
        model, _ = _load_any(args.net)
    except (NetworkError, ValueError) as exc:
        print(f"describenet: {exc}", file=sys.stderr)
        return 1
    print("\n".join(describe_model(model)))
    return 0
