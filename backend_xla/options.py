"""Backend options in lc0's ``--backend-opts`` syntax: ``key=value,key=value``.

Every option is declared once in :data:`OPTIONS` (name, type, default, allowed values, help);
parsing, validation, error messages and the documentation table all read that table.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.backend import OptionError, read_options

ATTENTION_CHOICES = ("graph", "xla", "cudnn")
"""``graph``: the ONNX nodes as written; ``xla``/``cudnn``: each attention as one
``jax.nn.dot_product_attention`` with that implementation (backend_xla.attention)."""

SPLIT_MIN_ROWS = 8
"""Default ``split_min_rows``: rows per device below which a batch is not split (docs/backend.md)."""

DATA_TYPES = ("f32", "f16", "bf16")
BACKEND = "xla"
"""The backend's name, in messages (the engine registers it under it)."""
LIST_SEPARATOR = ";"
"""Separates the items of a list value (``batch_buckets=1;8;32``): ',' already separates options."""


@dataclass(frozen=True)
class Option:
    name: str
    type: str  # "int" | "str" | "choice" | "int_list" | "path" | "count" (an int or "auto")
    default: Any
    help: str
    choices: tuple[str, ...] = ()
    min: int | None = None
    max: int | None = None
    aliases: tuple[str, ...] = ()

    def read(self, raw: str) -> Any:
        """The value of ``raw`` for this option; raises OptionError naming the key, what is
        allowed and ``raw``."""
        if self.type == "int":
            return _int(self, raw)
        if self.type == "count":
            return raw if raw == "auto" else _int(self, raw)
        if self.type == "devices":
            return _devices(self, raw)
        if self.type == "int_list":
            parts = [p for p in raw.split(LIST_SEPARATOR) if p.strip()]
            if not parts:
                raise OptionError(
                    f"backend option {self.name}: expected {_allowed(self)}, got {raw!r}"
                )
            return sorted({_int(self, p.strip()) for p in parts})
        if self.type == "choice" and raw not in self.choices:
            raise OptionError(f"backend option {self.name}: expected {_allowed(self)}, got {raw!r}")
        return raw


def default_cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    # "jax-2": programs cached before XLA's threads compiled on one core (backend_xla.runtime)
    # kept the parallel loop partitions that cost the engine a fifth of its network speed.
    return str(Path(base) / "xlazero" / "jax-2")


OPTIONS: tuple[Option, ...] = (
    Option(
        "device",
        "devices",
        None,
        "the JAX device(s) to run on: an index (one device, no batch split), several "
        "';'-separated (0;1: each batch split over them) or all (every local device); "
        "default: every device in host_devices",
        min=0,
    ),
    Option(
        "host_devices",
        "count",
        "auto",
        "devices to split each batch over (auto: every local device; XLA's CPU client has "
        "one per core when backend_xla is imported before jax)",
        min=1,
    ),
    Option(
        "device_calls",
        "count",
        "auto",
        "network calls that may run at once on one device (auto: 2 on an accelerator, where "
        "one call's dispatch and copies overlap the other's kernels, as the search keeps two "
        "batches in flight; on a CPU one a device, each batch on its own core)",
        min=1,
        max=4,
    ),
    Option(
        "split_min_rows",
        "int",
        SPLIT_MIN_ROWS,
        "batch sizes with fewer rows per device than this run on one device, unsplit "
        "(measured: docs/backend.md, Speed)",
        min=1,
    ),
    Option(
        "layout",
        "choice",
        "NHWC",
        "activation layout: NHWC keeps 4-D activations channels-last between convs "
        "(docs/performance.md); NCHW converts op by op in ONNX layout",
        choices=("NHWC", "NCHW"),
    ),
    Option(
        "conv_method",
        "choice",
        "auto",
        "convolution formulation in the NHWC layout (backend_xla.ops.conv_methods): auto runs "
        "3×3 convs of up to 128 channels as Winograd F(2×2) on filters transformed at load, in "
        "micro-batches of 8 rows (1.2× XLA's convolution on Maia), the others as lax; on "
        "other platforms auto is lax",
        choices=("lax", "auto", "im2col", "im2row", "shifted", "winograd2", "winograd4"),
    ),
    Option(
        "attention",
        "choice",
        "graph",
        "scaled dot-product attention (attention bodies and heads): graph runs the ONNX nodes "
        "as written; xla and cudnn run each head's MatMul/Mul/Add/Softmax/MatMul as one "
        "jax.nn.dot_product_attention with that implementation (cudnn: a GPU, f16 or bf16)",
        choices=ATTENTION_CHOICES,
    ),
    Option(
        "packed_input",
        "choice",
        "auto",
        "whether the programs take lc0's packed planes (a 64-bit mask and a value a plane, "
        "expanded on the device) instead of float planes: auto takes them on an accelerator, "
        "where a batch crosses in a twentieth of the bytes",
        choices=("auto", "on", "off"),
    ),
    Option(
        "policy_gather",
        "choice",
        "auto",
        "whether the device gathers the legal moves' logits for the search (which then copies "
        "back 32-256 of the 1858 logits a position): auto on an accelerator, where the "
        "policy's copy back is the larger part of a small net's call",
        choices=("auto", "on", "off"),
    ),
    Option(
        "data_type",
        "choice",
        None,
        "compute type (default: the network's own float type)",
        choices=DATA_TYPES,
        aliases=("datatype",),
    ),
    Option(
        "io_datatype",
        "choice",
        "f32",
        "type of the executables' inputs and outputs (an output computed in a narrower type, "
        "data_type bf16 or f16, leaves the device in that type and is widened on the host)",
        choices=DATA_TYPES,
    ),
    Option(
        "max_batch",
        "int",
        512,
        "largest compiled batch size; larger batches are split",
        min=1,
        max=1 << 16,
    ),
    Option(
        "steps",
        "int",
        16,
        "number of compiled batch sizes: max_batch*k/steps for k = 1..steps (as lc0's XLA)",
        min=1,
        max=1024,
    ),
    Option(
        "batch_buckets",
        "int_list",
        None,
        "explicit batch sizes, ';'-separated (e.g. 1;8;32;256); overrides max_batch/steps",
        min=1,
        max=1 << 16,
    ),
    Option(
        "plugin_path",
        "path",
        None,
        "PJRT plugin library to add to JAX (as lc0: a name with a slash is a path, a bare "
        "name is looked up as dlopen does); given to JAX through PJRT_NAMES_AND_LIBRARY_PATHS, "
        "so it must come with the first network loaded in the process",
    ),
    Option(
        "hlo_proto_dump_dir",
        "path",
        None,
        "write each compiled batch size's HLO module proto here (<network>-batch<N>.hlo.pb), "
        "as lc0's XLA backend",
    ),
    Option(
        "cache_dir",
        "str",
        "default",
        "JAX persistent compilation cache directory ('none' disables; default: "
        "$XDG_CACHE_HOME/xlazero/jax-2)",
    ),
    Option(
        "input_format",
        "int",
        None,
        "lc0 input format, used when the ONNX file has no lc0_input_format metadata",
        min=1,
    ),
    Option(
        "policy_head",
        "str",
        "vanilla",
        "policy head of a multi-head lc0 weight file (.pb.gz), as lc0's --policy-head",
        aliases=("policy-head",),
    ),
    Option(
        "value_head",
        "str",
        "winner",
        "value head of a multi-head lc0 weight file (.pb.gz), as lc0's --value-head",
        aliases=("value-head",),
    ),
    Option(
        "max_inline_constant_size",
        "int",
        1024,
        "initializers up to this many bytes are inlined in the HLO; larger are parameters",
        min=0,
    ),
    Option(
        "background_compile",
        "int",
        1,
        "1: compile at load the smallest batch size that holds the search's minibatch (7 on "
        "a CPU, 256 on an accelerator), and a larger one only when a batch first outgrows every "
        "compiled size, in a background thread (that batch and those after it run split over "
        "the compiled sizes meanwhile); 2: compile that size at load and every other one at "
        "once in a background thread; 0: compile every size at load",
        min=0,
        max=2,
    ),
)


def _allowed(opt: Option) -> str:
    if opt.choices:
        return "one of " + ", ".join(opt.choices)
    if opt.type == "count":
        if opt.max is not None:
            return f"auto or an integer in [{opt.min}, {opt.max}]"
        return f"auto or an integer >= {opt.min}"
    if opt.type == "devices":
        return "an index >= 0, ';'-separated indices or all"
    if opt.type in ("int", "int_list"):
        rng = (
            f" in [{opt.min}, {opt.max}]"
            if opt.max is not None
            else (f" >= {opt.min}" if opt.min is not None else "")
        )
        return ("';'-separated integers" if opt.type == "int_list" else "an integer") + rng
    return "a path" if opt.type == "path" else "a string"


def _int(opt: Option, text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise OptionError(
            f"backend option {opt.name}: expected {_allowed(opt)}, got {text!r}"
        ) from None
    if (opt.min is not None and value < opt.min) or (opt.max is not None and value > opt.max):
        raise OptionError(f"backend option {opt.name}: expected {_allowed(opt)}, got {value}")
    return value


def _devices(opt: Option, raw: str) -> int | str | list[int]:
    parts = [p.strip() for p in raw.split(LIST_SEPARATOR) if p.strip()]
    if raw == "all":
        return "all"
    if len(parts) == 1:
        return _int(opt, parts[0])
    if not parts:
        raise OptionError(f"backend option device: expected {_allowed(opt)}, got {raw!r}")
    indices = [_int(opt, p) for p in parts]
    if len(set(indices)) != len(indices):
        raise OptionError(f"backend option device: expected distinct indices, got {raw!r}")
    return indices


BackendOptions = Mapping[str, Any]
"""The parsed backend options: every key, read-only (:func:`parse_options`)."""


def parse_options(text: str) -> BackendOptions:
    """Parse ``key=value,...`` into a read-only mapping with every option (defaults filled
    in): parsed once at a load (:func:`backend_xla.load_network` reads the text against
    :data:`OPTIONS` itself), handed to each stage as it is."""
    return read_options(text, OPTIONS, BACKEND)


def options_table_markdown() -> str:
    """The option table as Markdown (for docs/backend.md and the README)."""
    rows = ["| option | type | default | allowed | help |", "|---|---|---|---|---|"]
    for o in OPTIONS:
        name = f"`{o.name}`" + "".join(f" (alias `{a}`)" for a in o.aliases)
        rows.append(
            f"| {name} | {o.type} | {o.default if o.default is not None else '–'} | "
            f"{_allowed(o)} | {o.help} |"
        )
    return "\n".join(rows)
