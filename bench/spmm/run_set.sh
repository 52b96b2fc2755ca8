# Sourced by the spmm device scripts after bench/device_env.sh:
#   run SET DIR JSON [run_spmm.py options...]
# times the artifacts .carry/DIR of case set SET with run_spmm.py into
# $out/JSON, recording the command with repository-relative paths, and
# prints the last $TAILN (default 14) lines of its log.
run() {
  local set="$1" dir="$2" json="$3"; shift 3
  timeout 280 python3 bench/spmm/run_spmm.py --set "$set" --artifacts "$carry/$dir" --commit "$commit" \
    --command "python3 bench/spmm/run_spmm.py --set $set --artifacts .carry/$dir $*" "$@" \
    --out "$out/$json" 2>&1 | cut -c1-220 | tail -"${TAILN:-14}"
}
