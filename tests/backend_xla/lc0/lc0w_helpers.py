"""Helpers for the lc0 weight-file tests: shared-data lookup, planes from reference records,
evaluating ONNX models with onnx's reference evaluator, comparing with lc0's outputs."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import LC0

SHARED_LC0 = LC0

# Tolerances of ../shared/lc0/README.md.
MAIA_POLICY_TOL, MAIA_VALUE_TOL = 5e-3, 1e-4
ZOO_POLICY_ATOL, ZOO_POLICY_RTOL, ZOO_VALUE_TOL, ZOO_MLH_TOL = 1e-4, 1e-5, 1e-5, 1e-4


def shared(*parts: str) -> Path:
    path = SHARED_LC0.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"../shared is absent here: {path} not found")
    return path


def zoo_names() -> list[str]:
    """Names of the zoo networks (``zoo/NAME.pb.gz``); empty without ../shared."""
    return sorted(p.name[:-len(".pb.gz")] for p in (SHARED_LC0 / "zoo").glob("*.pb.gz"))


def read_records(path: Path, limit: int | None = None) -> list[dict]:
    out = []
    with gzip.open(path, "rt") as f:
        for line in f:
            if limit is not None and len(out) >= limit:
                break
            if line.strip():
                out.append(json.loads(line))
    return out


def run_reference(model, planes: np.ndarray) -> dict[str, np.ndarray]:
    """Outputs of ``model`` on ``planes`` by onnx.reference.ReferenceEvaluator, by output name."""
    from onnx.reference import ReferenceEvaluator

    names = [o.name for o in model.graph.output]
    outs = ReferenceEvaluator(model).run(None, {"/input/planes": planes})
    return {n: np.asarray(o, np.float32) for n, o in zip(names, outs)}


def heads_of(outputs: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(policy [N,1858], q [N], d [N], m [N]) as lc0 reports them."""
    policy = outputs["/output/policy"]
    if "/output/wdl" in outputs:
        wdl = outputs["/output/wdl"]
        q, d = wdl[:, 0] - wdl[:, 2], wdl[:, 1]
    else:
        q, d = outputs["/output/value"][:, 0], np.zeros(len(policy), np.float32)
    m = outputs["/output/mlh"][:, 0] if "/output/mlh" in outputs else np.zeros(len(policy), np.float32)
    return policy, q, d, m


def assert_matches_lc0(outputs: dict[str, np.ndarray], records: list[dict], what: str,
                       zoo: bool) -> None:
    """Compare outputs with lc0's reference records (README tolerances), naming the worst case."""
    policy, q, d, m = heads_of(outputs)
    for i, rec in enumerate(records):
        where = f"{what}, position {rec['index']}"
        if zoo and "policy_full" in rec:
            want = np.asarray(rec["policy_full"], np.float32)
            got = policy[i]
            tol = ZOO_POLICY_ATOL + ZOO_POLICY_RTOL * np.abs(want)
            worst = int(np.argmax(np.abs(got - want) - tol))
            assert abs(got[worst] - want[worst]) <= tol[worst], (
                f"{where}: policy logit {worst}: expected {want[worst]}, got {got[worst]}")
        elif rec["policy_indices"]:  # terminal positions have no legal moves
            idx = rec["policy_indices"]
            want = np.asarray(rec["p_raw"], np.float32)
            got = policy[i, idx]
            tol = ZOO_POLICY_ATOL if zoo else MAIA_POLICY_TOL
            worst = int(np.argmax(np.abs(got - want)))
            assert abs(got[worst] - want[worst]) <= tol, (
                f"{where}: policy of {rec['legal_moves'][worst]}: expected {want[worst]}, got {got[worst]}")
        vtol = ZOO_VALUE_TOL if zoo else MAIA_VALUE_TOL
        assert abs(q[i] - rec["q"]) <= vtol, f"{where}: q expected {rec['q']}, got {q[i]}"
        assert abs(d[i] - rec["d"]) <= vtol, f"{where}: d expected {rec['d']}, got {d[i]}"
        assert abs(m[i] - rec["m"]) <= ZOO_MLH_TOL, (
            f"{where}: m expected {rec['m']}, got {m[i]}")
