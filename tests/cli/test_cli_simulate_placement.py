"""CLI: `pdplan simulate --placement`, and the note when --pairing local has nothing local."""

from __future__ import annotations

import json

import pytest

from pdplan.cli import main


def test_the_cli_says_when_local_pairing_has_no_local_decode(
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = ["simulate", "--model", "llama-3.1-8b", "--gpu", "h200", "--deployment",
            "4P:tp2+4D:tp2", "--workload", "poisson:rate=5,n=50,isl=2000,osl=8",
            "--pairing", "local", "--json"]  # fmt: skip
    assert main(base) == 0
    err = capsys.readouterr().err
    assert "no prefill instance shares a node with a decode instance" in err
    assert "add --placement mixed" in err
    assert main([*base, "--placement", "mixed"]) == 0
    out = capsys.readouterr()
    assert "shares a node" not in out.err and json.loads(out.out)["finished"] == 50
    agg = ["simulate", "--model", "llama-3.1-8b", "--gpu", "h200", "--deployment", "tp2x2",
           "--workload", "poisson:rate=5,n=20", "--placement", "mixed"]  # fmt: skip
    assert main(agg) == 2 and "--placement mixed: only a disaggregated" in capsys.readouterr().err


def test_the_note_names_different_gpus_as_the_reason(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["simulate", "--model", "llama-3.1-8b", "--gpu", "h200", "--deployment",
            "2P:tp2@h100+2D:tp2", "--workload", "poisson:rate=5,n=30,isl=2000,osl=8",
            "--pairing", "local", "--placement", "mixed", "--json"]  # fmt: skip
    assert main(argv) == 0
    assert "different GPU types, which never share a node" in capsys.readouterr().err


def test_the_note_names_decode_instances_local_pairing_leaves_idle(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # one tp2 prefill and five tp2 decodes: 12 GPUs on two 8-GPU nodes; the prefill's node
    # holds decodes of its own, so the decodes on the other node never get a request
    argv = ["simulate", "--model", "llama-3.1-8b", "--gpu", "h200", "--deployment",
            "1P:tp2+5D:tp2", "--workload", "poisson:rate=5,n=30,isl=2000,osl=8",
            "--pairing", "local", "--placement", "mixed", "--json"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr()
    assert "decode1:tp2, decode3:tp2 share no node with a prefill instance" in out.err
    busy = {i["name"]: i["utilisation"] for i in json.loads(out.out)["instances"]}
    assert busy["decode1:tp2"] == busy["decode3:tp2"] == 0.0 < busy["decode0:tp2"]
