"""A closed-loop client sends its next request only once it has seen the whole response,
first token included: with SGLang's first-token delay of decode steps, a short output's first
token reaches the client after its last, and the client must wait for it."""

from __future__ import annotations

import json

import pytest

from pdplan.cli import main
from pdplan.sim.first_tokens import response_seen


def test_response_seen_waits_for_a_late_first_token() -> None:
    # 3 tokens, 10 ms apart; 12 steps at 10 ms reach past the last token: capped there
    assert response_seen(1.0, 1.02, 3, 0.03, 12) == pytest.approx(1.05)
    # 101 tokens: 12 steps end before the last token, which comes later
    assert response_seen(1.0, 2.0, 101, 0.03, 12) == 2.0
    # no steps (vLLM, TensorRT-LLM): only the fixed delay; one token: no steps either
    assert response_seen(1.0, 1.01, 2, 0.03, 0) == pytest.approx(1.03)
    assert response_seen(1.0, 1.0, 1, 0.03, 12) == pytest.approx(1.03)


@pytest.mark.parametrize("osl", ["uniform:1:4", "uniform:2:12"])
def test_clients_in_flight_never_exceed_the_clients(
    capsys: pytest.CaptureFixture[str], osl: str
) -> None:
    # Little's law over the run: throughput x mean client E2E = mean requests in flight <= C
    # (it read 17.5 with 16 clients when the next request left before the late first token)
    rc = main(
        ["simulate", "--model", "llama-3.1-8b", "--gpu", "h100", "--deployment", "tp1x1",
         "--engine", "sglang", "--workload", f"closed:c=16,n=600,isl=500,osl={osl}", "--json"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert rc == 0
    s = json.loads(out)
    in_flight = s["throughput_rps"] * s["e2e_s"]["mean"]
    assert 14.0 < in_flight <= 16.0 * 1.005
