"""`binlake status --out DIR`: where a lake's follower stands, for a person.

Strategy: the follower writes its status whole after each micro-batch
(`_binlake/status.json`, binlake.spark.state.store); this reads the last one
and says it in lines: the state, how far behind, what each table took in,
micro-batch and fsync times (from their histograms' buckets), the views'
merges, snapshot progress, reconnects, failovers, refusals, and where a
scraper finds the same figures. Nothing is asked of the follower or the server: a stopped or
killed follower's last status is shown as it was, with its age.
"""

from __future__ import annotations

import json
import os
import time

from binlake.cli.status import ExitStatus


def add_arguments(parser) -> None:
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="the lake: a `binlake pipeline -R` output directory")
    parser.add_argument("--json", action="store_true",
                        help="print status.json as it is")


def run(args, out, err, now=None) -> int:
    from binlake.spark.state.store import load_status
    try:
        status = load_status(args.out)
    except (OSError, ValueError) as exc:
        err.write(f"binlake status: {args.out}: the status cannot be read: {exc}\n")
        return ExitStatus.ERROR
    if status is None:
        err.write(f"binlake status: {args.out}: no follower status (_binlake/status.json): "
                  "binlake pipeline -R writes it\n")
        return ExitStatus.ERROR
    if args.json:
        out.write(json.dumps(status, indent=1) + "\n")
        return ExitStatus.OK
    for line in status_lines(status, time.time() if now is None else now):
        out.write(line + "\n")
    out.write(f"lake: {os.path.abspath(args.out)}\n")
    return ExitStatus.OK


def status_lines(status: dict, now: float) -> list[str]:
    """A status.json in lines for a person."""
    from binlake.spark.run.metrics import within
    metrics = status.get("metrics") or {}
    age = now - status.get("updated", now)
    lines = [f"state: {status.get('state')} (as of {age:.0f} s ago), server "
             f"{status.get('server') or '?'}"
             + (f": {status['error']}" if status.get("error") else "")]
    lake, received = status.get("lake"), status.get("received")
    lines.append("lake holds: " + (f"{lake[0]} to {lake[1]:,}" if lake else "nothing yet")
                 + (f"; copies hold {received[0]} to {received[1]:,}" if received else ""))
    lag = metrics.get("lag_seconds")
    lines.append(f"behind: {status.get('behind_seconds', 0):.1f} s, "
                 f"{metrics.get('bytes_behind', 0):,} bytes; last micro-batch's lag "
                 + ("-" if lag is None else f"{lag:.1f} s")
                 + _spread(metrics.get("lag_histogram"), within))
    batches = metrics.get("micro_batch_seconds") or {}
    lines.append(f"micro-batches: {status.get('micro_batches', 0)}, the last "
                 f"{status.get('last_batch_seconds', 0):.2f} s"
                 + _spread(batches, within) + f"; {status.get('changes', 0):,} changes, "
                 f"{status.get('rows_per_second', 0):,.0f} rows/s")
    rows = metrics.get("rows") or {}
    width = max((len(name) for name in rows), default=0)
    lines += [f"  {name:<{width}}  {count:>12,} rows" for name, count in rows.items()]
    fsyncs = metrics.get("copy_fsync_seconds") or {}
    lines.append(f"copies: {metrics.get('copy_bytes', 0):,} bytes written, "
                 f"{fsyncs.get('count', 0)} fsyncs" + _spread(fsyncs, within))
    lines.append(f"views: {metrics.get('view_files_merged', 0):,} small files merged, "
                 f"{metrics.get('view_files_deleted', 0):,} deleted after their grace")
    memory = metrics.get("memory")
    if memory:
        lines.append(f"memory: {memory['resident_bytes'] / 2**20:,.0f} MiB resident, "
                     f"{memory['arrow_bytes'] / 2**20:,.0f} MiB of it Arrow's")
    for name, found in (metrics.get("snapshot") or {}).items():
        goal = found.get("estimated")
        share = f" ({100 * found['read'] / goal:.0f}%)" if goal else ""
        lines.append(f"snapshot: {name}: {found['read']:,} of "
                     + (f"~{goal:,}" if goal is not None else "?") + f" rows{share}")
    lines.append(f"reconnects {metrics.get('reconnects', 0)}, failovers "
                 f"{metrics.get('failovers', 0)}, refusals {metrics.get('refusals', 0)}")
    if metrics.get("endpoint"):
        running = status.get("state") in ("starting", "following")
        lines.append(f"metrics: {metrics['endpoint']}"
                     + ("" if running else " (served while the follower ran)"))
    return lines


def _spread(histogram: dict | None, within) -> str:
    """", half within X s, 99% within Y s" of a histogram's JSON."""
    if not histogram or not histogram.get("count"):
        return ""
    finite = [le for le in histogram["buckets"] if le != "+Inf"]

    def bound(le: str) -> str:
        return f"over {float(finite[-1]):g} s" if le == "+Inf" else f"{float(le):g} s"
    half, most = within(histogram, 0.5), within(histogram, 0.99)
    return f" (of {histogram['count']}: half within {bound(half)}, 99% within {bound(most)})"
