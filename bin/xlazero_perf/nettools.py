"""Implementation of bin/onnx2hlo (and bin/describenet's argument, the mode being
engine/modes/nets.py): a module so that tests can call them, in bin/, not installed, since the
engine never runs them."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import onnx

from backend_xla import ops
from backend_xla.errors import NetworkError, UnsupportedOpError
from backend_xla.onnx_io import load_model, parse_dtype
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


def describenet_main(argv: list[str] | None = None) -> int:
    """``xlazero describenet`` (engine/modes/nets.py), which also takes the network as the one
    argument (``bin/describenet NET``)."""
    from engine.modes import main

    args = sys.argv[1:] if argv is None else argv
    if len(args) == 1 and not args[0].startswith("-"):
        args = [f"--weights={args[0]}"]
    return main(["describenet", *args])
