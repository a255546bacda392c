"""A plain reference of lc0's classic PUCT search at one visit a step, written from lc0's
formulas (search.cc: ComputeCpuct, GetFpu, the PUCT score, the running-mean backup) over
python-chess boards and the python-chess reference encoder (nets/training/reference/): the truth the compiled search must equal, visit for
visit, at MinibatchSize=1 and Threads=1 (where lc0's gathering, collisions and multi-visit
picking reduce to one PUCT descent a visit). As lc0 with its default CacheHistoryLength=0, a
position met again by another move order (a transposition) takes the NN cache's result of the
first one, though the network would see another history.

It knows no terminal position on purpose: it raises when a walk reaches one, so that a test
using it covers positions and node counts where no mate, stalemate or draw rule is in reach
(terminals and certainty propagation have their own tests against python-chess).
"""

from __future__ import annotations

import math

import chess
import numpy as np

from engine.search import SearchParams
from engine.search.core.fastmath import fast_log
from nets.training.reference import encode_batch, policy_indices


class TerminalReached(Exception):
    """The walk reached a position the reference does not model."""


class RefNode:
    """wl: mean value from the view of the player who moved into the node."""

    def __init__(self) -> None:
        self.moves: list[chess.Move] = []
        self.priors: list[float] = []
        self.children: list[RefNode | None] = []
        self.n = 0
        self.wl = 0.0
        self.vpol = np.float32(0.0)


def lc0_cpuct(n: int, init: float, base: float, factor: float) -> float:
    """lc0's ComputeCpuct: float32, with its FastLog (utils/fastmath.h, bit level here)."""
    f32 = np.float32
    if not factor:
        return float(f32(init))
    ratio = f32(f32(f32(n) + f32(base)) / f32(base))
    return float(f32(f32(init) + f32(f32(factor) * fast_log(f32(ratio)))))


def lc0_prior(p: float) -> float:
    """``p`` as lc0 stores it (Edge::SetP and GetP): the float32's bits rounded to 16, the
    exponent less 96 in 5 of them, the mantissa in 11."""
    bits = int(np.array([p], np.float32).view(np.int32)[0]) + (1 << 11) - (3 << 28)
    stored = 0 if bits < 0 else (bits >> 12) & 0xFFFF
    return float(np.array([(stored << 12) | (3 << 28)], np.uint32).view(np.float32)[0])


def lc0_softmax(logits: np.ndarray, temperature: float) -> np.ndarray:
    """lc0's policy softmax (NetworkAsBackendComputation::SoftmaxPolicy), float32 throughout:
    FastExp((x - max) * (1/T)) of utils/fastmath.h, summed in order, scaled by 1 / total."""
    f32 = np.float32
    x = np.asarray(logits, np.float32)
    inv_t = f32(f32(1.0) / f32(temperature))
    out = np.zeros(len(x), np.float32)
    total = f32(0.0)
    for j, v in enumerate(x - x.max()):
        a = f32(f32(v * inv_t) * f32(1.442695040))
        if a < -126:
            continue
        e = int(f32(a - 1)) if a < 0 else int(a)  # C's truncation towards zero
        frac = f32(a - f32(e))
        y = np.array([f32(1.0) + frac * (f32(0.6602339) + f32(0.33976606) * frac)], np.float32)
        out[j] = (y.view(np.int32) + np.int32(e << 23)).view(np.float32)[0]
        total = f32(total + out[j])
    return (out * (f32(1.0) / total)).astype(np.float32)


def cache_key(board: chess.Board) -> tuple:
    """lc0's NN-cache key (neural/memcache.cc, ComputeEvalPositionHash: the last position's
    Hash(), its board and its repetitions): no rule50 count, no history. lc0 marks en passant
    only where an enemy pawn attacks the square passed."""
    ep = board.ep_square if board.has_pseudo_legal_en_passant() else None
    return (board.board_fen(), board.turn, board.castling_rights, ep, board.is_repetition(2))


def _expand(node: RefNode, board: chess.Board, net, temperature: float, cache: dict) -> float:
    """Evaluate ``board``: the node's priors (softmax at ``temperature``, largest first) and
    the value from the view of the player who moved into it."""
    key = cache_key(board)
    if key not in cache:
        cache[key] = net.evaluate(encode_batch([board]))
    out = cache[key]
    indices = policy_indices(board)
    moves = list(indices)
    logits = np.array([out.policy[0][indices[m]] for m in moves], np.float32)
    p = [lc0_prior(float(x)) for x in lc0_softmax(logits, temperature)]
    order = sorted(range(len(moves)), key=lambda j: -p[j])  # lc0 sorts the 16-bit priors
    node.moves = [moves[j] for j in order]
    node.priors = [p[j] for j in order]
    node.children = [None] * len(moves)
    return -float(out.q[0])


def _pick(node: RefNode, params: SearchParams, at_root: bool) -> int:
    init, base, factor = params.cpuct_params(at_root)
    cpuct = lc0_cpuct(node.n, init, base, factor)
    mult = cpuct * math.sqrt(max(node.n - 1, 1))
    value = params.fpu_value_at_root if at_root else params.fpu_value
    fpu = -node.wl - value * math.sqrt(float(node.vpol))
    best, best_score = 0, -math.inf
    for j, child in enumerate(node.children):
        visited = child is not None and child.n > 0
        q = child.wl if visited else fpu
        n = child.n if visited else 0
        score = q + mult * node.priors[j] / (1 + n)
        if score > best_score:
            best, best_score = j, score
    return best


def _is_terminal(board: chess.Board, depth: int, params: SearchParams) -> bool:
    if board.is_checkmate() or board.is_stalemate() or board.is_insufficient_material():
        return True
    if board.halfmove_clock >= 100 or board.is_repetition(3):
        return True
    return params.two_fold_draws and depth >= 2 and board.is_repetition(2)


def search(board: chess.Board, net, params: SearchParams, visits: int) -> RefNode:
    """The tree after ``visits`` visits from ``board`` (its move stack is the game)."""
    root = RefNode()
    cache: dict = {}
    for _ in range(visits):
        node, path, walk = root, [root], board.copy()
        while node.moves:
            j = _pick(node, params, node is root)
            if node.children[j] is None:
                node.children[j] = RefNode()
            child = node.children[j]
            assert child is not None
            if child.n == 0:
                node.vpol += np.float32(node.priors[j])  # lc0 sums visited priors in a float
            walk.push(node.moves[j])
            node = child
            path.append(node)
        if _is_terminal(walk, len(path) - 1, params):
            raise TerminalReached(walk.fen())
        v = _expand(node, walk, net, params.policy_softmax_temp, cache)
        for visited in reversed(path):
            visited.n += 1
            visited.wl += (v - visited.wl) / visited.n
            v = -v
    return root
