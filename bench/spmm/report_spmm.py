#!/usr/bin/env python3
"""Turns bench/results/spmm_h200.json into the table and plot of
docs/performance.md (between the spmm markers) and docs/img/spmm_2to4_h200.png.

  /usr/bin/python3 bench/spmm/report_spmm.py
"""
import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results" / "spmm_h200.json"
DOC = ROOT / "docs" / "performance.md"
PLOT = ROOT / "docs" / "img" / "spmm_2to4_h200.png"
BEGIN, END = "<!-- spmm-2to4:begin -->", "<!-- spmm-2to4:end -->"


def table(records):
    lines = ["| variant | dtype | M | N | K | ours (µs) | cuBLAS (µs) | cuSPARSELt (µs) | ours / cuBLAS | ours / best | max rel err |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in records:
        if r["kind"] != "timing":
            continue
        s, b = r["shape"], r["baselines"]
        cslt = "%.1f" % b["cusparselt"] if b["cusparselt"] else "n/a"
        lines.append("| %s | %s | %d | %d | %d | %.1f | %.1f | %s | %.2f× | %.2f× | %.1e |" % (
            r["variant"], r["dtype"], s["M"], s["N"], s["K"], r["ours_us"], b["cublas"], cslt,
            r["speedup_vs_cublas"], r["speedup"], r["max_rel_err"]))
    lines += ["", "Correctness on shapes off every tile (tolerance: f16 2e-3, bf16 1.6e-2 of max|ref|):", "",
              "| variant | dtype | M | N | K | max rel err | within tolerance |", "|---|---|---:|---:|---:|---:|---|"]
    for r in records:
        if r["kind"] == "correctness":
            s = r["shape"]
            lines.append("| %s | %s | %d | %d | %d | %.1e | %s |" % (r["variant"], r["dtype"], s["M"], s["N"], s["K"],
                                                             r["max_rel_err"], "yes" if r["correct"] else "NO"))
    return "\n".join(lines)


def plot(records):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    timing = [r for r in records if r["kind"] == "timing" and r["variant"] == "2:4"]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
    for ax, dtype in zip(axes, ("f16", "bf16")):
        rs = [r for r in timing if r["dtype"] == dtype]
        labels = ["%d×%d×%d" % (r["shape"]["M"], r["shape"]["N"], r["shape"]["K"]) for r in rs]
        xs = range(len(rs))
        ax.plot(xs, [r["baselines"]["cublas"] / r["ours_us"] for r in rs], "o-", label="ours (2:4, mma.sp)")
        ax.plot(xs, [r["baselines"]["cublas"] / r["baselines"]["cusparselt"] if r["baselines"]["cusparselt"] else float("nan")
                     for r in rs], "s-", label="torch 2:4 (cuSPARSELt)")
        ax.axhline(1.0, color="gray", lw=0.8, ls="--", label="cuBLAS dense")
        ax.set_xticks(list(xs))
        ax.set_xticklabels(labels, rotation=35, ha="right", fontsize=8)
        ax.set_yscale("log")
        ax.set_title("%s on %s (M×N×K)" % (dtype, rs[0]["gpu"]))
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("speedup over cuBLAS dense")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    PLOT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(PLOT, dpi=110)


def main():
    records = json.loads(RESULTS.read_text())
    doc = DOC.read_text()
    a, b = doc.index(BEGIN) + len(BEGIN), doc.index(END)
    doc = doc[:a] + "\n" + table(records) + "\n" + doc[b:]
    # The opt-in warpgroup kernel, when measured, has its own table.
    wg = RESULTS.with_name("spmm_wgmma_h200.json")
    wb, we = "<!-- spmm-wgmma:begin -->", "<!-- spmm-wgmma:end -->"
    if wg.exists() and wb in doc:
        a, b = doc.index(wb) + len(wb), doc.index(we)
        doc = doc[:a] + "\n" + table(json.loads(wg.read_text())) + "\n" + doc[b:]
    DOC.write_text(doc)
    plot(records)


if __name__ == "__main__":
    main()
