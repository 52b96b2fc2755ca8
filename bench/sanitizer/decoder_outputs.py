#!/usr/bin/env python3
"""Every element of every decoder program's output is written by the
program: the calls of `run_decode.py check`'s ragged part (a batch of 8
prompts of different lengths through the prefill and batch-8 decode
programs, then one sequence alone through the batch-8 and the batch-1
decode programs, padded rows included) run with their outputs filled with
NaN first; any NaN left after the run is an element the program did not
write. Also names the instruction that writes each program's output last
(its program.txt line), which is what compute-sanitizer's initcheck sees
or does not see (initcheck_control.py).

  python3 bench/sanitizer/decoder_outputs.py --dir DIR   # exit 1 on a gap
"""
import argparse
import pathlib
import sys

import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench" / "model"))

import run_decode  # noqa: E402
from sparse_opt import decoder, runtime  # noqa: E402


def output_writer(program_dir):
    """The last program.txt line that writes output buffer 0."""
    lines = (pathlib.Path(program_dir) / "program.txt").read_text().splitlines()
    buf = next(line.split()[1] for line in lines if line.startswith("buffer ") and " output 0 " in line)
    ref = "b%s" % buf
    writers = [line for line in lines if (line.startswith("gemm ") and ("y=%s" % ref) in line.split())
               or (line.startswith("launch ") and line.split()[-1] == ref)]
    if not writers:
        return "nothing"
    words = writers[-1].split()
    return " ".join(words[:4]) + (" (a cuBLASLt GEMM)" if words[0] == "gemm" else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", required=True)
    args = ap.parse_args()
    model, _ = run_decode._setup(args)
    dec = decoder.load_decoder(args.dir, model.to(torch.bfloat16))
    backend, gaps, calls = dec.backend, [], []

    def run(name, ids, positions):
        prog = backend.programs[name]
        spec = prog.signature.outputs[0]
        dtype = getattr(torch, runtime.TORCH_DTYPES[spec.dtype])
        out = torch.full(spec.shape, float("nan"), dtype=dtype, device=backend.dev)
        prog(ids, positions, outputs=out)
        unwritten = int(torch.isnan(out.float()).sum())
        calls.append(name)
        if unwritten:
            gaps.append("%s call %d: %d of %d elements unwritten" % (name, len(calls), unwritten, out.numel()))
        return out

    backend.run = run
    g = torch.Generator("cuda").manual_seed(1)
    lengths = run_decode.RAGGED
    ids = torch.randint(0, model.config.vocab, (len(lengths), max(lengths)), device="cuda", generator=g)
    follow = torch.randint(0, model.config.vocab, (4, len(lengths)), device="cuda", generator=g)
    dec.prefill(ids, lengths=lengths)
    for t in range(4):
        dec.decode(follow[t])
    for i, n in enumerate(lengths):
        for program in (8, None):
            dec.prefill(ids[i:i + 1, :n])
            for t in range(4):
                dec.decode(follow[t, i:i + 1], program)
    torch.cuda.synchronize()
    for name in sorted(set(calls)):
        print("%s: output written last by %s" % (name, output_writer(pathlib.Path(args.dir) / name)))
    for gap in gaps:
        print("GAP", gap)
    print("decoder outputs: %d program runs, %s" % (len(calls), "every element written" if not gaps else
                                                     "%d runs left elements unwritten" % len(gaps)))
    return 1 if gaps else 0


if __name__ == "__main__":
    raise SystemExit(main())
