"""Black-box round 12: `simulate`'s replay note counts what --duration keeps; a --switch timed
after the run's last request is flagged, not dropped silently."""

from __future__ import annotations

from pathlib import Path

import pytest

from pdplan.cli import main


def _sim(capsys: pytest.CaptureFixture[str], *more: str) -> tuple[int, str, str]:
    rc = main(["simulate", "--model", "llama-3.1-8b", "--gpu", "h100", "--json", *more])
    out, err = capsys.readouterr()
    return rc, out, err


def test_the_replay_note_counts_only_what_duration_keeps(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(  # Mooncake layout: ms
        "".join(
            f'{{"timestamp": {ms}, "input_length": 100, "output_length": 5}}\n'
            for ms in (0, 1000, 2000, 3000)
        )
    )
    rc, _, err = _sim(capsys, "--deployment", "tp1", "--workload", str(trace), "--duration", "1.5")
    assert rc == 0
    # the whole trace's "4 requests over 3 s" would describe a run the cut never makes
    assert f"replaying the first 1.5 s of {trace}: 2 of its 4 requests over 1 s" in err
    rc, _, err = _sim(capsys, "--deployment", "tp1", "--workload", str(trace))
    assert rc == 0 and f"replaying {trace}: 4 requests over 3 s" in err


def test_a_switch_after_the_last_request_is_flagged(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("--deployment", "2P:tp1+1D:tp1", "--workload", "poisson:rate=10,n=20,isl=100,osl=5")
    rc, _, err = _sim(capsys, *args, "--switch", "1e6:prefill0:decode")
    assert rc == 0 and "--switch '1e6:prefill0:decode' never happened" in err
    rc, _, err = _sim(capsys, *args, "--switch", "0.5:prefill0:decode")
    assert rc == 0 and "never happened" not in err


@pytest.mark.parametrize(
    ("more", "said"),
    [
        ((), "neither given"),
        (("-n", "5", "--duration", "1h"), "both given"),
        (("-n", "0"), "greater than or equal to 1"),
    ],
)
def test_synth_sizing_errors_name_its_options(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, more: tuple[str, ...], said: str
) -> None:
    out = tmp_path / "s.jsonl"
    rc = main(["workload", "synth", "-o", str(out), *more])
    _, err = capsys.readouterr()
    # the library's "n (requests) or duration_s" / "(an int, not a bool)" named no option
    assert rc == 2 and said in err and not out.exists()
    assert "duration_s" not in err and "not a bool" not in err
    if said != "greater than or equal to 1":
        assert "--requests/-n N or --duration" in err
