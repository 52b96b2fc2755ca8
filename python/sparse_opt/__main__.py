"""python -m sparse_opt {import, compile, run, export, generate}: the command-line front end.

  import   a torch model (file.py:factory) or an ONNX file -> input IR (.mlir)
  compile  .mlir / .onnx / file.py:factory -> artifact directory (PTX, program)
  run      an artifact directory on the GPU, with .npy inputs or random ones
  export   a torch decoder with a KV cache (file.py:factory) -> decoder directory
           (a prefill and decode programs sharing weights and cache)
  generate token ids from a decoder directory and the model's weights

Compiling needs the compiler library (libsparseopt_compiler.so, i.e. a
machine with libMLIR); importing needs torch or onnx; running needs only the
runtime library, a GPU and torch.
"""
import argparse
import importlib.util
import pathlib
import sys
import time

from .annotations import Annotations, add_module_attributes, parse_sparsity_args
from .importers.emitter import ImportError_


def _shape(text):
    name, sep, dims = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError("expected NAME=DIMxDIM..., got %r" % text)
    try:
        return name, tuple(int(d) for d in dims.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError("bad dimensions in %r" % text)


def _call_factory(spec):
    """'path/model.py:make' -> what make() returns."""
    path, sep, name = spec.rpartition(":")
    if not sep or not path.endswith(".py"):
        raise ImportError_("a torch model is given as <file.py>:<factory>, got %r" % spec)
    mod_spec = importlib.util.spec_from_file_location("sparse_opt_user_model", path)
    if mod_spec is None:
        raise ImportError_("cannot load %s" % path)
    module = importlib.util.module_from_spec(mod_spec)
    sys.path.insert(0, str(pathlib.Path(path).resolve().parent))
    mod_spec.loader.exec_module(module)
    factory = getattr(module, name, None)
    if factory is None:
        raise ImportError_("%s has no %r" % (path, name))
    return factory()


def _load_factory(spec):
    """'path/model.py:make' -> the result of make(): (module, example_inputs)."""
    made = _call_factory(spec)
    if not (isinstance(made, tuple) and len(made) == 2):
        path, _, name = spec.rpartition(":")
        raise ImportError_("%s:%s must return (module, example_inputs)" % (path, name))
    model, example = made
    return model, example if isinstance(example, tuple) else (example,)


def _load_module(spec):
    """'path/model.py:make' -> the module make() returns (alone or first of a pair)."""
    made = _call_factory(spec)
    return made[0] if isinstance(made, tuple) else made


def _annotations(args):
    return Annotations(sparsity=parse_sparsity_args(args.sparsity), ladder_layers=args.ladder_layers,
                       twell_tile=args.twell_tile, twell_compression=args.twell_compression).validate()


def import_source(source, args):
    """Imports `source` (.mlir is read as is) and applies the annotations."""
    ann = _annotations(args)
    src = str(source)
    weights = getattr(args, "weights", None)
    if src.endswith(".mlir"):
        if ann.sparsity:
            raise ImportError_("--sparsity applies to imported models; annotate .mlir weights with #sgpu.nm directly")
        if weights is not None:
            raise ImportError_("--weights applies to imported models; a .mlir file's weights are what it declares")
        text = pathlib.Path(src).read_text()
    elif src.endswith(".onnx"):
        from .importers.onnx_importer import import_onnx
        text = import_onnx(src, name=args.name, sparsity=ann.sparsity or None,
                           input_shapes=dict(args.input_shape or []) or None, dtype=args.dtype,
                           weights=weights or "params")
    else:
        from .importers.fx import import_fx
        model, example = _load_factory(src)
        text = import_fx(model, example, name=args.name, sparsity=ann.sparsity or None, dtype=args.dtype,
                         weights=weights or "params")
    return add_module_attributes(text, ann.module_attributes())


def cmd_import(args):
    text = import_source(args.source, args)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        pathlib.Path(args.output).write_text(text)
        print("wrote %s" % args.output)
    return 0


def cmd_compile(args):
    from .compiler import Compiler
    text = import_source(args.source, args)
    out = pathlib.Path(args.output)
    with Compiler() as c:
        module = c.parse(text, filename=str(args.source))
        twell = args.twell_profile if args.twell_profile else bool(args.twell)
        artifact = module.compile(out, chip=args.chip, features=args.features, twell=twell,
                                  twell_producer=args.twell_producer,
                                  twell_consumer=args.twell_consumer,
                                  twell_passes=args.twell_passes,
                                  twell_pack=args.twell_pack, lift=args.lift,
                                  attention_library=args.attention_library,
                                  sparse_policy=args.sparse_policy)
        for d in c.last_diagnostics if twell else ():
            if "TwELL" in d.message or "producer" in d.message or "consumer" in d.message:
                print("  " + str(d))
    print("compiled %s for %s into %s" % (args.source, args.chip, out))
    counts = artifact.sparse_mma_counts()
    for kernel, count in counts.items():
        if count:
            print("  kernel %s: %d sparse MMA instructions" % (kernel, count))
    others = [k for k, count in counts.items() if not count]
    if others:
        print("  %d other kernel%s: %s" % (len(others), "" if len(others) == 1 else "s",
                                          ", ".join(others)))
    return 0


def _prune_checked_params(prog, tensors):
    """Random weights almost never keep a declared sparsity, which the bind
    checks: keep the first n of every m along each row of a checked param
    (`check ... param <j> pattern <n>:<m> ...`)."""
    for line in prog.checks:
        words = line.split()
        j = int(words[words.index("param") + 1])
        n, m = (int(v) for v in words[words.index("pattern") + 1].split(":"))
        pos = prog.signature.params[j]
        t = tensors[pos]
        rows, cols = t.shape[0], t.numel() // t.shape[0]
        flat = t.view(rows, cols)
        for start in range(n, m):
            flat[:, start::m] = 0


def cmd_run(args):
    import numpy as np
    from . import runtime
    try:
        import torch
    except ImportError:
        print("sparse_opt run: error: running needs torch (for device tensors)", file=sys.stderr)
        return 1
    prog = runtime.load(args.artifacts, device=args.device)
    specs = prog.signature.inputs
    if args.input and len(args.input) != len(specs):
        print("sparse_opt run: error: the program takes %d inputs, %d given" % (len(specs), len(args.input)),
              file=sys.stderr)
        return 1
    gen = torch.Generator().manual_seed(args.seed)
    tensors = []
    for i, s in enumerate(specs):
        tdt = getattr(torch, runtime.TORCH_DTYPES[s.dtype])
        if args.input:
            t = torch.from_numpy(np.load(args.input[i]))
            if tuple(t.shape) != tuple(s.shape):
                print("sparse_opt run: error: input %d has shape %s, the program takes %s"
                      % (i, list(t.shape), list(s.shape)), file=sys.stderr)
                return 1
            t = t.to(tdt)
        elif tdt.is_floating_point:
            t = torch.randn(*s.shape, generator=gen).to(tdt)
        else:
            t = torch.randint(0, 2, tuple(s.shape), generator=gen).to(tdt)
        tensors.append(t.cuda(args.device))
    if not args.input:
        _prune_checked_params(prog, tensors)
    outs = prog(*tensors)
    outs = outs if isinstance(outs, tuple) else (outs,)
    torch.cuda.synchronize()
    for i, o in enumerate(outs):
        f = o.float()
        print("output %d: %s %s, mean %.6g, max|x| %.6g" % (i, list(o.shape), prog.signature.outputs[i].dtype,
                                                        f.mean().item(), f.abs().max().item()))
        if args.save_output:
            np.save("%s%d.npy" % (args.save_output, i), f.cpu().numpy())
    for name, value in prog.stats().items():
        total = prog.stat_totals[name]
        print("stat %s: %d%s" % (name, value, " of %d (%.4g)" % (total, value / total) if total else ""))
    if args.twell_profile_out:
        values = prog.write_twell_profile(args.twell_profile_out)
        print("wrote TwELL profile %s: densities %s" % (args.twell_profile_out, values))
    if args.iters:
        for _ in range(args.warmup):
            prog(*tensors, outputs=list(outs))
        torch.cuda.synchronize()
        times = []
        for _ in range(args.iters):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            prog(*tensors, outputs=list(outs))
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e) * 1000)
        times.sort()
        print("median %.1f us per run (%d runs after %d warm-up)" % (times[len(times) // 2], args.iters, args.warmup))
    return 0


def _import_options(p):
    g = p.add_argument_group("import options (torch and ONNX sources)")
    g.add_argument("--sparsity", action="append", metavar="WEIGHT=N:M",
                   help="mark a weight (qualified parameter or initializer name) as N:M sparse, e.g. "
                        "fc1.weight=2:4; checked, the first violating row and group is reported (repeatable)")
    g.add_argument("--ladder-layers", type=int, metavar="K",
                   help="the model is ladder-trained: its last K layers may be rewritten (changes semantics)")
    g.add_argument("--twell-tile", type=int, metavar="T", help="TwELL tile width (power of two)")
    g.add_argument("--twell-compression", type=int, metavar="C", help="TwELL compression factor (2, 4 or 8)")
    g.add_argument("--input-shape", action="append", type=_shape, metavar="NAME=DxD",
                   help="static shape of an ONNX graph input with symbolic dimensions (repeatable)")
    g.add_argument("--dtype", choices=["f16", "bf16", "f32"], help="cast float weights and inputs")
    g.add_argument("--weights", choices=["params", "constants"],
                   help="params (default): every parameter, buffer or initializer becomes an argument of the "
                        "function after the model's inputs, named by its qualified name (sgpu.param), which "
                        "the program binds once at run time (Program.bind_module); the IR holds no weight data (a "
                        "torch model may live on the meta device) and a sparse weight's pattern is checked when "
                        "it is bound. constants: the weights' data is stored in the IR (and the artifact) and "
                        "sparse weights are checked now")
    g.add_argument("--name", default="forward", help="name of the generated function (default: forward)")


def _ints(text, sep=","):
    """'1,2,3' (or with sep='x', '8x64') -> [1, 2, 3]."""
    try:
        return [int(x) for x in text.split(sep) if x.strip()]
    except ValueError:
        raise ValueError("expected integers separated by '%s', got %r" % (sep, text))


def _pair(text, form):
    """The two integers of an option written AxB; `form` says how."""
    pair = _ints(text, "x")
    if len(pair) != 2:
        raise ImportError_("%s, got %r" % (form, text))
    return pair


def cmd_export(args):
    from . import decoder
    model = _load_module(args.model)
    prefill = _pair(args.prefill, "--prefill is BATCHxTOKENS")
    sparsity = parse_sparsity_args(args.sparsity) or None
    cache = None
    if args.add_cache:
        bt = _pair(args.add_cache, "--add-cache is MAX_BATCHxCAPACITY")
        cache = {"max_batch": bt[0], "capacity": bt[1]}
    t0 = time.perf_counter()
    m = decoder.export(model, args.output, prefill=prefill, decode_batches=_ints(args.decode_batches),
                       dtype=args.dtype, sparsity=sparsity, chip=args.chip, compile=not args.no_compile,
                       cache=cache)
    print("exported %s in %.1f s: %s; cache %d sequences x %d positions" % (
        args.output, time.perf_counter() - t0, ", ".join(sorted(m["programs"])), m["max_batch"], m["capacity"]))
    return 0


def cmd_generate(args):
    import torch
    from . import decoder
    model = _load_module(args.model)
    if args.backend == "cuda":
        model = model.to("cuda:%d" % args.device)
    prompts = [_ints(p) for p in args.prompt]
    if not prompts or any(not p for p in prompts):
        raise ImportError_("give each prompt as comma-separated token ids (--prompt 1,2,3)")
    width = max(len(p) for p in prompts)
    ids = torch.zeros(len(prompts), width, dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, :len(p)] = torch.tensor(p)
    dec = decoder.load_decoder(args.directory, model, backend=args.backend, device=args.device,
                               cuda_graphs=args.cuda_graphs)
    g = torch.Generator(device="cuda:%d" % args.device if args.backend == "cuda" else "cpu")
    g.manual_seed(args.seed)
    t0 = time.perf_counter()
    out = dec.generate(ids, args.max_new_tokens, lengths=[len(p) for p in prompts],
                       temperature=args.temperature, top_k=args.top_k, top_p=args.top_p,
                       eos_token_id=args.eos_token_id, generator=g)
    seconds = time.perf_counter() - t0
    for row in out.tolist():
        print(",".join(str(t) for t in row))
    print("%d x %d tokens in %.3f s" % (out.shape[0], out.shape[1], seconds), file=sys.stderr)
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m sparse_opt", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("import", help="torch model or ONNX file -> input IR (.mlir)",
                       description="Import a model into SparseOpt's input IR. SOURCE is an .onnx file or "
                                   "<file.py>:<factory> where factory() returns (nn.Module, example_inputs).")
    p.add_argument("source")
    p.add_argument("-o", "--output", default="-", help="output .mlir (default: stdout)")
    _import_options(p)
    p.set_defaults(func=cmd_import)
    p = sub.add_parser("compile", help=".mlir / .onnx / torch model -> artifacts (PTX + runtime program)",
                       description="Compile to an artifact directory: kernels.ptx, program.txt, constants, "
                                   "signature.json, summary.txt.")
    p.add_argument("source")
    p.add_argument("-o", "--output", required=True, help="artifact directory")
    p.add_argument("--chip", default="sm_90a", help="target GPU (default sm_90a)")
    p.add_argument("--features", default="+ptx85", help="PTX ISA features (default +ptx85)")
    tw = p.add_mutually_exclusive_group()
    tw.add_argument("--twell", action="store_true",
                    help="rewrite ReLU FFNs into TwELL packing + sparse consumer (a calibration build: "
                         "its runs report each FFN's density)")
    tw.add_argument("--twell-profile", metavar="FILE.json",
                    help="TwELL only where the calibrated density (a profile from 'run "
                         "--twell-profile-out') predicts a speedup; dense elsewhere")
    p.add_argument("--twell-producer", choices=["auto", "library", "fused"], default="auto",
                   help="the GEMM before each TwELL pack: library (cuBLASLt, then the pack kernel), "
                        "fused (sm_90a: a generated wgmma GEMM whose epilogue packs) or auto "
                        "(library: the fused producer measured a tie with it; default)")
    p.add_argument("--twell-consumer", choices=["auto", "cuda-cores", "tensor-cores"],
                   default="auto",
                   help="what runs each TwELL FFN: cuda-cores (one block per row), tensor-cores "
                        "(sm_90a: wgmma over blocks of 64 rows and the union of their active "
                        "neurons) or auto (the choice recorded on the pack, else cuda-cores; "
                        "default)")
    p.add_argument("--twell-passes", type=int, default=0, metavar="P",
                   help="passes of the CUDA-core TwELL consumer over the neurons, 1..64 (each "
                        "reads the weight rows of a range of the tiles, so they can stay in L2); "
                        "0: automatic (one, or enough that each reads at most 40 MiB when the "
                        "rows are at most 4 KiB and the weights exceed 64 MiB; default)")
    p.add_argument("--twell-pack", choices=["auto", "kernel", "consumer"], default="auto",
                   help="where each TwELL pack after the library GEMM runs: consumer (fused into "
                        "its one CUDA-core consumer, which reads H), kernel (the pack kernel) or "
                        "auto (consumer wherever it applies: measured 2-3%% faster; default)")
    p.add_argument("--lift", choices=["auto", "fused", "split", "separate"], default="auto",
                   help="how a 6:8 layer's activations reach the sm_90a kernel: fused (inside its "
                        "operand loads), split (a kernel copies only the shared windows, the GEMM "
                        "reads X for the rest), separate (a gather kernel writes the whole lifted "
                        "X) or auto (fused up to 16 tokens, split above; default)")
    p.add_argument("--sparse-policy", choices=["auto", "sparse"], default="auto",
                   help="auto keeps a sparse-annotated layer dense (the library GEMM) where the "
                        "sparse kernel measured slower on sm_90a, with a remark saying why "
                        "(default); sparse always runs the sparse kernel")
    p.add_argument("--no-attention-library", dest="attention_library", action="store_false",
                   help="keep every attention on the generated kernels; by default a prefill "
                        "attention runs as cuDNN's fused attention where it applies (the runtime "
                        "then opens cuDNN 9)")
    _import_options(p)
    p.set_defaults(func=cmd_compile)
    p = sub.add_parser("run", help="run an artifact directory on the GPU",
                       description="Run a compiled program on the GPU through the runtime and print each "
                                   "output's shape and statistics (and timings with --iters).")
    p.add_argument("artifacts")
    p.add_argument("--input", action="append", metavar="FILE.npy", help="input arrays in order (default: random)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--iters", type=int, default=0, help="timed runs (median reported)")
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--device", type=int, default=0)
    p.add_argument("--save-output", metavar="PREFIX", help="save outputs as PREFIX<i>.npy")
    p.add_argument("--twell-profile-out", metavar="FILE.json",
                   help="after the run, write the TwELL densities it measured (a calibration profile "
                        "for 'compile --twell-profile')")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("export", help="torch decoder with a KV cache -> decoder directory",
                       description="Export a decoder (docs/models.md): MODEL is <file.py>:<factory> returning "
                                   "the nn.Module (or (module, example_inputs)), whose forward(ids, positions) "
                                   "keeps a static KV cache with sparse_opt.markers (or, with --add-cache, "
                                   "whose forward(ids) is a plain causal decoder). Writes one program per "
                                   "shape and decoder.json.")
    p.add_argument("model")
    p.add_argument("-o", "--output", required=True, help="decoder directory")
    p.add_argument("--prefill", default="1x128", help="prefill program shape BATCHxTOKENS (default 1x128)")
    p.add_argument("--decode-batches", default="1", help="decode program batches, e.g. 1,8,64 (default 1)")
    p.add_argument("--dtype", choices=["f16", "bf16"], help="cast float weights and activations")
    p.add_argument("--sparsity", action="append", metavar="PARAM=N:M",
                   help="structured sparsity of a weight (repeatable), e.g. layers.0.mlp.up.weight=2:4")
    p.add_argument("--chip", default="sm_90a", help="target GPU (default sm_90a)")
    p.add_argument("--no-compile", action="store_true",
                   help="write the imported IR only (enough for --backend reference)")
    p.add_argument("--add-cache", metavar="MAX_BATCHxCAPACITY",
                   help="add a KV cache to a cache-less causal forward(ids) model (sparse_opt.kv_cache: "
                        "causal F.scaled_dot_product_attention, positions from torch.arange), e.g. 8x4096")
    p.set_defaults(func=cmd_export)
    p = sub.add_parser("generate", help="generate token ids with an exported decoder",
                       description="Load a decoder directory with MODEL's weights (bound by name) and "
                                   "generate: one line of comma-separated new token ids per prompt.")
    p.add_argument("directory")
    p.add_argument("--model", required=True, help="<file.py>:<factory> giving the module with the weights")
    p.add_argument("--prompt", action="append", required=True, metavar="IDS",
                   help="a prompt's token ids, comma-separated (repeat for a batch)")
    p.add_argument("--max-new-tokens", type=int, default=16)
    p.add_argument("--temperature", type=float, default=0.0, help="0: greedy (default)")
    p.add_argument("--top-k", type=int)
    p.add_argument("--top-p", type=float)
    p.add_argument("--eos-token-id", type=int)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--backend", choices=["cuda", "reference"], default="cuda",
                   help="cuda: the compiled programs on the GPU (default); reference: the CPU reference")
    p.add_argument("--device", type=int, default=0)
    p.add_argument("--cuda-graphs", action="store_true",
                   help="replay each decode step from a CUDA graph captured at its first use (cuda backend)")
    p.set_defaults(func=cmd_generate)
    args = ap.parse_args(argv)
    try:
        return args.func(args)
    except ImportError_ as e:
        print("sparse_opt %s: error: %s" % (args.command, e), file=sys.stderr)
        return 1
    except Exception as e:  # compiler / runtime errors carry their diagnostics
        name = type(e).__name__
        if name in ("CompileError", "SparseOptRuntimeError") or isinstance(e, (OSError, RuntimeError, ValueError)):
            print("sparse_opt %s: error: %s" % (args.command, e), file=sys.stderr)
            return 1
        raise


if __name__ == "__main__":
    sys.exit(main())
