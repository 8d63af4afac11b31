#!/usr/bin/env python3
"""Loss curves of several runs as one SVG (no plotting library needed): each run's per-step loss,
smoothed over a window, on shared axes.

usage: loss_curves_svg.py OUT.svg TITLE NAME=METRICS.jsonl [NAME=METRICS.jsonl ...]
       (METRICS: a bertc train metrics file; or NAME=FILE.json:KEY for a JSON list under KEY)
"""
import json
import sys

WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 720, 400, 60, 20, 40, 45
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]


def losses(spec):
    path, _, key = spec.partition(":")
    if key:
        return json.load(open(path))["losses"][key]
    return [json.loads(line)["loss"] for line in open(path)]


def smooth(values, window=20):
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def main():
    out, title, runs = sys.argv[1], sys.argv[2], [a.split("=", 1) for a in sys.argv[3:]]
    curves = [(name, smooth(losses(spec))) for name, spec in runs]
    steps = max(len(c) for _, c in curves)
    lo = min(min(c) for _, c in curves)
    hi = max(max(c) for _, c in curves)
    x = lambda i: LEFT + (WIDTH - LEFT - RIGHT) * i / max(1, steps - 1)
    y = lambda v: TOP + (HEIGHT - TOP - BOTTOM) * (hi - v) / (hi - lo)
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif" font-size="12">',
           f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
           f'<text x="{WIDTH / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>']
    for k in range(6):  # grid and axis labels
        v = lo + (hi - lo) * k / 5
        svg.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#ddd"/>')
        svg.append(f'<text x="{LEFT - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:.2f}</text>')
        s = int((steps - 1) * k / 5)
        svg.append(f'<text x="{x(s):.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle">{s + 1}</text>')
    svg.append(f'<text x="{WIDTH / 2}" y="{HEIGHT - 8}" text-anchor="middle">optimizer step</text>')
    svg.append(f'<text x="14" y="{HEIGHT / 2}" text-anchor="middle" transform="rotate(-90 14 {HEIGHT / 2})">'
               f'loss (mean of 20 steps)</text>')
    for n, (name, c) in enumerate(curves):
        colour = COLOURS[n % len(COLOURS)]
        points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(c))
        svg.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{points}"/>')
        svg.append(f'<text x="{WIDTH - RIGHT - 8}" y="{TOP + 16 + 16 * n}" text-anchor="end" fill="{colour}">{name}</text>')
    svg.append("</svg>")
    open(out, "w").write("\n".join(svg) + "\n")


main()
