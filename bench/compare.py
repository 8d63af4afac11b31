"""Puts bertc-bench-train and torch_baseline.py results side by side: for each config and
precision, every implementation's sequences/s, MFU and memory, and bertc's ratios against each
PyTorch mode (speed: bertc / torch; memory: bertc / torch). Reads JSON lines (files or stdin),
prints a Markdown table. MFU of the PyTorch runs uses bertc's model FLOPs per sequence of the
same config, since both run the same model."""
import json
import sys


def load(paths):
    rows = []
    for path in paths or ["-"]:
        f = sys.stdin if path == "-" else open(path)
        rows += [json.loads(line) for line in f if line.strip().startswith("{")]
    return rows


def table(rows):
    out = ["| config | precision | impl | seq/s | MFU | memory GiB | bertc speed x | bertc memory x |",
           "|---|---|---|---|---|---|---|---|"]
    groups = {}
    for r in rows:
        groups.setdefault((r["config"], r["precision"], r["batch_size"], r["seq_len"]), []).append(r)
    for (config, precision, batch, seq), group in sorted(groups.items()):
        bertc = next((r for r in group if r["impl"] == "bertc"), None)
        for r in group:
            mfu = r.get("mfu")
            if mfu is None and bertc and bertc.get("mfu") is not None:
                mfu = bertc["mfu"] * r["sequences_per_second"] / bertc["sequences_per_second"]
            speed = memory = ""
            if bertc and r is not bertc and r["impl"].startswith("torch"):
                speed = f"{bertc['sequences_per_second'] / r['sequences_per_second']:.2f}"
                memory = f"{bertc['device_memory_bytes'] / r['device_memory_bytes']:.2f}"
            out.append(f"| {config} b{batch} s{seq} | {precision} | {r['impl']} | {r['sequences_per_second']:.1f} | "
                       f"{'' if mfu is None else f'{100 * mfu:.1f}%'} | {r['device_memory_bytes'] / 2**30:.2f} | "
                       f"{speed} | {memory} |")
    return "\n".join(out)


if __name__ == "__main__":
    print(table(load(sys.argv[1:])))
