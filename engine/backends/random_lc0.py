"""lc0's random backend's outputs, bit for bit (``--backend-opts=lc0=1`` of
:mod:`engine.backends.random`): lc0's ``RandomNetworkComputation`` at the reference binary's
commit (``src/neural/backends/network_random.cc``, ``src/utils/hashcat.h``).

A position's hash chains lc0's ``HashCat({hash, x})`` (which restarts from 0: ``HashCat(HashCat(0,
hash), x)``) over each of its 112 packed planes' mask and value bits, from the ``seed``. Then q is
``(hash % 200000 - 100000) / 100000``, d a share ``HashCat({hash, 1234}) % 10000 / 10000`` of
``1 - |q|`` and a move's logit ``HashCat({hash, index}) % 10000 * (3 / 10000)``, each in lc0's
float and double steps. lc0's planes default to the value 1.0 where no square is set; the
engine's encoder leaves 0 there, so an empty mask hashes 1.0 here.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_M1 = np.uint64(0xFAD0D7F2FBB059F1)
_A1 = np.uint64(0xBAAD41CDCB839961)
_M2 = np.uint64(0x7ACEC0050BF82F43)
_A2 = np.uint64(0xD571B3A92B1B2755)
_CAT = np.uint64(0x299799ADF0D95DEF)
_ONE_BITS = np.uint64(0x3F800000)
"""The float32 bit pattern of 1.0: lc0's InputPlane value where the mask is empty."""
_LOGIT_STEP = np.float32(np.float32(3.0) / np.float32(10000.0))
"""lc0's ``a / 10000.0f`` (a = 3): the float step of a logit."""
_RULE50_PLANE = 109
"""The classical format's rule50 plane, which lc0 fills (every square) even with the value 0."""


@njit(cache=True, nogil=True, inline="always")
def _scramble(val):
    """lc0's ``Hash``."""
    return _M1 * (val + _A1) + _M2 * ((val >> np.uint64(31)) + _A2)


@njit(cache=True, nogil=True, inline="always")
def hash_pair(a, b):
    """lc0's ``HashCat({a, b})``."""
    h = np.uint64(0)
    h ^= _CAT + _scramble(a) + (h << np.uint64(6)) + (h >> np.uint64(2))
    h ^= _CAT + _scramble(b) + (h << np.uint64(6)) + (h >> np.uint64(2))
    return h


@njit(cache=True, nogil=True)
def position_hash(masks, value_bits, r, seed):
    """lc0's hash of row ``r``'s packed planes (masks uint64 [N, 112], value_bits uint32
    [N, 112]: the values' float32 bit patterns), from ``seed`` (uint64)."""
    h = seed
    for p in range(masks.shape[1]):
        mask = masks[r, p]
        bits = np.uint64(value_bits[r, p]) if mask != np.uint64(0) else _ONE_BITS
        h = hash_pair(h, mask)
        h = hash_pair(h, bits)
    return h


@njit(cache=True, nogil=True, inline="always")
def value_of(h, r, q, d):
    """Row ``r``'s q and d (float32 [N]) from its hash: lc0's GetQVal and GetDVal."""
    qv = np.float32((np.int64(h % np.uint64(200000)) - 100000) / 100000.0)
    max_d = np.float32(1.0) - np.float32(abs(qv))
    share = np.float32(hash_pair(h, np.uint64(1234)) % np.uint64(10000))
    q[r] = qv
    d[r] = np.float32(np.float64(np.float32(max_d * share)) / 10000.0)


@njit(cache=True, nogil=True, inline="always")
def logit_of(h, index):
    """lc0's GetPVal of policy index ``index`` (>= 0) from the hash."""
    return np.float32(hash_pair(h, np.uint64(index)) % np.uint64(10000)) * _LOGIT_STEP


@njit(cache=True, nogil=True)
def evaluate_packed(masks, value_bits, seed, legal, policy, q, d):
    """lc0's outputs of packed planes: ``policy`` [N, K] the logits of ``legal``'s indices
    (int32 [N, K]; a negative index, padding, reads index 0), or of every index when ``legal``
    has no rows ([N, 1858])."""
    gathered = legal.shape[0] > 0
    for r in range(masks.shape[0]):
        h = position_hash(masks, value_bits, r, seed)
        for j in range(policy.shape[1]):
            index = (legal[r, j] if legal[r, j] >= 0 else 0) if gathered else j
            policy[r, j] = logit_of(h, index)
        value_of(h, r, q, d)


@njit(cache=True, nogil=True)
def pack(bits, masks, value_bits):
    """The packed planes of float planes (bits uint32 [N, 112, 8, 8], their bit patterns):
    each plane's squares whose value is not zero (bit 8 * rank + file) and that value; the
    rule50 plane always whole (lc0 fills it, with 0 too)."""
    n, planes = bits.shape[0], bits.shape[1]
    flat = bits.reshape(n, planes, 64)
    for r in range(n):
        for p in range(planes):
            mask = np.uint64(0)
            value = np.uint32(0)
            for s in range(64):
                if flat[r, p, s] & np.uint32(0x7FFFFFFF):
                    mask |= np.uint64(1) << np.uint64(s)
                    value = flat[r, p, s]
            if p == _RULE50_PLANE:
                mask = ~np.uint64(0)
                value = flat[r, p, 0]
            masks[r, p] = mask
            value_bits[r, p] = value
