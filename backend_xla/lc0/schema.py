"""lc0's ``net.proto`` (package pblczero, proto2) as field tables: numbers, names, kinds, enums.

Transcribed from LeelaChessZero/lczero-common ``proto/net.proto``; :mod:`.netproto` builds the
protobuf descriptor from these field numbers and types. A kind is a scalar type name or the name
of a message type.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dc_field


@dataclass(frozen=True)
class Field:
    number: int
    name: str
    kind: str
    repeated: bool = False


@dataclass(frozen=True)
class MessageSpec:
    name: str
    fields: tuple[Field, ...]
    by_number: dict = dc_field(default_factory=dict, compare=False)
    by_name: dict = dc_field(default_factory=dict, compare=False)

    def __post_init__(self):
        self.by_number.update({f.number: f for f in self.fields})
        self.by_name.update({f.name: f for f in self.fields})


def _layers(*pairs: tuple[int, str]) -> list[Field]:
    return [Field(n, name, "Layer") for n, name in pairs]


_MESSAGES = [
    MessageSpec(
        "EngineVersion",
        (Field(1, "major", "uint32"), Field(2, "minor", "uint32"), Field(3, "patch", "uint32")),
    ),
    MessageSpec(
        "Layer",
        (
            Field(1, "min_val", "float"),
            Field(2, "max_val", "float"),
            Field(3, "params", "bytes"),
            Field(4, "encoding", "enum"),
            Field(5, "dims", "uint32", repeated=True),
        ),
    ),
    MessageSpec(
        "ConvBlock",
        tuple(
            _layers(
                (1, "weights"),
                (2, "biases"),
                (3, "bn_means"),
                (4, "bn_stddivs"),
                (5, "bn_gammas"),
                (6, "bn_betas"),
            )
        ),
    ),
    MessageSpec("SEunit", tuple(_layers((1, "w1"), (2, "b1"), (3, "w2"), (4, "b2")))),
    MessageSpec(
        "Residual",
        (Field(1, "conv1", "ConvBlock"), Field(2, "conv2", "ConvBlock"), Field(3, "se", "SEunit")),
    ),
    MessageSpec(
        "Smolgen",
        tuple(
            _layers(
                (1, "compress"),
                (2, "dense1_w"),
                (3, "dense1_b"),
                (4, "ln1_gammas"),
                (5, "ln1_betas"),
                (6, "dense2_w"),
                (7, "dense2_b"),
                (8, "ln2_gammas"),
                (9, "ln2_betas"),
            )
        ),
    ),
    MessageSpec(
        "MHA",
        tuple(
            _layers(
                (1, "q_w"),
                (2, "q_b"),
                (3, "k_w"),
                (4, "k_b"),
                (5, "v_w"),
                (6, "v_b"),
                (7, "dense_w"),
                (8, "dense_b"),
                (10, "rpe_q"),
                (11, "rpe_k"),
                (12, "rpe_v"),
            )
            + [Field(9, "smolgen", "Smolgen")]
        ),
    ),
    MessageSpec(
        "FFN", tuple(_layers((1, "dense1_w"), (2, "dense1_b"), (3, "dense2_w"), (4, "dense2_b")))
    ),
    MessageSpec(
        "EncoderLayer",
        (
            Field(1, "mha", "MHA"),
            Field(2, "ln1_gammas", "Layer"),
            Field(3, "ln1_betas", "Layer"),
            Field(4, "ffn", "FFN"),
            Field(5, "ln2_gammas", "Layer"),
            Field(6, "ln2_betas", "Layer"),
        ),
    ),
    MessageSpec(
        "PolicyHead",
        tuple(
            _layers(
                (1, "ip_pol_w"),
                (2, "ip_pol_b"),
                (3, "ip2_pol_w"),
                (4, "ip2_pol_b"),
                (5, "ip3_pol_w"),
                (6, "ip3_pol_b"),
                (7, "ip4_pol_w"),
            )
            + [
                Field(8, "pol_encoder", "EncoderLayer", repeated=True),
                Field(9, "pol_headcount", "uint32"),
                Field(10, "policy1", "ConvBlock"),
                Field(11, "policy", "ConvBlock"),
            ]
        ),
    ),
    MessageSpec(
        "ValueHead",
        tuple(
            _layers(
                (1, "ip_val_w"),
                (2, "ip_val_b"),
                (3, "ip1_val_w"),
                (4, "ip1_val_b"),
                (5, "ip2_val_w"),
                (6, "ip2_val_b"),
                (7, "ip_val_err_w"),
                (8, "ip_val_err_b"),
                (9, "ip_val_cat_w"),
                (10, "ip_val_cat_b"),
            )
            + [Field(11, "value", "ConvBlock")]
        ),
    ),
    MessageSpec("PolicyHeadMap", (Field(1, "key", "string"), Field(2, "value", "PolicyHead"))),
    MessageSpec(
        "PolicyHeads",
        (
            Field(1, "ip_pol_w", "Layer"),
            Field(2, "ip_pol_b", "Layer"),
            Field(3, "vanilla", "PolicyHead"),
            Field(4, "optimistic_st", "PolicyHead"),
            Field(5, "soft", "PolicyHead"),
            Field(6, "opponent", "PolicyHead"),
            Field(7, "policy_head_map", "PolicyHeadMap", repeated=True),
        ),
    ),
    MessageSpec("ValueHeadMap", (Field(1, "key", "string"), Field(2, "value", "ValueHead"))),
    MessageSpec(
        "ValueHeads",
        (
            Field(1, "winner", "ValueHead"),
            Field(2, "q", "ValueHead"),
            Field(3, "st", "ValueHead"),
            Field(4, "value_head_map", "ValueHeadMap", repeated=True),
        ),
    ),
    MessageSpec(
        "Weights",
        tuple(
            [
                Field(1, "input", "ConvBlock"),
                Field(2, "residual", "Residual", repeated=True),
                Field(41, "ip_emb_ffn", "FFN"),
                Field(27, "encoder", "EncoderLayer", repeated=True),
                Field(28, "headcount", "uint32"),
                Field(21, "pol_encoder", "EncoderLayer", repeated=True),
                Field(24, "pol_headcount", "uint32"),
                Field(11, "policy1", "ConvBlock"),
                Field(3, "policy", "ConvBlock"),
                Field(6, "value", "ConvBlock"),
                Field(44, "value_heads", "ValueHeads"),
                Field(45, "policy_heads", "PolicyHeads"),
                Field(12, "moves_left", "ConvBlock"),
            ]
            + _layers(
                (37, "ip_emb_preproc_w"),
                (38, "ip_emb_preproc_b"),
                (25, "ip_emb_w"),
                (26, "ip_emb_b"),
                (39, "ip_emb_ln_gammas"),
                (40, "ip_emb_ln_betas"),
                (33, "ip_mult_gate"),
                (34, "ip_add_gate"),
                (42, "ip_emb_ffn_ln_gammas"),
                (43, "ip_emb_ffn_ln_betas"),
                (4, "ip_pol_w"),
                (5, "ip_pol_b"),
                (17, "ip2_pol_w"),
                (18, "ip2_pol_b"),
                (19, "ip3_pol_w"),
                (20, "ip3_pol_b"),
                (22, "ip4_pol_w"),
                (29, "ip_val_w"),
                (30, "ip_val_b"),
                (7, "ip1_val_w"),
                (8, "ip1_val_b"),
                (9, "ip2_val_w"),
                (10, "ip2_val_b"),
                (31, "ip_mov_w"),
                (32, "ip_mov_b"),
                (13, "ip1_mov_w"),
                (14, "ip1_mov_b"),
                (15, "ip2_mov_w"),
                (16, "ip2_mov_b"),
                (35, "smolgen_w"),
                (36, "smolgen_b"),
            )
        ),
    ),
    MessageSpec(
        "TrainingParams",
        (
            Field(1, "training_steps", "uint32"),
            Field(2, "learning_rate", "float"),
            Field(3, "mse_loss", "float"),
            Field(4, "policy_loss", "float"),
            Field(5, "accuracy", "float"),
            Field(6, "lc0_params", "string"),
        ),
    ),
    MessageSpec(
        "NetworkFormat",
        tuple(
            Field(n, name, "enum")
            for n, name in [
                (1, "input"),
                (2, "output"),
                (3, "network"),
                (4, "policy"),
                (5, "value"),
                (6, "moves_left"),
                (7, "default_activation"),
                (8, "smolgen_activation"),
                (9, "ffn_activation"),
                (10, "input_embedding"),
            ]
        ),
    ),
    MessageSpec(
        "Format",
        (Field(1, "weights_encoding", "enum"), Field(2, "network_format", "NetworkFormat")),
    ),
    MessageSpec(
        "OnnxModel",
        (
            Field(1, "model", "bytes"),
            Field(2, "data_type", "enum"),
            Field(3, "input_planes", "string"),
            Field(4, "output_value", "string"),
            Field(5, "output_wdl", "string"),
            Field(6, "output_policy", "string"),
            Field(7, "output_mlh", "string"),
        ),
    ),
    MessageSpec(
        "Net",
        (
            Field(1, "magic", "fixed32"),
            Field(2, "license", "string"),
            Field(3, "min_version", "EngineVersion"),
            Field(4, "format", "Format"),
            Field(5, "training_params", "TrainingParams"),
            Field(10, "weights", "Weights"),
            Field(11, "onnx_model", "OnnxModel"),
        ),
    ),
]

SCHEMA: dict[str, MessageSpec] = {m.name: m for m in _MESSAGES}

# Enum value names, keyed by NetworkFormat field (and the two encoding enums).
INPUT_FORMATS = {
    0: "INPUT_UNKNOWN",
    1: "INPUT_CLASSICAL_112_PLANE",
    2: "INPUT_112_WITH_CASTLING_PLANE",
    3: "INPUT_112_WITH_CANONICALIZATION",
    4: "INPUT_112_WITH_CANONICALIZATION_HECTOPLIES",
    132: "INPUT_112_WITH_CANONICALIZATION_HECTOPLIES_ARMAGEDDON",
    5: "INPUT_112_WITH_CANONICALIZATION_V2",
    133: "INPUT_112_WITH_CANONICALIZATION_V2_ARMAGEDDON",
}
OUTPUT_FORMATS = {0: "OUTPUT_UNKNOWN", 1: "OUTPUT_CLASSICAL", 2: "OUTPUT_WDL"}
NETWORK_STRUCTURES = {
    0: "NETWORK_UNKNOWN",
    1: "NETWORK_CLASSICAL",
    2: "NETWORK_SE",
    3: "NETWORK_CLASSICAL_WITH_HEADFORMAT",
    4: "NETWORK_SE_WITH_HEADFORMAT",
    5: "NETWORK_ONNX",
    6: "NETWORK_ATTENTIONBODY_WITH_HEADFORMAT",
    7: "NETWORK_ATTENTIONBODY_WITH_MULTIHEADFORMAT",
    134: "NETWORK_AB_LEGACY_WITH_MULTIHEADFORMAT",
}
POLICY_FORMATS = {
    0: "POLICY_UNKNOWN",
    1: "POLICY_CLASSICAL",
    2: "POLICY_CONVOLUTION",
    3: "POLICY_ATTENTION",
}
VALUE_FORMATS = {0: "VALUE_UNKNOWN", 1: "VALUE_CLASSICAL", 2: "VALUE_WDL", 3: "VALUE_PARAM"}
MOVES_LEFT_FORMATS = {0: "MOVES_LEFT_NONE", 1: "MOVES_LEFT_V1"}
ACTIVATIONS = {
    0: "ACTIVATION_DEFAULT",
    1: "ACTIVATION_MISH",
    2: "ACTIVATION_RELU",
    3: "ACTIVATION_NONE",
    4: "ACTIVATION_TANH",
    5: "ACTIVATION_SIGMOID",
    6: "ACTIVATION_SELU",
    7: "ACTIVATION_SWISH",
    8: "ACTIVATION_RELU_2",
    9: "ACTIVATION_SOFTMAX",
}
DEFAULT_ACTIVATIONS = {0: "DEFAULT_ACTIVATION_RELU", 1: "DEFAULT_ACTIVATION_MISH"}
INPUT_EMBEDDINGS = {
    0: "INPUT_EMBEDDING_NONE",
    1: "INPUT_EMBEDDING_PE_MAP",
    2: "INPUT_EMBEDDING_PE_DENSE",
}
LAYER_ENCODINGS = {0: "UNKNOWN_ENCODING", 1: "LINEAR16", 2: "FLOAT16", 3: "BFLOAT16", 4: "FLOAT32"}
FORMAT_ENCODINGS = {0: "UNKNOWN", 1: "LINEAR16"}

NETWORK_FORMAT_ENUMS = {
    "input": INPUT_FORMATS,
    "output": OUTPUT_FORMATS,
    "network": NETWORK_STRUCTURES,
    "policy": POLICY_FORMATS,
    "value": VALUE_FORMATS,
    "moves_left": MOVES_LEFT_FORMATS,
    "default_activation": DEFAULT_ACTIVATIONS,
    "smolgen_activation": ACTIVATIONS,
    "ffn_activation": ACTIVATIONS,
    "input_embedding": INPUT_EMBEDDINGS,
}
