#!/usr/bin/env python3
"""Draws `herd sweep --format csv` results as horizontal bars, one panel per metric, one bar
per row (cell and rule), with the 95 % interval the sweep printed as an error bar: the
charts of docs/throttles.md, where the rows are mechanisms, not points of a numeric axis.
No dependencies beyond Python 3; writes SVG, atomically (a temporary file, then a rename).

    herd sweep … --format csv > a.csv
    python3 tools/sweep_bars.py --out docs/chart.svg --metric served,requests_per_client a.csv [b.csv …]

A row is labelled by its swept values (and its rule when the files have several rules);
`--label FIELD=VALUE:TEXT` renames a row (repeatable).
"""
import argparse
import csv
import html
import os
import tempfile

BAR = "#1f77b4"
ROW_H = 18
LABEL_W = 190
PANEL_W = 260
GAP = 30
TOP = 40


def rows_of(paths):
    rows = []
    for path in paths:
        with open(path) as f:
            reader = csv.DictReader(f)
            fields = reader.fieldnames
            swept = fields[: fields.index("rule")]
            for r in reader:
                rows.append((swept, r))
    return rows


def label_of(swept, r, renames, many_rules):
    parts = [r[s] for s in swept]
    for s in swept:
        key = f"{s}={r[s]}"
        if key in renames:
            return renames[key]
    if many_rules:
        parts.append(r["rule"])
    return " ".join(parts) if parts else r["rule"]


def fmt(x):
    if x == 0:
        return "0"
    if abs(x) >= 100:
        return f"{x:.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.3g}"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--metric", required=True, help="comma-separated metric names")
    p.add_argument("--title", default="")
    p.add_argument("--label", action="append", default=[], help="FIELD=VALUE:TEXT")
    p.add_argument("csv", nargs="+")
    args = p.parse_args()
    renames = dict(l.split(":", 1) for l in args.label)
    rows = rows_of(args.csv)
    many_rules = len({r["rule"] for _, r in rows}) > 1
    labels = [label_of(s, r, renames, many_rules) for s, r in rows]
    metrics = args.metric.split(",")
    width = LABEL_W + len(metrics) * (PANEL_W + GAP)
    height = TOP + len(rows) * ROW_H + 40
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="6" y="16" font-size="13">{html.escape(args.title)}</text>']
    for i, label in enumerate(labels):
        y = TOP + i * ROW_H + ROW_H * 0.7
        out.append(f'<text x="{LABEL_W - 6}" y="{y:.1f}" text-anchor="end">{html.escape(label)}</text>')
    for j, m in enumerate(metrics):
        x0 = LABEL_W + j * (PANEL_W + GAP)
        vals = []
        for _, r in rows:
            defined = r.get(m + "_defined", "0") not in ("", "0")
            vals.append((float(r[m + "_mean"]), float(r[m + "_lo"]), float(r[m + "_hi"]))
                        if defined else None)
        top = max([v[2] for v in vals if v] + [1e-12])
        scale = (PANEL_W - 50) / top
        out.append(f'<text x="{x0}" y="{TOP - 10}" font-size="12">{html.escape(m)} '
                   f'(mean, 95 % interval)</text>')
        out.append(f'<line x1="{x0}" y1="{TOP}" x2="{x0}" y2="{TOP + len(rows) * ROW_H}" stroke="#444"/>')
        for i, v in enumerate(vals):
            y = TOP + i * ROW_H
            if v is None:
                out.append(f'<text x="{x0 + 4}" y="{y + ROW_H * 0.7:.1f}" fill="#888">never</text>')
                continue
            mean, lo, hi = v
            w = max(0.0, mean * scale)
            out.append(f'<rect x="{x0}" y="{y + 3}" width="{w:.1f}" height="{ROW_H - 6}" fill="{BAR}"/>')
            if hi > lo:
                yl = y + ROW_H / 2
                out.append(f'<line x1="{x0 + max(0, lo) * scale:.1f}" y1="{yl}" '
                           f'x2="{x0 + hi * scale:.1f}" y2="{yl}" stroke="black"/>')
            out.append(f'<text x="{x0 + w + 4:.1f}" y="{y + ROW_H * 0.7:.1f}">{fmt(mean)}</text>')
    out.append("</svg>")
    directory = os.path.dirname(os.path.abspath(args.out))
    fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(out) + "\n")
    os.replace(tmp, args.out)


if __name__ == "__main__":
    main()
