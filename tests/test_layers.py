"""Architecture guard: a module imports only from lower layers (DEVELOPERS.md, Architecture)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "pdplan"

# rank of each subpackage; a module may import pdplan.<pkg> only when rank(pkg) < rank(own)
# or pkg is its own package. `errors` is the shared base every layer may use.
# parallel sits below perf: the cost model times layouts; layouts never time themselves.
RANK = {
    "errors": -1,
    "catalog": 0,
    "workload": 0,
    "parallel": 1,
    "perf": 2,
    "sim": 3,
    "plan": 4,
    "export": 5,
    "bench": 5,
    "report": 5,
    "cli": 6,
    "web": 6,
}
FACE_ONLY = {"typer", "click", "flask", "fastapi"}


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    rel = path.relative_to(SRC.parent).with_suffix("").parts  # ('pdplan', 'perf', 'step')
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(rel[: len(rel) - node.level])
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.append((node.lineno, mod))
    return out


def _own_package(path: Path) -> str | None:
    parts = path.relative_to(SRC).parts
    if len(parts) == 1:
        stem = Path(parts[0]).stem
        return stem if stem in RANK else None  # pdplan/__init__, __main__: exempt
    return parts[0]


def _violations(path: Path) -> list[str]:
    own = _own_package(path)
    if own is None:
        return []
    bad = []
    for line, mod in _imports(path):
        top = mod.split(".")[0]
        if top in FACE_ONLY and RANK[own] < 6:
            bad.append(f"{path}:{line} imports {mod} (only cli/ and web/ may)")
        if top != "pdplan" or mod == "pdplan":
            continue
        target = mod.split(".")[1]
        if target == own or target not in RANK:
            continue
        if RANK[target] >= RANK[own]:
            bad.append(
                f"{path}:{line}: {own} (layer {RANK[own]}) imports {mod} (layer {RANK[target]})"
            )
    return bad


def test_every_subpackage_is_ranked() -> None:
    pkgs = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert pkgs <= set(RANK), f"unranked packages: {pkgs - set(RANK)}"


def test_no_upward_imports() -> None:
    bad = [v for p in sorted(SRC.rglob("*.py")) for v in _violations(p)]
    assert not bad, "\n".join(bad)


def test_guard_catches_an_upward_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_src = tmp_path / "pdplan"
    (fake_src / "catalog").mkdir(parents=True)
    bad = fake_src / "catalog" / "bad.py"
    bad.write_text("from pdplan.perf.step import BatchShape\nfrom ..sim import x\nimport typer\n")
    monkeypatch.setattr(__import__(__name__), "SRC", fake_src)
    found = _violations(bad)
    assert len(found) == 3, found
