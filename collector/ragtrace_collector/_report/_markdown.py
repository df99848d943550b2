"""The report as markdown."""

from __future__ import annotations

from typing import Any

from ragtrace_collector._report._format import chunk_label, cut, iso, md_cell, num, period, scope, scored_line
from ragtrace_collector._store.summaries import Problem, Summary


def markdown(head: Summary, worst: list[Problem], threshold: float, recent: list[dict[str, Any]]) -> str:
    lines = [
        "# ragtrace report",
        "",
        f"- {scored_line(head.records, head.scored, head.scored_elsewhere)}",
        f"- Stored: {period(head.first_ns, head.last_ns)}",
        f"- Overall score: mean {num(head.overall_mean)}, min {num(head.overall_min)}, max {num(head.overall_max)}",
        "",
        "## Metrics",
        "",
        "| Metric | Mean | Scored | Better |",
        "|---|---:|---:|---|",
    ]
    lines += [f"| {m.metric} | {m.mean:.3f} | {m.count} | {m.direction} |" for m in head.metrics]
    if not head.metrics:
        lines.append("| (no scores yet) | | | |")
    lines += ["", "## Decision coverage", "", "| Decision | Records | Share |", "|---|---:|---:|"]
    total = sum(count for _, count in head.decisions) or 1
    lines += [f"| {d} | {count} | {count / total:.1%} |" for d, count in head.decisions]
    lines += ["", "## Alerts firing", ""]
    if head.firing:
        for alert in head.firing:
            where = ", ".join(f"{k}={alert[k]}" for k in ("service", "route") if alert[k] is not None)
            lines.append(
                f"- **{alert['rule']}** ({alert['metric']}{'; ' + where if where else ''}): {alert['message']}"
            )
    else:
        lines.append("None.")
    lines += ["", "## Recent alert transitions", ""]
    if recent:
        lines += ["| Time | Rule | Metric | Scope | Change | Message |", "|---|---|---|---|---|---|"]
        lines += [
            f"| {iso(a['time_ns'])} | {a['rule']} | {a['metric']} | {md_cell(scope(a))} | "
            f"{a['previous_state'] or '-'} -> {a['state']} | {md_cell(a['message'] or '')} |"
            for a in recent
        ]
    else:
        lines.append("None.")
    lines += ["", f"## Problems (threshold {threshold:g}, worst first)", ""]
    if not worst:
        lines.append("None.")
    for i, p in enumerate(worst, 1):
        lines += [
            f"### {i}. {md_cell(cut(p.query, 100)) or p.span_id} (overall {p.overall:.2f})",
            "",
            f"- Issues: {', '.join(str(issue) for issue in p.issues)}",
            f"- Scores: {', '.join(f'{m} {v:.2f}' for m, v in p.scores.items())}",
            f"- Service {p.service or '-'}, route {p.route or '-'}, {iso(p.time_ns)}, "
            f"trace `{p.trace_id or '-'}`, span `{p.span_id}`",
        ]
        if p.answer:
            lines.append(f"- Answer: {cut(p.answer, 300)}")
        for j, chunk in enumerate(p.chunks[:5]):
            label = chunk_label(chunk)
            lines.append(f"  - Chunk {j}{f' ({label})' if label else ''}: {cut(str(chunk.get('content', '')), 200)}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
