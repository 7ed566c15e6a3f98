"""PNG of an article's activity: revisions per day (with a 30-day mean) above its size in bytes.

Draws on a bare matplotlib Figure with the Agg canvas: no pyplot, no display, no global state.
"""
import warnings
from collections import Counter
from datetime import date, datetime, time, timedelta, timezone
from pathlib import Path
from typing import Sequence

from shared.revisions.model import Revision

WIDTH_IN, HEIGHT_IN, DPI = 12, 7, 100
MEAN_WINDOW_DAYS = 30


def daily_counts(revisions: Sequence[Revision]) -> list[tuple[date, int]]:
    """(day, revisions) for every UTC day from the first to the last revision, zeros included."""
    counts = Counter(r.timestamp.astimezone(timezone.utc).date() for r in revisions)
    if not counts:
        return []
    first, last = min(counts), max(counts)
    return [(first + timedelta(days=i), counts.get(first + timedelta(days=i), 0))
            for i in range((last - first).days + 1)]


def running_mean(values: Sequence[int], window: int) -> list[float]:
    out, total = [], 0
    for i, value in enumerate(values):
        total += value - (values[i - window] if i >= window else 0)
        out.append(total / min(i + 1, window))
    return out


def plot_history(revisions: Sequence[Revision], title: str, out: Path) -> Path:
    """Write the PNG for a page's revisions (any order). Raises ValueError when there are none."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg     # loaded only when plotting
    from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    if not revisions:
        raise ValueError(f"no stored revisions for {title!r}")
    ordered = sorted(revisions, key=lambda r: (r.timestamp, r.rev_id))
    per_day = daily_counts(ordered)
    days = [datetime.combine(d, time(12)) for d, _ in per_day]      # a day's line at its middle
    counts = [n for _, n in per_day]

    fig = Figure(figsize=(WIDTH_IN, HEIGHT_IN), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(3, 2))
    # vlines, not bars: a one-day bar is thinner than a pixel over a span of years and vanishes
    top.vlines(days, 0, counts, color="#8fa9d0", linewidth=0.8, label="revisions per day")
    if len(days) >= 2 * MEAN_WINDOW_DAYS:       # on a short span the mean is only noise
        top.plot(days, running_mean(counts, MEAN_WINDOW_DAYS), color="#1f3d7a", linewidth=1.4,
                 label=f"{MEAN_WINDOW_DAYS}-day mean")
    top.set_ylabel("revisions per day")
    top.set_ylim(bottom=0)
    top.yaxis.set_major_locator(MaxNLocator(integer=True))
    top.legend(loc="lower left", bbox_to_anchor=(0, 1), ncols=2, frameon=False)
    top.grid(axis="y", alpha=0.3)

    times = [r.timestamp.astimezone(timezone.utc).replace(tzinfo=None) for r in ordered]
    bottom.step(times, [r.size for r in ordered], where="post", color="#b5523b", linewidth=1.2)
    bottom.set_ylabel("page size (bytes)")
    bottom.set_ylim(bottom=0)
    bottom.grid(alpha=0.3)
    locator = AutoDateLocator()
    bottom.xaxis.set_major_locator(locator)
    bottom.xaxis.set_major_formatter(ConciseDateFormatter(locator))

    first, last = per_day[0][0], per_day[-1][0]
    fig.suptitle(f"{title}: {len(ordered):,} revisions, {first:%Y-%m-%d} to {last:%Y-%m-%d}", fontsize=13)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        # titles in scripts the default font lacks render as boxes; that is no reason to fail
        warnings.filterwarnings("ignore", message="Glyph .* missing from")
        fig.savefig(out, format="png")
    return out
