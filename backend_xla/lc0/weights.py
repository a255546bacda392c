"""Reading lc0's weight files (``.pb.gz``): gzip with a size cap, net.proto parsing (protobuf,
with the descriptor of :mod:`.netproto`), format fix-ups.

Layer decoding and batch-norm folding follow lc0 (``utils/weights_adapter.cc``,
``neural/network_legacy.cc``); format defaults for older files follow ``neural/loader.cc``.
"""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass

import numpy as np

from . import schema
from .errors import WeightsError
from .netproto import Message, parse, present

WEIGHT_MAGIC = 0x1C0
"""``Net.magic`` of every lc0 weight file."""
MAX_DECOMPRESSED_BYTES = 2 << 30
"""Cap on the decompressed size (2 GiB): the largest lc0 networks are well below it."""
_READ_CHUNK = 1 << 20
_GZIP_MAGIC = b"\x1f\x8b"
_PROTO_MAGIC_PREFIX = b"\x0d\xc0\x01\x00\x00"  # field 1 (fixed32) = 0x1c0: an uncompressed file
_BN_EPSILON = np.float32(1e-5)  # lc0's kEpsilon for batch-norm folding
_LINEAR16_SCALE = np.float32(0xFFFF)

ENC_LINEAR16, ENC_FLOAT16, ENC_BFLOAT16, ENC_FLOAT32 = 1, 2, 3, 4


@dataclass(frozen=True)
class NetworkFormat:
    """The decoded ``NetworkFormat`` after lc0's fix-ups for older files (enum values as ints)."""

    input: int
    output: int
    network: int
    policy: int
    value: int
    moves_left: int
    default_activation: int
    smolgen_activation: int
    ffn_activation: int
    input_embedding: int

    def name(self, field: str) -> str:
        """Enum name of ``field`` (e.g. ``name("network") == "NETWORK_SE_WITH_HEADFORMAT"``)."""
        value = getattr(self, field)
        return schema.NETWORK_FORMAT_ENUMS[field].get(value, f"{value} (unknown)")


@dataclass(frozen=True)
class Lc0Weights:
    """A parsed lc0 weight file.

    ``net`` is the parsed ``Net`` protobuf message (``net.weights`` holds the layers, still
    encoded: use :func:`layer_values`); ``weights`` is ``None`` when the file has none (an
    embedded ONNX model); ``format`` the network format after lc0's fix-ups;
    ``had_network_format`` whether the file declared one at all (older files do not).
    """

    path: str
    net: Message
    format: NetworkFormat
    had_network_format: bool
    min_version: tuple[int, int, int]
    license: str

    @property
    def weights(self) -> Message | None:
        return present(self.net, "weights")

    @property
    def input_format(self) -> int:
        return self.format.input


def read_bytes(path: str | os.PathLike, max_bytes: int = MAX_DECOMPRESSED_BYTES) -> bytes:
    """The decompressed content of ``path`` (gzip, or an uncompressed lc0 protobuf).

    Decompresses in chunks and stops with :class:`WeightsError` once more than ``max_bytes``
    come out, so a decompression bomb costs bounded memory and time.
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            head = f.read(len(_PROTO_MAGIC_PREFIX))
            if head.startswith(_PROTO_MAGIC_PREFIX):
                data = head + f.read(max_bytes + 1 - len(head))
                if len(data) > max_bytes:
                    raise WeightsError(f"{path}: larger than the {max_bytes}-byte limit")
                return data
            if not head.startswith(_GZIP_MAGIC):
                raise WeightsError(
                    f"{path}: not a gzip file (expected magic 1f8b, got {head[:2].hex() or 'empty file'})"
                )
            f.seek(0)
            return _gunzip(f, path, max_bytes)
    except OSError as e:
        raise WeightsError(f"{path}: cannot read: {e}") from e


def _gunzip(f, path: str, max_bytes: int) -> bytes:
    out = bytearray()
    inflater = zlib.decompressobj(wbits=31)
    pending = b""
    while True:
        if not pending:
            pending = f.read(_READ_CHUNK)
            if not pending:
                break
        try:
            piece = inflater.decompress(pending, max_bytes + 1 - len(out))
        except zlib.error as e:
            raise WeightsError(f"{path}: corrupt gzip data: {e}") from e
        out += piece
        if len(out) > max_bytes:
            raise WeightsError(f"{path}: decompresses to more than the {max_bytes}-byte limit")
        pending = inflater.unconsumed_tail
        if inflater.eof:
            rest = inflater.unused_data + pending + f.read(_READ_CHUNK)
            if rest.startswith(_GZIP_MAGIC):  # another gzip member: continue with it
                inflater, pending = zlib.decompressobj(wbits=31), rest
                continue
            break
    if not inflater.eof:
        raise WeightsError(f"{path}: truncated gzip stream (ended after {len(out)} bytes)")
    return bytes(out)


def read_weights(path: str | os.PathLike, max_bytes: int = MAX_DECOMPRESSED_BYTES) -> Lc0Weights:
    """Read and decode an lc0 weight file; raises :class:`WeightsError` naming the file."""
    path = os.fspath(path)
    data = read_bytes(path, max_bytes)
    return parse_weights(data, path)


def parse_weights(data: bytes, path: str = "<bytes>") -> Lc0Weights:
    """Decode the (decompressed) bytes of a weight file."""
    if len(data) < 2:
        raise WeightsError(f"{path}: too small to be an lc0 weight file ({len(data)} bytes)")
    if data[:2] in (b"1\n", b"2\n"):
        raise WeightsError(
            f"{path}: old text weight format (version {data[:1].decode()}) is not supported"
        )
    net = parse(data, "Net", where=path)
    if net.magic != WEIGHT_MAGIC:
        got = hex(net.magic) if net.HasField("magic") else "none"
        raise WeightsError(f"{path}: not an lc0 weight file (expected magic 0x1c0, got {got})")
    fmt_msg = present(present(net, "format"), "network_format")
    version = net.min_version  # unset fields read as 0, as lc0 reads them
    license = net.license  # protobuf hands back bytes for a proto2 string that is not UTF-8
    if isinstance(license, bytes):
        license = license.decode("utf-8", errors="replace")
    return Lc0Weights(
        path=path,
        net=net,
        format=_fixed_format(net, fmt_msg),
        had_network_format=fmt_msg is not None,
        min_version=(version.major, version.minor, version.patch),
        license=license,
    )


def _fixed_format(net: Message, fmt: Message | None) -> NetworkFormat:
    """lc0's ``FixOlderWeightsFile``: defaults for files from before each format field existed."""
    v = {name: getattr(fmt, name) if fmt is not None else 0 for name in schema.NETWORK_FORMAT_ENUMS}
    weights = present(net, "weights")
    n_encoders = len(weights.encoder) if weights is not None else 0
    if fmt is None:
        v.update(input=1, output=1, network=3, value=1, policy=1)
    elif v["network"] == 1:  # NETWORK_CLASSICAL
        v.update(network=3, value=1, policy=1)
    elif v["network"] == 2:  # NETWORK_SE
        v.update(network=4, value=1, policy=1)
    elif v["network"] == 4 and n_encoders > 0:  # attention body written with an older proto
        v["network"] = 6
        if weights.HasField("smolgen_w"):
            v.update(ffn_activation=8, smolgen_activation=7)  # RELU_2, SWISH
    elif v["network"] == 134:  # NETWORK_AB_LEGACY_WITH_MULTIHEADFORMAT
        v["network"] = 7
    if v["network"] == 6:
        if (
            weights is not None
            and weights.HasField("policy_heads")
            and weights.HasField("value_heads")
        ):
            v.update(network=7, input_embedding=2)
        if fmt is None or not fmt.HasField("input_embedding"):
            if v["input_embedding"] == 0:
                v["input_embedding"] = 1  # PE_MAP
    return NetworkFormat(**v)


def layer_values(layer: Message | None, where: str) -> np.ndarray:
    """Decode a ``Weights.Layer`` into float32 values (empty when the layer is absent).

    LINEAR16 maps each uint16 q to ``min * (1 - q/65535) + max * q/65535`` as lc0 does;
    FLOAT16, BFLOAT16 and FLOAT32 are little-endian. When ``dims`` are given, their product must
    match the number of values.
    """
    if layer is None or not layer.params:
        return np.zeros(0, np.float32)
    encoding = layer.encoding if layer.HasField("encoding") else ENC_LINEAR16
    params = layer.params
    width = 4 if encoding == ENC_FLOAT32 else 2
    if encoding not in (ENC_LINEAR16, ENC_FLOAT16, ENC_BFLOAT16, ENC_FLOAT32):
        name = schema.LAYER_ENCODINGS.get(encoding, str(encoding))
        raise WeightsError(f"{where}: unsupported layer encoding {name}")
    if len(params) % width:
        raise WeightsError(
            f"{where}: {schema.LAYER_ENCODINGS[encoding]} params of {len(params)} bytes "
            f"is not a multiple of {width}"
        )
    if encoding == ENC_LINEAR16:
        theta = np.frombuffer(params, "<u2").astype(np.float32) / _LINEAR16_SCALE
        lo = np.float32(layer.min_val)
        hi = np.float32(layer.max_val)
        values = lo * (np.float32(1) - theta) + hi * theta
    elif encoding == ENC_FLOAT16:
        values = np.frombuffer(params, "<f2").astype(np.float32)
    elif encoding == ENC_BFLOAT16:
        values = (np.frombuffer(params, "<u2").astype(np.uint32) << 16).view(np.float32)
    else:
        values = np.frombuffer(params, "<f4").astype(np.float32)
    if layer.dims:
        expected = int(np.prod(list(layer.dims)))
        if expected != values.size:
            raise WeightsError(
                f"{where}: dims {list(layer.dims)} declare {expected} values, "
                f"params hold {values.size}"
            )
    return values


@dataclass(frozen=True)
class ConvWeights:
    """A convolution after batch-norm folding: ``weights`` flat [out, in, k, k], ``biases`` [out]."""

    weights: np.ndarray
    biases: np.ndarray
    where: str

    @property
    def present(self) -> bool:
        return self.weights.size > 0


def conv_block(block: Message | None, where: str) -> ConvWeights:
    """Decode a ``ConvBlock`` and fold its batch-norm parameters into weights and biases.

    As lc0: ``bn_stddivs`` holds variances; gamma' = gamma / sqrt(var + 1e-5);
    w' = w * gamma'[out]; b' = beta - gamma' * (mean - b).
    """
    if block is None:
        empty = np.zeros(0, np.float32)
        return ConvWeights(empty, empty, where)

    def get(name: str) -> np.ndarray:
        return layer_values(getattr(block, name), f"{where}.{name}")

    weights, biases = get("weights"), get("biases")
    means, variances = get("bn_means"), get("bn_stddivs")
    gammas, betas = get("bn_gammas"), get("bn_betas")
    if weights.size == 0:
        return ConvWeights(weights, biases, where)
    outputs = biases.size or means.size
    if betas.size == 0:
        betas = np.zeros(means.size, np.float32)
        gammas = np.ones(means.size, np.float32)
    if biases.size == 0:
        biases = np.zeros(means.size, np.float32)
    if means.size == 0:
        return ConvWeights(weights, biases, where)
    for name, arr in (
        ("bn_stddivs", variances),
        ("bn_gammas", gammas),
        ("bn_betas", betas),
        ("biases", biases),
    ):
        if arr.size != means.size:
            raise WeightsError(
                f"{where}.{name}: expected {means.size} values (as bn_means), got {arr.size}"
            )
    if weights.size % outputs:
        raise WeightsError(
            f"{where}.weights: {weights.size} values do not split into {outputs} outputs"
        )
    scale = gammas * (np.float32(1) / np.sqrt(variances + _BN_EPSILON))
    folded_w = (weights.reshape(outputs, -1) * scale[:, None]).reshape(-1)
    folded_b = -scale * (means - biases) + betas
    return ConvWeights(folded_w.astype(np.float32), folded_b.astype(np.float32), where)
