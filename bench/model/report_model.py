#!/usr/bin/env python3
"""Writes the whole-model tables into docs/performance.md from
bench/results/model_*_h200.json: prefill (run_prefill.py's records, the
model-prefill markers), decode timings and decode checks (run_decode.py's
time and check records, the model-decode and model-decode-check markers),
and the attention tables (prefill and decode) from
bench/results/attention_h200.json (check_attention.py's).

  /usr/bin/python3 bench/model/report_model.py [--gpu h100]
"""
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from markdown import replace_section  # noqa: E402

RESULTS = ROOT / "bench" / "results"
DOC = ROOT / "docs" / "performance.md"
ORDER = ["dense", "2:4", "6:8", "relu", "twell", "combo"]
# The program each variant's bar compares with: the sparse weights with our
# dense program, TwELL with the same ReLU model compiled dense.
OUR_BASE = {"2:4": "dense", "6:8": "dense", "combo": "dense", "twell": "relu"}


def model_table(records):
    rows = ["| model | variant | tokens | ours tok/s | torch eager tok/s | ours / torch | best torch tok/s "
            "(form) | ours / best torch | ours / our dense | in CUDA graphs: ours / torch is_causal + compile "
            "| peak memory | max rel err (bar) | torch bf16 err | active neurons |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    ours = {(r["shape"]["style"], r["shape"]["d"], r["variant"]): r["tokens_per_s"] for r in records}
    forms = {"torch_eager": "eager", "torch_compile": "compile", "torch_causal_eager": "is_causal",
             "torch_causal_compile": "is_causal + compile"}
    key = lambda r: (r["shape"]["style"], r["shape"]["d"], ORDER.index(r["variant"]))
    for r in sorted(records, key=key):
        s = r["shape"]
        active = r.get("stats", {}).get("active_neurons")
        peak = r["peak_mem_bytes"] or 0
        peak_text = "%.1f GB" % (peak / 1e9) if peak >= 1e9 else "%.1f MB" % (peak / 1e6)
        best = max(r["baselines"], key=r["baselines"].get)
        best_text = ("%.0f (%s)" % (r["baselines"][best], forms.get(best, best))
                     if len(r["baselines"]) > 1 else "—")
        best_ratio = "%.2f×" % (r["tokens_per_s"] / r["baselines"][best]) if len(r["baselines"]) > 1 else "—"
        base = ours.get((s["style"], s["d"], OUR_BASE.get(r["variant"])))
        base_text = "%.2f× (%s)" % (r["tokens_per_s"] / base, OUR_BASE[r["variant"]]) if base else "—"
        graph = r.get("cuda_graph_us") or {}
        graph_text = ("%.0f / %.0f µs: %.2f×" % (graph["ours"], graph["torch_causal_compile"],
                                                 graph["torch_causal_compile"] / graph["ours"])
                      if "ours" in graph and "torch_causal_compile" in graph
                      else "%.0f µs / —" % graph["ours"] if "ours" in graph else "—")
        rows.append("| %s d=%d L=%d | %s | %d | **%.0f** | %.0f | %.2f× | %s | %s | %s | %s | %s | %.2e (%.1e) %s "
                    "| %.2e | %s |" % (
            "Llama" if s["style"] == "llama" else "GPT-2", s["d"], s["layers"], r["variant"], s["tokens"],
            r["tokens_per_s"], r["baselines"]["torch_eager"], r["speedup"], best_text, best_ratio, base_text,
            graph_text, peak_text,
            r["max_rel_err"], r["tolerance"], "ok" if r["correct"] else "**FAIL**", r["torch_max_rel_err"],
            "%.2f%%" % (100 * active["mean"]) if active else "—"))
    return "\n".join(rows)


def _name(r):
    s = r["shape"]
    return "%s d=%d L=%d" % ("Llama" if s["style"] == "llama" else "GPT-2", s["d"], s["layers"])


def attention_us(profile):
    """GPU µs per decode step in attention kernels (ours: the split and
    combine kernels; torch: its SDPA backend's), from a record's profile."""
    if not profile:
        return None
    names = ("attention", "sdpa", "flash", "fmha")
    return sum(k["us"] for k in profile["kernels"] if any(n in k["kernel"].lower() for n in names))


# Bytes of weights a decode step reads, relative to the dense model's block
# linears: 2:4 keeps half the values plus 4 bits of metadata per 4 weights
# (0.5625); 6:8 is 2:4 over 1.5x the columns (0.84375). The LM head stays
# dense in every variant and the embedding table is gathered, not read.
SPARSE_BYTES = {"dense": 1.0, "2:4": 0.5625, "6:8": 0.84375}


def decode_bytes(r):
    """(weight bytes, KV-cache bytes) one decode step reads, from the
    record's shape (bf16): every block linear, the LM head, and the keys
    and values of `context` positions of every sequence."""
    s = r["shape"]
    d, f, layers = s["d"], s["F"], s["layers"]
    kv = d // s["heads"] * s["kv_heads"]
    block = layers * (2 * d * d + 2 * d * kv + 3 * d * f) * 2
    head = s["vocab"] * d * 2
    weights = block * SPARSE_BYTES.get(r["variant"], 1.0) + head
    cache = s["batch"] * layers * 2 * kv * s["context"] * 2
    return weights, cache


def decode_bound(r):
    """Tokens per second at the memory bound: the step's bytes at the copy
    bandwidth measured in the same process (None in records without it)."""
    if "copy_bytes_per_s" not in r:
        return None
    return r["shape"]["batch"] * r["copy_bytes_per_s"] / sum(decode_bytes(r))


def decode_table(records):
    rows = ["| model | variant | batch | context | ours tok/s | ours eager | ours CUDA graph | torch eager "
            "| torch eager + CUDA graph | torch.compile + CUDA graph | ours / best torch | memory bound "
            "| ours / bound | ours / our dense | attention µs per step: ours / torch |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    key = lambda r: (r["shape"]["style"], ORDER.index(r["variant"]), r["shape"]["batch"])
    fmt = lambda v: "%.0f" % v if v else "—"
    dense = {(r["shape"]["style"], r["shape"]["batch"]): r["tokens_per_s"]
             for r in records if r["variant"] == "dense"}
    for r in sorted(records, key=key):
        s, b = r["shape"], r["baselines"]
        best = max(b.values()) if b else None
        bound = decode_bound(r)
        ref = dense.get((s["style"], s["batch"]))
        prof = r.get("profile", {})
        attn = [attention_us(prof.get(k)) for k in ("ours", "torch_eager")]
        rows.append("| %s | %s | %d | %d of %d | **%.0f** | %s | %s | %s | %s | %s | %s%s | %s | %s | %s | %s |" % (
            _name(r), r["variant"], s["batch"], s["context"], s["capacity"], r["tokens_per_s"],
            fmt(r.get("ours_eager_tokens_per_s")), fmt(r.get("ours_graph_tokens_per_s")),
            fmt(b.get("torch_eager")), fmt(b.get("torch_eager_graph")), fmt(b.get("torch_compile_graph")),
            "%.2f×" % (r["tokens_per_s"] / best) if best else "—",
            "" if r["floor_holds"] else " **below the floor**",
            fmt(bound), "%.0f%%" % (100 * r["tokens_per_s"] / bound) if bound else "—",
            "%.2f×" % (r["tokens_per_s"] / ref) if ref and r["variant"] != "dense" else "—",
            " / ".join("%.0f" % a for a in attn) if None not in attn else "—"))
    return "\n".join(rows)


def decode_ab_table(records, what):
    """The decode records timed beside a second set of programs in the same
    process: the same programs loaded under one environment setting
    (run_decode.py time --ab-env, what="env"; e.g. SPARSEOPT_PDL=0: plain
    launches instead of programmatic ones) or the same model compiled
    another way (--ab-dir, what="dir"; e.g. the CUDA-core decode
    attention)."""
    rows = ["| model | variant | batch | ours tok/s (CUDA graph) | %s | tok/s | ours / that |"
            % ("loaded with" if what == "env" else "compiled as"),
            "|---|---|---|---|---|---|---|"]
    key = lambda r: (r["shape"]["style"], ORDER.index(r["variant"]), r["shape"]["batch"])
    for r in sorted((r for r in records if what in (r.get("ab") or {})), key=key):
        ours = r.get("ours_graph_tokens_per_s") or r["tokens_per_s"]
        ab = r["ab"]
        rows.append("| %s | %s | %d | %.0f | `%s` | %.0f | %.3f× |" % (
            _name(r), r["variant"], r["shape"]["batch"], ours, ab[what], ab["tokens_per_s"],
            ours / ab["tokens_per_s"]))
    return "\n".join(rows) if len(rows) > 2 else "(no A/B records)"


def attention_calls_table(records, cuda_cores):
    """The current decode records (the tensor-core split kernel) beside the
    same model's programs with the CUDA-core split kernel (`cuda_cores`),
    timed in another call on the same kind of GPU: machine-to-machine
    differences of a few percent are in the ratio."""
    rows = ["| model | variant | batch | tensor-core split tok/s | commit | CUDA-core split tok/s "
            "| commit | ratio |", "|---|---|---|---|---|---|---|---|"]
    key = lambda r: (r["variant"], r["shape"]["batch"])
    cc = {key(r): r for r in cuda_cores}
    for r in sorted(records, key=lambda r: (ORDER.index(r["variant"]), r["shape"]["batch"])):
        c = cc.get(key(r))
        if not c:
            continue
        rows.append("| %s | %s | %d | %.0f | %s | %.0f | %s | %.3f× |" % (
            _name(r), r["variant"], r["shape"]["batch"], r["tokens_per_s"], r["commit"],
            c["tokens_per_s"], c["commit"], r["tokens_per_s"] / c["tokens_per_s"]))
    return "\n".join(rows) if len(rows) > 2 else "(no records)"


def fuse_siblings_table(ab):
    """Our 2:4 programs with q, k and v as one GEMM (sgpu-fuse-sibling-spmm)
    beside the same model's programs compiled before it, timed in the same
    session (`ab`: records with "fuse_siblings" true or false)."""
    records = [r for r in ab if r.get("fuse_siblings")]
    unfused = [r for r in ab if r.get("fuse_siblings") is False]
    rows = ["| model | variant | phase | batch | fused tok/s | three GEMMs tok/s | fused / three |",
            "|---|---|---|---|---|---|---|"]
    def key(r):
        return (r["variant"], r["shape"].get("phase", "prefill"), r["shape"].get("batch"))
    fused = {key(r): r for r in records if r["variant"] in ("2:4", "6:8")}
    for u in sorted(unfused, key=lambda r: (r["shape"].get("phase", "prefill"), r["shape"].get("batch") or 0)):
        f = fused.get(key(u))
        if not f:
            continue
        ft, ut = f["tokens_per_s"], u["tokens_per_s"]
        rows.append("| %s | %s | %s | %s | %.0f | %.0f | %.3f× |" % (
            _name(f), f["variant"],
            f["shape"].get("phase", "prefill"), f["shape"].get("batch", 1), ft, ut, ft / ut))
    return "\n".join(rows) if len(rows) > 2 else "(no records)"


# How the profiled torch forms are named in the tables.
TORCH_FORMS = {"torch_compile": "torch.compile", "torch_eager": "torch eager",
               "torch_causal_compile": "torch is_causal + compile",
               "torch_causal_eager": "torch is_causal"}


def breakdown_table(records, top=12):
    """Per-kernel GPU time of one decode step or prefill (torch's profiler
    over eager calls), ours beside torch's: for decode torch.compile's (else
    eager), for prefill the fastest profiled torch form."""
    out = []
    key = lambda r: (r["shape"]["style"], ORDER.index(r["variant"]), r["shape"]["batch"])
    for r in sorted(records, key=key):
        prof = r.get("profile") or {}
        if "ours" not in prof:
            continue
        prefill = r["shape"].get("phase", "prefill") == "prefill"
        if prefill:
            forms = [k for k in prof if k != "ours"]
            form = min(forms, key=lambda k: r["baselines_us"].get(k, float("inf"))) if forms else None
        else:
            form = "torch_compile" if "torch_compile" in prof else "torch_eager"
        theirs, who = prof.get(form), TORCH_FORMS.get(form, form)
        what = ("prefill of %d tokens" % r["shape"]["tokens"] if prefill
                else "batch %d" % r["shape"]["batch"])
        out.append("%s %s, %s (commit %s): ours %.0f µs of kernels per %s, %s %.0f µs" % (
            _name(r), r["variant"], what, r["commit"], prof["ours"]["total_us"],
            "prefill" if prefill else "step", who, theirs["total_us"] if theirs else float("nan")))
        idle = [(w, p["idle_us"]) for w, p in (("ours", prof["ours"]), (who, theirs))
                if p and p.get("idle_us") is not None]
        if idle:
            out.append("")
            out.append("GPU idle between operations within a call: %s." % ", ".join(
                "%s %.0f µs" % (w, us) for w, us in idle))
            waits = prof["ours"].get("idle_before") or []
            if waits:
                out.append("Ours, by the operation that waited: %s." % ", ".join(
                    "`%s` %.0f µs (%g a call)" % (w["kernel"][:60], w["us"], w["count"]) for w in waits[:6]))
        out.append("")
        out.append("| ours: kernel | µs | %s: kernel | µs |" % who)
        out.append("|---|---|---|---|")
        a, b = prof["ours"]["kernels"][:top], (theirs or {"kernels": []})["kernels"][:top]
        for i in range(max(len(a), len(b))):
            x = a[i] if i < len(a) else None
            y = b[i] if i < len(b) else None
            out.append("| %s | %s | %s | %s |" % (
                "`%s`" % x["kernel"][:60] if x else "", "%.0f" % x["us"] if x else "",
                "`%s`" % y["kernel"][:60] if y else "", "%.0f" % y["us"] if y else ""))
        out.append("")
    return "\n".join(out).rstrip()


def decode_forms_table(records):
    """The decode kernel's forms (#sgpu.attention_config lanes_per_key / unroll) timed
    in one run: the model's decode step and its attention kernels."""
    rows = ["| lanes per key | unroll | batch | ours tok/s | attention µs per step | torch SDPA µs "
            "| commit |", "|---|---|---|---|---|---|---|"]
    key = lambda r: (r["attention_config"]["lanes_per_key"], r["attention_config"]["unroll"],
                     r["shape"]["batch"])
    for r in sorted(records, key=key):
        c = r["attention_config"]
        rows.append("| %d | %d | %d | %.0f | %.0f | %.0f | %s |" % (
            c["lanes_per_key"], c["unroll"], r["shape"]["batch"], r["tokens_per_s"],
            attention_us(r["profile"]["ours"]), attention_us(r["profile"]["torch_eager"]), r["commit"]))
    return "\n".join(rows)


def decode_splits_table(records):
    """The decode attention's splits per key/value row (#sgpu.attention_config
    `splits`) timed against the default, all in one run: the decode step's
    tokens per second."""
    rows = ["| batch | splits | blocks | ours tok/s | torch eager + CUDA graph | commit |",
            "|---|---|---|---|---|---|"]
    key = lambda r: (r["shape"]["batch"], r["splits"])
    for r in sorted(records, key=key):
        s = r["shape"]
        rows.append("| %d | %d%s | %d | %.0f | %.0f | %s |" % (
            s["batch"], r["splits"], " (default)" if r.get("default") else "",
            s["batch"] * s["kv_heads"] * r["splits"], r["tokens_per_s"],
            r["baselines"]["torch_eager_graph"], r["commit"]))
    return "\n".join(rows)


def decode_check_table(records):
    rows = ["| model | variant | prefill max abs err (torch bf16) | steps checked | worst step max rel err "
            "| ragged: same programs (bar) | ragged: batch-1 program (bar) | result |",
            "|---|---|---|---|---|---|---|---|"]
    key = lambda r: (r["shape"]["style"], ORDER.index(r["variant"]))
    for r in sorted(records, key=key):
        g = r.get("ragged") or {}
        if "max_rel_diff" in g:
            # The first form of the check: the batch-1 program only, bar 1e-2.
            same, batch1 = "—", "%.1e (1e-02)" % g["max_rel_diff"]
        else:
            same = "%.1e (%.0e)" % (g["same_programs_max_rel_diff"], g["same_programs_bar"]) if g else "—"
            batch1 = "%.1e (%.1e)" % (g["batch1_max_rel_diff"], g["batch1_bar"]) if g else "—"
        argmax_ok = all(s["argmax_match"] or not s["checked"] for s in r["steps"])
        rows.append("| %s | %s | %.3f (%.3f) | %d of %d, argmax %s | %.2e | %s | %s | %s |" % (
            _name(r), r["variant"], r["prefill_max_abs_err"], r["torch_bf16_prefill_max_abs_err"],
            r["checked_steps"], len(r["steps"]), "ok" if argmax_ok else "**differs**", r["max_rel_err"],
            same, batch1, "ok" if r["correct"] else "**FAIL** (%s)" % r["commit"]))
    return "\n".join(rows)


def _k(x):
    return "%.0fk" % (x / 1e3) if x >= 1e4 else "%.0f" % x


def readme_summary(prefill, decode, attention):
    """The README's measured sentences, from the records (never typed)."""
    llama = {r["variant"]: r for r in prefill if r["shape"]["style"] == "llama" and r["shape"]["d"] == 4096}
    lines = []
    if "dense" in llama:
        d = llama["dense"]
        best = max(d["baselines"], key=d["baselines"].get)
        best_text = ("" if best == "torch_eager" else
                     ", its fastest form, %s, %s" % (TORCH_FORMS.get(best, best), _k(d["baselines"][best])))
        parts = ["dense %s tokens/s (torch %s%s)" % (_k(d["tokens_per_s"]), _k(d["baselines"]["torch_eager"]),
                                                     best_text)]
        names = {"2:4": "every block linear 2:4", "6:8": "6:8",
                 "relu": "a ReLU-FFN model of the same shape", "twell": "that model with the TwELL FFN",
                 "combo": "2:4 and 6:8 projections with the TwELL FFN and ladder residuals"}
        for v in ("2:4", "6:8", "relu", "twell", "combo"):
            if v in llama:
                parts.append("%s %s" % (names[v], _k(llama[v]["tokens_per_s"])))
        ok = all(r["correct"] for r in llama.values())
        lines.append("Prefill of %d tokens on an %s (bf16, Llama-3-8B shape; torch eager on the same module "
                     "in the same process): %s; %s." % (
                         d["shape"]["tokens"], d["gpu"].replace("NVIDIA ", ""), ", ".join(parts),
                         "all within the logits' error bar against torch's fp32 forward" if ok
                         else "not all within the logits' error bar (see docs/performance.md)"))
    prefill_attn = [r for r in attention if r.get("variant") == "llama8b_prefill" and "ours_us" in r]
    if prefill_attn:
        a = prefill_attn[0]
        lines.append("Attention at that shape takes %.0f µs, %.2f× the time of torch's cuDNN backend "
                     "(commit %s)." % (a["ours_us"], a["ours_us"] / a["baselines"]["cudnn"], a["commit"]))
    dense = sorted((r for r in decode if r["variant"] == "dense" and r["shape"]["style"] == "llama"),
                   key=lambda r: r["shape"]["batch"])
    if dense:
        compiled = all(r["baselines"].get("torch_compile_graph") for r in dense)
        lines.append("Decoding at context %d: %s tokens/s at batch %s, against %s for torch eager in a CUDA "
                     "graph%s." % (dense[0]["shape"]["context"],
                                   " / ".join(_k(r["tokens_per_s"]) for r in dense),
                                   " / ".join(str(r["shape"]["batch"]) for r in dense),
                                   " / ".join(_k(r["baselines"]["torch_eager_graph"]) for r in dense),
                                   " and %s for torch.compile in one" % " / ".join(
                                       _k(r["baselines"]["torch_compile_graph"]) for r in dense)
                                   if compiled else ""))
        # The same model with every block linear 2:4, at the same batches.
        sparse = {r["shape"]["batch"]: r for r in decode
                  if r["variant"] == "2:4" and r["shape"]["style"] == "llama"}
        both = [r for r in dense if r["shape"]["batch"] in sparse]
        if both:
            lines.append("With every block linear 2:4: %s tokens/s (%s our dense)." % (
                " / ".join(_k(sparse[r["shape"]["batch"]]["tokens_per_s"]) for r in both),
                " / ".join("%.2f×" % (sparse[r["shape"]["batch"]]["tokens_per_s"] / r["tokens_per_s"])
                           for r in both)))
    lines.append("(Generated from `bench/results/` by `bench/model/report_model.py`; tables and commands in "
                 "`docs/performance.md`.)")
    return "\n".join(lines)


def attention_table(records):
    rows = ["| case | B×H/Hkv×Sq×Sk×D | causal | kernel | ours µs | TFLOP/s | cuDNN µs | flash µs "
            "| ours / cuDNN |",
            "|---|---|---|---|---|---|---|---|---|"]
    for r, s, b in _timed(records):
        cfg = s.get("config") or {}
        kernel = r.get("kernel") or cfg.get("kernel", "tensor-cores")
        kernel += " %d warps" % cfg["warps"] if "warps" in cfg else ""
        rows.append("| %s | %d×%d/%d×%d×%d×%d | %s | %s | **%.1f** | %.0f | %.1f | %.1f | %.2f× |" % (
            r["variant"], s["batch"], s["heads"], s["kv_heads"], s["Sq"], s["Sk"], s["D"],
            "yes" if s["causal"] else "no", kernel, r["ours_us"], r["tflops"],
            b.get("cudnn", float("nan")), b.get("flash", float("nan")),
            r["ours_us"] / b["cudnn"] if "cudnn" in b else float("nan")))
    rows.append("")
    rows.append(_errors_line("Correctness only", [r for r in records if "ours_us" not in r],
                             "max rel err against torch's fp32 math SDPA; bf16 tolerance 2e-2, "
                             "f16 5e-3, f32 1e-4"))
    return "\n".join(rows)


def _timed(records):
    """(record, shape, baselines) of the timed records of a check run."""
    return [(r, r["shape"], r["baselines"]) for r in records if "ours_us" in r]


def _errors_line(label, records, reference):
    """"label: case err, case err **FAIL**, ... (reference)." for check records."""
    return "%s: %s (%s)." % (label, ", ".join(
        "%s %.1e%s" % (r["variant"], r["max_rel_err"], "" if r["correct"] else " **FAIL**") for r in records),
        reference)


def decode_attention_table(records):
    """check_attention.py's decode cases: the split-KV kernel's time and K/V
    read rate against torch's SDPA backends on the same keys, with the
    splits sweep beside the default."""
    rows = ["| case | B×H/Hkv | context | split kernel | config | ours µs | ours TB/s (K and V) "
            "| flash µs | cuDNN µs | efficient µs | best torch / ours |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r, s, b in _timed(records):
        cfg = ", ".join("%s = %s" % kv for kv in (s.get("config") or {}).items()) or "default"
        us = lambda name: "%.1f" % b[name] if name in b else "—"  # a backend that refused the case
        # Records from before the tensor-core split kernel name none: the
        # CUDA-core one ran.
        kernel = {"decode-tensor-cores": "tensor cores"}.get(r.get("kernel"), "CUDA cores")
        rows.append("| %s | %d×%d/%d | %d | %s | %s | **%.1f** | %.2f | %s | %s | %s | %s |" % (
            r["variant"], s["batch"], s["heads"], s["kv_heads"], r["context"], kernel, cfg, r["ours_us"],
            r["ours_tb_s"], us("flash"), us("cudnn"), us("efficient"),
            "%.2f×" % r["speedup"] if r.get("speedup") else "—"))
    rows.append("")
    rows.append(_errors_line("Correctness (every case, timed ones included)", records,
                             "max rel err against torch fp32 on each sequence's visible keys; "
                             "bf16 tolerance 2e-2, f16 5e-3"))
    return "\n".join(rows)


def main():
    import argparse
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpu", default="h200",
                    help="the records' device suffix (model_*_<gpu>.json, attention_<gpu>.json); "
                         "h200 fills the main tables and the README, another device its own "
                         "markers (model-decode-<gpu>, ...)")
    ap.add_argument("--readme", action="store_true",
                    help="also write the README's measured sentences from this device's records "
                         "(always done for h200; for another device when its set is the newest)")
    args = ap.parse_args()
    gpu = args.gpu
    main_set = gpu == "h200"
    tag = "" if main_set else "-" + gpu
    records = []
    for p in sorted(RESULTS.glob("model_*_%s.json" % gpu)):
        records += json.loads(p.read_text())
    prefill = [r for r in records if r["bench"] == "model" and r["shape"].get("phase", "prefill") == "prefill"]
    decode = [r for r in records if r["bench"] == "model" and r["shape"].get("phase") == "decode"]
    checks = [r for r in records if r["bench"] == "model_decode_check"]
    forms = [r for r in records if r["bench"] == "model_decode_form"]
    splits = [r for r in records if r["bench"] == "model_decode_splits"]
    attention_all = json.loads((RESULTS / ("attention_%s.json" % gpu)).read_text())
    attention = [r for r in attention_all if r["bench"] == "attention"]
    attention_decode = [r for r in attention_all if r["bench"] == "attention_decode"]
    doc = DOC.read_text()
    doc = replace_section(doc, "model-prefill" + tag, model_table(prefill))
    doc = replace_section(doc, "model-decode" + tag, decode_table(decode))
    doc = replace_section(doc, "model-decode-breakdown" + tag, breakdown_table(decode))
    if any("profile" in r for r in prefill):
        doc = replace_section(doc, "model-prefill-breakdown" + tag, breakdown_table(prefill))
    doc = replace_section(doc, "model-decode-check" + tag, decode_check_table(checks))
    # The programmatic-launch A/B is kept in its own records (pdl_ab_<gpu>.json);
    # the current decode records carry the decode attention's A/B.
    pdl_path = RESULTS / ("pdl_ab_%s.json" % gpu)
    if pdl_path.exists():
        doc = replace_section(doc, "model-decode-ab" + tag,
                              decode_ab_table(json.loads(pdl_path.read_text()), "env"))
    cc_path = RESULTS / ("decode_attention_cc_%s.json" % gpu)
    if cc_path.exists():
        doc = replace_section(doc, "model-decode-attention-calls" + tag,
                              attention_calls_table(decode, json.loads(cc_path.read_text())))
    if any("dir" in (r.get("ab") or {}) for r in decode):
        doc = replace_section(doc, "model-decode-attention-ab" + tag, decode_ab_table(decode, "dir"))
    unfused_path = RESULTS / ("fuse_siblings_ab_%s.json" % gpu)
    if unfused_path.exists():
        doc = replace_section(doc, "model-fuse-siblings" + tag,
                              fuse_siblings_table(json.loads(unfused_path.read_text())))
    if main_set:
        doc = replace_section(doc, "model-decode-forms", decode_forms_table(forms))
        doc = replace_section(doc, "model-decode-splits", decode_splits_table(splits))
    if main_set or args.readme:
        readme = (ROOT / "README.md").read_text()
        (ROOT / "README.md").write_text(replace_section(readme, "readme-models",
                                                        readme_summary(prefill, decode, attention)))
    doc = replace_section(doc, "attention" + tag, attention_table(attention))
    if attention_decode:
        doc = replace_section(doc, "attention-decode" + tag, decode_attention_table(attention_decode))
    DOC.write_text(doc)
    print(decode_table(decode))
    print(decode_check_table(checks))
    print(model_table(prefill))
    print(attention_table(attention))
    return 0


if __name__ == "__main__":
    sys.exit(main())
