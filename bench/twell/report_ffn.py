#!/usr/bin/env python3
"""Writes the TwELL FFN table (between the twell-ffn markers) into
docs/performance.md and the plot docs/img/twell_ffn_h200.png from
bench/results/twell_ffn_h200.json (run_ffn.py's records).

  /usr/bin/python3 bench/twell/report_ffn.py
"""
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from markdown import replace_section  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "twell_ffn_h200.json"
DOC = ROOT / "docs" / "performance.md"
PLOT = ROOT / "docs" / "img" / "twell_ffn_h200.png"


def table(records):
    rows = ["| d | F | tokens | active | GPU-counted | fallback rows | TwELL µs | our dense µs "
            "| torch µs | TwELL / torch | chosen | chosen / torch | max rel err |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        s = r["shape"]
        rows.append("| %d | %d | %d | %.1f%% | %.2f%% | %d | %.0f | %.0f | %.0f | %.2f× | %s | "
                    "**%.2f×** | %.1e |"
                    % (s["d"], s["F"], s["M"], 100 * s["active"], 100 * r["gpu_measured_density"],
                       r["fallback_rows"], r["time_us"], r["baselines"]["sparseopt_dense"],
                       r["baselines"]["torch_dense"], r["speedup"], r["chosen"],
                       r["chosen_speedup"], r["max_rel_err"]))
    return "\n".join(rows)


def plot(records):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    shapes = sorted({(r["shape"]["d"], r["shape"]["F"], r["shape"]["M"]) for r in records})
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
    for ax, key, title in ((axes[0], "speedup", "TwELL program"),
                           (axes[1], "chosen_speedup", "compiler's choice (calibrated)")):
        for d, f, m in shapes:
            pts = sorted((r["shape"]["active"], r[key]) for r in records
                         if (r["shape"]["d"], r["shape"]["F"], r["shape"]["M"]) == (d, f, m))
            ax.plot([100 * p for p, _ in pts], [v for _, v in pts], marker="o",
                    label="d=%d F=%d M=%d" % (d, f, m))
        ax.axhline(1.0, color="black", lw=0.8)
        ax.axhline(0.95, color="red", lw=0.8, ls="--")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("active neurons (%)")
        ax.set_title(title)
    axes[0].set_ylabel("speedup over torch dense (bf16, H200)")
    axes[1].legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(PLOT, dpi=110)


def producer_table(records):
    """TwELL with the library producer (cuBLASLt + pack), the fused
    producer and the fused producer in clusters of two, same turns
    (twell_producer_h200.json)."""
    by = {}
    for r in records:
        s = r["shape"]
        by.setdefault((s["M"], s["d"], s["F"], s["active"]), {})[r["variant"]] = r
    out = ["| tokens | d | F | active | library producer µs | fused µs | fused, pairs µs |"
           " fused / library | fused / torch | max rel err (fused) | fallback rows |",
           "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for (m, d, f, p), v in sorted(by.items()):
        lib, fu = v["twell-cuda-core"], v["twell-fused-producer"]
        pair = v.get("twell-fused-producer-cluster2")
        out.append("| %d | %d | %d | %.1f%% | %.0f | %.0f | %s | %.2f× | %.2f× | %.1e | %d |" % (
            m, d, f, 100 * p, lib["time_us"], fu["time_us"],
            "%.0f" % pair["time_us"] if pair else "—", lib["time_us"] / fu["time_us"],
            fu["baselines"]["torch_dense"] / fu["time_us"], fu["max_rel_err"], fu["fallback_rows"]))
    return "\n".join(out)


def tensor_core_table(records):
    """The tensor-core consumer beside the CUDA-core one (run_ffn.py records
    of variant twell-tensor-cores and twell-cuda-core, same turns)."""
    cuda = {(r["shape"]["d"], r["shape"]["F"], r["shape"]["M"], r["shape"]["active"]): r
            for r in records if r["variant"] == "twell-cuda-core"}
    rows = ["| d | F | tokens | active | CUDA cores µs | tensor cores µs | our dense µs | torch µs "
            "| tensor / CUDA cores | tensor cores / torch | max rel err | fallback rows |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in sorted((r for r in records if r["variant"] == "twell-tensor-cores"),
                    key=lambda r: (r["shape"]["d"], r["shape"]["F"], r["shape"]["M"],
                                   r["shape"]["active"])):
        s = r["shape"]
        c = cuda[(s["d"], s["F"], s["M"], s["active"])]
        rows.append("| %d | %d | %d | %.1f%% | %.0f | %.0f | %.0f | %.0f | %.2f× | **%.2f×** | %.1e | %d |"
                    % (s["d"], s["F"], s["M"], 100 * s["active"], c["time_us"], r["time_us"],
                       r["baselines"]["sparseopt_dense"], r["baselines"]["torch_dense"],
                       c["time_us"] / r["time_us"], r["speedup"], r["max_rel_err"],
                       r["fallback_rows"]))
    return "\n".join(rows)


def passes_table(text):
    """The CUDA-core consumer's kernel time per pass count (twell-passes),
    from profile_ffn.py's lines in twell_passes_profile_h200.txt: a line
    "passes P", then one "ours gated_bf16_m<M>_d<d>_f<F> active <p>: ..."
    per fraction, with the consumer's time (its launches summed)."""
    import re
    times, passes = {}, None
    for line in text.splitlines():
        if line.startswith("passes "):
            passes = int(line.split()[1])
            continue
        m = re.match(r"ours gated_bf16_m(\d+)_d(\d+)_f(\d+) active ([0-9.]+): (.*)", line)
        if not m:
            continue
        consumer = re.search(r"sgpu_twell_ffn_0 ([0-9.]+) us", m.group(5))
        key = (int(m.group(2)), int(m.group(3)), int(m.group(1)), float(m.group(4)))
        times.setdefault(key, {})[passes] = float(consumer.group(1))
    counts = sorted({p for v in times.values() for p in v})
    rows = ["| d | F | tokens | active | weight rows MB | " +
            " | ".join("%d pass%s µs" % (p, "" if p == 1 else "es") for p in counts) +
            " | best / one pass |",
            "|---:|---:|---:|---:|---:|" + "---:|" * len(counts) + "---:|"]
    for (d, f, m, a), v in sorted(times.items()):
        best = min(v, key=v.get)
        rows.append("| %d | %d | %d | %.1f%% | %.0f | " % (d, f, m, 100 * a, 2 * f * d * 2 / 1e6) +
                    " | ".join(("**%.0f**" if p == best else "%.0f") % v[p] for p in counts) +
                    " | %.2f× |" % (v[1] / v[best]))
    return "\n".join(rows)


def main():
    records = json.loads(RESULTS.read_text())
    doc = DOC.read_text()
    doc = replace_section(doc, "twell-ffn", table(records))
    tensor = RESULTS.with_name("twell_tensor_cores_h200.json")
    if tensor.exists():
        doc = replace_section(doc, "twell-tensor-cores",
                              tensor_core_table(json.loads(tensor.read_text())))
    producer = RESULTS.with_name("twell_producer_h200.json")
    if producer.exists() and "twell-producer:begin" in doc:
        doc = replace_section(doc, "twell-producer", producer_table(json.loads(producer.read_text())))
    passes = RESULTS.with_name("twell_passes_profile_h200.txt")
    if passes.exists() and "twell-passes:begin" in doc:
        doc = replace_section(doc, "twell-passes", passes_table(passes.read_text()))
    DOC.write_text(doc)
    plot(records)
    print("wrote %s and %s" % (DOC, PLOT))


if __name__ == "__main__":
    main()
