#!/usr/bin/env python3
"""Turns the ladder records in bench/results/ladder_*.json into the tables
and the plot of docs/performance.md (between its ladder markers):

  ladder-tp1   one GPU (world size 1): standard vs ladder, ours and torch
  ladder-tpN   several GPUs, NVLink and NCCL_P2P_DISABLE=1
  docs/img/ladder_h200.png

  /usr/bin/python3 bench/ladder/report_ladder.py
"""
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from markdown import replace_section  # noqa: E402

RESULTS = ROOT / "bench" / "results"
DOC = ROOT / "docs" / "performance.md"
PLOT = ROOT / "docs" / "img" / "ladder_h200.png"


def load():
    records = []
    for path in sorted(RESULTS.glob("ladder_*.json")):
        records += json.loads(path.read_text())
    return records


def pairs(records):
    """{(tp, p2p, batch, d, ffn, layers): {variant: record}}."""
    out = {}
    for r in records:
        s = r["shape"]
        key = (s["tp"], s["p2p"], s["batch"], s["d"], s["ffn"], s["layers"])
        out.setdefault(key, {})[r["variant"]] = r
    return out


def fmt(v):
    return "—" if v is None else "%.1f" % v


def table(records, tp):
    rows = ["| d / F / blocks | link | tokens | ours standard µs | ours ladder µs | ladder / standard "
            "| ours eager std / ladder µs | torch ladder eager / graph µs "
            "| ours ladder vs torch ladder eager / graph | max rel err (std, ladder) |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for key, v in sorted(pairs(records).items()):
        t, p2p, m, d, ffn, layers = key
        if t != tp or "standard" not in v or "ladder" not in v:
            continue
        s, l = v["standard"], v["ladder"]
        b = l["baselines"]
        te, tg = b["torch_ladder"], b.get("torch_graph_ladder")
        rows.append("| %d / %d / %d | %s | %d | %s | %s | %.3f× | %s / %s | %s / %s | %.2f× / %s | %.1e, %.1e |" % (
            d, ffn, 2 * layers, link(t, p2p), m, fmt(s["time_us"]), fmt(l["time_us"]),
            s["time_us"] / l["time_us"], fmt(s["time_us_eager"]), fmt(l["time_us_eager"]),
            fmt(te), fmt(tg), te / l["time_us"],
            "%.2f×" % (tg / l["time_us"]) if tg else "—", s["max_rel_err"], l["max_rel_err"]))
    overlap = [(link(r["shape"]["tp"], r["shape"]["p2p"]), r["shape"]["batch"], r["variant"],
                r["comm_busy_us"], r["comm_overlap_us"])
               for r in records if r["shape"]["tp"] == tp and "comm_busy_us" in r]
    if overlap:
        rows.append("")
        rows.append("Timeline (CUPTI, three eager forwards, per forward): time the communication "
                    "stream is busy and how much of it overlaps compute kernels.")
        rows.append("")
        rows.append("| link | tokens | program | comm busy µs | overlapping compute µs |")
        rows.append("|---|---|---|---|---|")
        for lk, m, variant, busy, both in sorted(overlap):
            rows.append("| %s | %d | %s | %.1f | %.1f (%.0f%%) |" % (
                lk, m, variant, busy, both, 100.0 * both / busy if busy else 0))
    return "\n".join(rows)


def link(tp, p2p):
    return "—" if tp == 1 else ("NVLink" if p2p else "P2P off")


def plot(records):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    series = {}
    for key, v in sorted(pairs(records).items()):
        t, p2p, m, *_ = key
        if "standard" in v and "ladder" in v:
            series.setdefault((t, p2p), []).append((m, v["standard"]["time_us"] / v["ladder"]["time_us"]))
    for (t, p2p), pts in sorted(series.items()):
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                label="TP %d%s" % (t, "" if p2p else ", P2P off"))
    ax.axhline(1.0, color="gray", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("tokens")
    ax.set_ylabel("ladder speedup over standard (CUDA graph)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(PLOT, dpi=110)


def eager_table():
    """Our eager runs before and after the communicator stopped sleeping
    100 us per in-progress NCCL enqueue (same TP 2 NVLink stack)."""
    after = RESULTS / "ladder-eager-backoff_tp2_h200.json"
    if not after.exists():
        return None
    before = pairs([r for r in load() if r["shape"]["tp"] == 2 and r["shape"]["p2p"]])
    rows = ["| tokens | program | eager before µs | eager after µs | graph after µs |",
            "|---|---|---|---|---|"]
    for key, v in sorted(pairs(json.loads(after.read_text())).items()):
        for variant in ("standard", "ladder"):
            old = before.get(key, {}).get(variant)
            new = v[variant]
            rows.append("| %d | %s | %s | %.1f | %.1f |" % (
                key[2], variant, fmt(old["time_us_eager"]) if old else "—",
                new["time_us_eager"], new["time_us"]))
    return "\n".join(rows)


def main():
    records = load()
    if not records:
        sys.exit("no bench/results/ladder_*.json")
    doc = DOC.read_text()
    doc = replace_section(doc, "ladder-tp1", table(records, 1))
    multi = sorted({r["shape"]["tp"] for r in records if r["shape"]["tp"] > 1})
    doc = replace_section(doc, "ladder-tpN", "\n\n".join(
        "TP %d:\n\n%s" % (t, table(records, t)) for t in multi) or "Not measured yet.")
    eager = eager_table()
    if eager:
        doc = replace_section(doc, "ladder-eager", eager)
    DOC.write_text(doc)
    plot(records)


if __name__ == "__main__":
    main()
