#!/usr/bin/env python3
"""Writes the whole-model prefill and attention tables (between the
model-prefill and attention markers) into docs/performance.md from
bench/results/model_*_h200.json (run_prefill.py's records) and
bench/results/attention_h200.json (check_attention.py's).

  /usr/bin/python3 bench/model/report_model.py
"""
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from markdown import replace_section  # noqa: E402

RESULTS = ROOT / "bench" / "results"
DOC = ROOT / "docs" / "performance.md"
ORDER = ["dense", "2:4", "6:8", "twell", "combo"]


def model_table(records):
    rows = ["| model | variant | tokens | ours tok/s | torch eager tok/s | ours / torch | peak memory "
            "| max rel err (bar) | torch bf16 err | active neurons |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    key = lambda r: (r["shape"]["style"], r["shape"]["d"], ORDER.index(r["variant"]))
    for r in sorted(records, key=key):
        s = r["shape"]
        active = r.get("stats", {}).get("active_neurons")
        peak = r["peak_mem_bytes"] or 0
        peak_text = "%.1f GB" % (peak / 1e9) if peak >= 1e9 else "%.1f MB" % (peak / 1e6)
        rows.append("| %s d=%d L=%d | %s | %d | **%.0f** | %.0f | %.2f× | %s | %.2e (%.1e) %s | %.2e | %s |" % (
            "Llama" if s["style"] == "llama" else "GPT-2", s["d"], s["layers"], r["variant"], s["tokens"],
            r["tokens_per_s"], r["baselines"]["torch_eager"], r["speedup"], peak_text,
            r["max_rel_err"], r["tolerance"], "ok" if r["correct"] else "**FAIL**", r["torch_max_rel_err"],
            "%.2f%%" % (100 * active["mean"]) if active else "—"))
    return "\n".join(rows)


def attention_table(records):
    rows = ["| case | B×H/Hkv×Sq×Sk×D | causal | kernel | ours µs | TFLOP/s | cuDNN µs | flash µs "
            "| ours / cuDNN |",
            "|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        if "ours_us" not in r:
            continue
        s, b = r["shape"], r["baselines"]
        cfg = s.get("config") or {}
        kernel = cfg.get("kernel", "tensor-cores") + (" %d warps" % cfg["warps"] if "warps" in cfg else "")
        rows.append("| %s | %d×%d/%d×%d×%d×%d | %s | %s | **%.1f** | %.0f | %.1f | %.1f | %.2f× |" % (
            r["variant"], s["batch"], s["heads"], s["kv_heads"], s["Sq"], s["Sk"], s["D"],
            "yes" if s["causal"] else "no", kernel, r["ours_us"], r["tflops"],
            b.get("cudnn", float("nan")), b.get("flash", float("nan")),
            r["ours_us"] / b["cudnn"] if "cudnn" in b else float("nan")))
    checks = [r for r in records if "ours_us" not in r]
    rows.append("")
    rows.append("Correctness only: " + ", ".join(
        "%s %.1e%s" % (r["variant"], r["max_rel_err"], "" if r["correct"] else " **FAIL**") for r in checks)
        + " (max rel err against torch's fp32 math SDPA; bf16 tolerance 2e-2, f16 5e-3, f32 1e-4).")
    return "\n".join(rows)


def main():
    models = []
    for p in sorted(RESULTS.glob("model_*_h200.json")):
        models += json.loads(p.read_text())
    attention = json.loads((RESULTS / "attention_h200.json").read_text())
    doc = DOC.read_text()
    doc = replace_section(doc, "model-prefill", model_table(models))
    doc = replace_section(doc, "attention", attention_table(attention))
    DOC.write_text(doc)
    print(model_table(models))
    print(attention_table(attention))
    return 0


if __name__ == "__main__":
    sys.exit(main())
