"""plot_workload: length histograms, joint heat map and rate over time as one PNG."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from pdplan.errors import ConfigError, PdplanError
from pdplan.workload.core import Workload
from pdplan.workload.stats import log2_edges

__all__ = ["check_plot_path", "plot_workload"]


def _pyplot():  # type: ignore[no-untyped-def]
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise PdplanError(
            "--plot needs matplotlib: pip install 'pdplan[plot]' (or pip install matplotlib)"
        ) from None
    return plt


def check_plot_path(path: str | os.PathLike[str]) -> str:
    """The image format matplotlib will write for `path` (from its extension), checked before
    any work is done; a missing or unsupported extension is refused with the supported list."""
    plt = _pyplot()
    supported = sorted(plt.figure().canvas.get_supported_filetypes())
    plt.close("all")
    spath = os.fspath(path)
    ext = os.path.splitext(spath)[1].lower().lstrip(".")
    if ext not in supported:
        what = f"matplotlib cannot write '.{ext}' images" if ext else "no image extension"
        names = ", ".join(f".{e}" for e in supported)
        raise ConfigError(f"--plot {spath}: {what}; use one of {names} (e.g. .png)")
    return ext


def _save(fig: Any, path: str, to: str | os.PathLike[str] | None) -> None:
    """fig as `path`'s image format, written to `path`, or to the open file `to` (so no
    file name but `path`'s shapes the image: EPS / PS then carry no %%Title line)."""
    if to is None:
        fig.savefig(path, dpi=100)
        return
    ext = os.path.splitext(path)[1].lower().lstrip(".")
    with open(to, "wb") as fh:
        fig.savefig(fh, format=ext, dpi=100)


def plot_workload(
    w: Workload,
    path: str | os.PathLike[str],
    window_s: float | None = None,
    *,
    to: str | os.PathLike[str] | None = None,
) -> None:
    """Four panels: input and output length histograms (log2 bins), joint (input, output)
    heat map, and request rate per window (60 s by default) when the trace has times.
    `to`, when given, is the file actually written (a temporary name the caller renames to
    `path` once complete); the image format and error messages still follow `path`."""
    plt = _pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    for ax, x, name in ((axes[0, 0], w.input_len, "input"), (axes[0, 1], w.output_len, "output")):
        edges = np.maximum(log2_edges(int(x.max())), 0.5)
        ax.hist(np.maximum(x, 0.5), bins=edges)
        ax.set_xscale("log")
        ax.set_xlabel(f"{name} tokens")
        ax.set_ylabel("requests")
        ax.set_title(f"{name} length (mean {x.mean():.0f}, p99 {np.percentile(x, 99):.0f})")
    ein, eout = log2_edges(int(w.input_len.max())), log2_edges(int(w.output_len.max()))
    h, _, _ = np.histogram2d(w.input_len, w.output_len, bins=(ein, eout))
    ax = axes[1, 0]
    ax.imshow(np.log10(h.T + 1), origin="lower", aspect="auto", cmap="viridis")
    ax.set_xlabel("input bin (log2 tokens)")
    ax.set_ylabel("output bin (log2 tokens)")
    ax.set_title("joint histogram, log10(count + 1)")
    ax = axes[1, 1]
    if w.arrival_s is not None and len(w) > 1:
        step = window_s or 60.0
        n_bins = max(1, int(np.ceil((w.arrival_s[-1] + 1e-9) / step)))
        counts, edges = np.histogram(w.arrival_s, bins=n_bins, range=(0, n_bins * step))
        ax.plot(edges[:-1] / 60.0, counts / step, drawstyle="steps-post")
        ax.set_xlabel("time (min)")
        ax.set_ylabel(f"requests/s ({step:g} s windows)")
        ax.set_title("arrival rate over time")
    else:
        ax.text(0.5, 0.5, "no arrival times", ha="center", va="center")
        ax.set_axis_off()
    fig.suptitle(str(w.meta.get("source", "")))
    fig.tight_layout()
    try:
        _save(fig, os.fspath(path), to)
    except OSError as exc:  # strerror: the message names `path`, not a temporary `to`
        raise PdplanError(f"cannot write plot {os.fspath(path)}: {exc.strerror or exc}") from None
    except (RuntimeError, ValueError) as exc:  # RuntimeError: .pgf without LaTeX
        raise PdplanError(f"cannot write plot {os.fspath(path)}: {exc}") from None
    finally:
        plt.close(fig)
