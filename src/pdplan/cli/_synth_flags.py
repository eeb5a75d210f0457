"""`pdplan workload synth`: synthesize()'s refusals named by the flag that gave the value."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from pdplan.errors import InputError

__all__ = ["flag_named"]

T = TypeVar("T")

# synthesize()'s messages open with the parameter's name ("rate=0.0 must be ...", "seed=-1
# ...", "rate=1 req/s and n=... give a ... trace"); the flag of each, as synth spells it
_PARAMS = (("rate=", "--rate"), ("cv=", "--cv"), ("seed=", "--seed"), ("n=", "--requests/-n"))


def flag_named(call: Callable[[], T], inp: str, outp: str) -> T:
    """call(), its InputError prefixed with the flag that gave the bad value: a bare
    "rate=0.0 must be ..." or "bad length spec 'x'" said neither --rate nor which of --input
    and --output. Messages that name a flag already (--curve, --duration) pass as they are."""
    try:
        return call()
    except InputError as exc:
        msg = str(exc)
        if msg.startswith("--"):
            raise
        flag = next((f for p, f in _PARAMS if msg.startswith(p)), None)
        if msg.startswith("bad length spec "):
            flag = "--input" if msg.startswith(f"bad length spec {inp!r}") else "--output"
            if inp == outp:
                flag = "--input / --output"
        if flag is None:
            raise
        raise InputError(f"{flag}: {msg}") from None
