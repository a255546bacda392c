"""lc0 weights -> ONNX: the attention body (input embedding, gating, encoder stack)."""

from __future__ import annotations

import numpy as np

from .converter_base import (
    EMBEDDING_PE_DENSE,
    EMBEDDING_PE_MAP,
    INPUT_PLANES,
    PE_DENSE_EPS,
    SQUARES,
)
from .encoder import EncoderLayers
from .graph import INT32_MAX, Vec


def position_encoding() -> np.ndarray:
    """float32 [64, 64]: lc0's PE_MAP square encoding; row s is -1 at s, 1 where a queen or knight
    move leads from s, 0 elsewhere."""
    table = np.zeros((SQUARES, SQUARES), np.float32)
    for s in range(SQUARES):
        f, r = s % 8, s // 8
        for t in range(SQUARES):
            df, dr = abs(t % 8 - f), abs(t // 8 - r)
            if df == 0 or dr == 0 or df == dr or {df, dr} == {1, 2}:
                table[s, t] = 1.0
        table[s, s] = -1.0
    return table


class AttentionBody(EncoderLayers):
    """The body of attention networks: [batch, C, 8, 8] -> [batch*64, emb]."""

    def attention_body(self, x: str) -> str:
        """[batch, C, 8, 8] (the tower's output, or the input planes without a tower) ->
        [batch*64, emb]: the input embedding, then the encoder layers."""
        self._global_smolgen_weights()
        flow, emb = self._input_embedding(x)
        alpha = float(np.float32(2.0 * self.num_enc_blocks) ** np.float32(-0.25))
        if self.fmt.input_embedding == EMBEDDING_PE_DENSE:
            flow = self._pe_dense_ffn(flow, emb, alpha)
        heads = self.w.headcount
        for i, layer in enumerate(self.w.encoder):
            flow = self.encoder_layer(
                layer,
                f"weights.encoder[{i}]",
                emb,
                heads,
                flow,
                f"/encoder{i}",
                self.default_activation,
                alpha,
            )
        return flow

    def _global_smolgen_weights(self) -> None:
        """``/const/smolgen_w``: the [gen, 4096] projection every layer's smolgen shares."""
        w = self.w
        if w.HasField("smolgen_w"):
            sw = self.vec(w, "smolgen_w", "weights")
            if sw.size % (SQUARES * SQUARES):
                raise self.fail(f"weights.smolgen_w: {sw.size} values is not a multiple of 4096")
            self.g.initializer("/const/smolgen_w", self.dense_T(sw, sw.size // 4096, 4096))

    def _embedding_input(self, x: str) -> tuple[str, int]:
        """[batch, C, 8, 8] -> ([batch*64, channels], channels): the per-square input of the
        embedding's dense layer."""
        g, w, embedding = self.g, self.w, self.fmt.input_embedding
        flow = g.transpose("/attn_body/transpose", x, [0, 2, 3, 1])
        if self.num_res_blocks > 0:
            flow = g.reshape(
                "/attn_body/reshape", flow, "/const/att_body_shape", [-1, self.num_filters]
            )
            return flow, self.num_filters
        if embedding == EMBEDDING_PE_MAP:
            return self._pe_map_embedding(flow), INPUT_PLANES + SQUARES
        if embedding == EMBEDDING_PE_DENSE:
            dense_size = self.vec(w, "ip_emb_preproc_b", "weights").size // SQUARES
            return self._pe_dense_embedding(flow, dense_size), INPUT_PLANES + dense_size
        raise self.fail(
            f"input_embedding {self.fmt.name('input_embedding')}: an attention body "
            "needs PE_MAP or PE_DENSE"
        )

    def _input_embedding(self, x: str) -> tuple[str, int]:
        """[batch, C, 8, 8] -> ([batch*64, emb], emb): dense layer, activation, then PE_DENSE's
        layer norm and the multiplicative/additive gating where the net has them."""
        g, w = self.g, self.w
        flow, first_c = self._embedding_input(x)
        emb_b = self.vec(w, "ip_emb_b", "weights")
        emb = emb_b.size
        flow = g.matmul(
            "/attn_body/matmul",
            flow,
            self.dense_T(self.vec(w, "ip_emb_w", "weights"), first_c, emb),
        )
        flow = g.add("/attn_body/add", flow, self.W(emb_b, [emb]))
        flow = self.activation(flow, "/attn_body", self.default_activation)
        if self.fmt.input_embedding == EMBEDDING_PE_DENSE:
            flow = self.layer_norm(
                flow, "/attn_body/ln", w, "ip_emb_ln", "weights", emb, PE_DENSE_EPS
            )
        if w.HasField("ip_mult_gate") or w.HasField("ip_add_gate"):
            flow = self._gating(flow, emb)
        return g.reshape("/attn_body/rehape", flow, "/const/ma_gating/shape2", [-1, emb]), emb

    def _gating(self, x: str, emb: int) -> str:
        """[batch*64, emb] -> [batch, 64, emb] times ``ip_mult_gate``, plus ``ip_add_gate``."""
        g, w = self.g, self.w
        flow = g.reshape(
            "/attn_body/ma_gating/rehape", x, "/const/ma_gating/shape1", [-1, SQUARES, emb]
        )
        if w.HasField("ip_mult_gate"):
            flow = g.mul(
                "/ip_mul_gate",
                flow,
                self.dense_T(self.vec(w, "ip_mult_gate", "weights"), SQUARES, emb),
            )
        if w.HasField("ip_add_gate"):
            flow = g.add(
                "/ip_add_gate",
                flow,
                self.dense_T(self.vec(w, "ip_add_gate", "weights"), SQUARES, emb),
            )
        return flow

    def _pe_dense_ffn(self, x: str, emb: int, alpha: float) -> str:
        """PE_DENSE's embedding feed-forward and layer norm, [batch*64, emb] -> same."""
        w = self.w
        if not w.HasField("ip_emb_ffn"):
            raise self.fail(
                "weights.ip_emb_ffn: PE_DENSE embedding without its feed-forward weights"
            )
        flow = self.ffn(
            w.ip_emb_ffn,
            "weights.ip_emb_ffn",
            emb,
            x,
            "/attn_body",
            self.fmt.ffn_activation or self.default_activation,
            alpha,
        )
        return self.layer_norm(
            flow, "/attn_body/ln2", w, "ip_emb_ffn_ln", "weights", emb, PE_DENSE_EPS
        )

    def _pe_map_embedding(self, x: str) -> str:
        """[batch, 8, 8, 112] -> [batch*64, 112 + 64]: each square's planes and its row of
        :func:`position_encoding`."""
        g = self.g
        flow = g.reshape(
            "/attn_body/reshape", x, "/const/att_body_shape", [-1, SQUARES, INPUT_PLANES]
        )
        pad = g.node("Shape", "/attn_body/shape", [flow])
        pad = g.slice("/attn_body/batch", pad, [0], [1])
        pad = g.concat(
            "/attn_body/pos_encoding_shape",
            [pad, g.int64("/const/pos_encoding_shape", [SQUARES, SQUARES])],
            0,
        )
        table = g.initializer(
            "/const/pos_encoding",
            self.W(Vec(position_encoding().reshape(-1), "pos_encoding"), [1, 64, 64]),
        )
        pad = g.node("Expand", "/attn_body/expand", [table, pad])
        flow = g.concat("/attn_body/padded_input", [flow, pad], 2)
        return g.reshape(
            "/attn_body/reshape2", flow, "/const/att_body_shape2", [-1, INPUT_PLANES + SQUARES]
        )

    def _pe_dense_embedding(self, x: str, dense_size: int) -> str:
        """[batch, 8, 8, 112] -> [batch*64, 112 + dense_size]: each square's planes and a dense
        projection of the whole board's first 12 planes (its pieces)."""
        g, w = self.g, self.w
        flow = g.reshape(
            "/attn_body/reshape", x, "/const/att_body_shape", [-1, SQUARES, INPUT_PLANES]
        )
        pos = g.slice("/attn_body/embedding/slice", flow, [0, 0, 0], [INT32_MAX, SQUARES, 12])
        pos = g.reshape(
            "/attn_body/embedding/reshape", pos, "/const/pos_info_shape", [-1, SQUARES * 12]
        )
        pos = g.matmul(
            "/attn_body/embedding/preprocess/matmul",
            pos,
            self.dense_T(
                self.vec(w, "ip_emb_preproc_w", "weights"), SQUARES * 12, SQUARES * dense_size
            ),
        )
        pos = g.add(
            "/attn_body/embedding/preprocess/add",
            pos,
            self.W(self.vec(w, "ip_emb_preproc_b", "weights"), [SQUARES * dense_size]),
        )
        pos = g.reshape(
            "/attn_body/embedding/preprocess/reshape",
            pos,
            "/const/pos_info_processed_shape",
            [-1, SQUARES, dense_size],
        )
        flow = g.concat("/attn_body/embedding/concat", [flow, pos], 2)
        return g.reshape(
            "/attn_body/embedding/out/reshape",
            flow,
            "/const/embedding/out_shape",
            [-1, INPUT_PLANES + dense_size],
        )
