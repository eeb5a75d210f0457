"""plan.sim_deploy placement: mixed nodes let a local P -> D pairing move KV over NVLink."""

from __future__ import annotations

from pdplan import simulate_deployment, synthesize


def test_mixed_placement_lets_local_pairing_use_nvlink() -> None:
    wl = synthesize(n=200, rate=10.0, input=4096, output=16)
    run = {"pairing": "local", "routing": "round_robin"}
    packed = simulate_deployment("llama-3.1-8b", "h200", "4P:tp2+4D:tp2", wl, **run)
    mixed = simulate_deployment(
        "llama-3.1-8b", "h200", "4P:tp2+4D:tp2", wl, placement="mixed", **run
    )
    # 4096 tokens x 128 KiB (0.5 GB) over two GPUs' NICs (0.85 x 50 GB/s each) in packed
    # placement, over their NVLink (0.8 x 900 GB/s each) when P and D share a node
    assert mixed.summary()["kv_transfer_s"]["p50"] < packed.summary()["kv_transfer_s"]["p50"] / 5
