"""The command line the bench/model check scripts share: `compile --out DIR`
on the development machine, `run --dir DIR [--json OUT]` on the GPU
machine."""
import argparse


def compile_or_run(doc, cmd_compile, cmd_run):
    """Parses sys.argv into the compile or run subcommand and calls it."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("compile", help="write one artifact directory per case (needs the compiler)")
    c.add_argument("--out", required=True)
    r = sub.add_parser("run", help="run the cases on the GPU against torch")
    r.add_argument("--dir", required=True)
    r.add_argument("--json", help="write the records here")
    args = ap.parse_args()
    return cmd_compile(args) if args.cmd == "compile" else cmd_run(args)


def write_records(records, json_path, ok):
    """Writes the JSON records (when asked) and gives the exit status: 1 when
    any check failed."""
    if json_path:
        import json
        import pathlib
        pathlib.Path(json_path).write_text(json.dumps(records, indent=1) + "\n")
    return 0 if ok else 1


def provenance(command):
    """Where a record comes from: the GPU, the date, the commit (the
    environment's SPARSEOPT_COMMIT) and the command that produced it."""
    import datetime
    import os

    import torch
    return {"gpu": torch.cuda.get_device_name(0), "date": datetime.date.today().isoformat(),
            "commit": os.environ.get("SPARSEOPT_COMMIT", "unknown"), "command": command}
