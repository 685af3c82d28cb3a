#!/usr/bin/env bash
# One command for the seed experiment across arms (docs/benchmarks.md): for each arm, bench/seed_load.sh starts
# `steno serve` in that arm's configuration, runs the closed-loop sweep and stops it; then `steno bench report` writes
# one report (Markdown + SVG plots) comparing the arms, the first arm as the baseline.
#
#   bench/sweep.sh --out-dir DIR --arm 'NAME: STENO SERVE ARGS' [--arm ...] [seed_load.sh options...]
#
#   bench/sweep.sh --out-dir bench/results/cpu-sweep \
#     --arm 'single: --lanes 1 --max-batch 1' --arm 'lanes+batch: --lanes 2 --max-batch 16 --max-queue-delay-ms 50' \
#     --concurrency "1 4 8" --duration-s 30
#
# Every other option goes to seed_load.sh unchanged (--build-dir, --concurrency, --clip-seconds, --duration-s,
# --warmup-s, --timeout-s, --sla-mean-ms, --sla-p99-ms, --steno, --serve-load, --note, --accept-differing-text, the one
# without a value); --steno also runs the report (`CMD bench report`). Writes DIR/NAME.json per arm (NAME made
# file-safe) and DIR/report.md with its plots.
# Exit status: the first failing arm's seed_load.sh status (the other arms still run), else the report's.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
out_dir=
arms=()
pass=()
build=build
steno=
sla=()
while [ $# -gt 0 ]; do
  case $1 in
    --out-dir) out_dir=$2; shift 2 ;;
    --arm) arms+=("$2"); shift 2 ;;
    --build-dir) build=$2; pass+=("$1" "$2"); shift 2 ;;
    --steno) steno=$2; pass+=("$1" "$2"); shift 2 ;;
    --sla-mean-ms|--sla-p99-ms) sla+=("$1" "$2"); pass+=("$1" "$2"); shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    --accept-differing-text) pass+=("$1"); shift ;;
    --*) [ $# -ge 2 ] || { echo "sweep.sh: $1 needs a value" >&2; exit 2; }; pass+=("$1" "$2"); shift 2 ;;
    *) echo "sweep.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$out_dir" ] || { echo "sweep.sh: --out-dir is required" >&2; exit 2; }
[ ${#arms[@]} -gt 0 ] || { echo "sweep.sh: give at least one --arm 'NAME: ARGS'" >&2; exit 2; }
cd "$src"
mkdir -p "$out_dir"
read -r -a steno_cmd <<< "${steno:-$build/apps/steno/steno}"

status=0
specs=()
for arm in "${arms[@]}"; do
  [[ $arm == *:* ]] || { echo "sweep.sh: --arm '$arm' is not 'NAME: ARGS'" >&2; exit 2; }
  name=$(sed 's/^ *//; s/ *$//' <<< "${arm%%:*}")
  read -r -a serve_args <<< "${arm#*:}"
  file="$out_dir/$(tr -c 'A-Za-z0-9_.\n-' '_' <<< "$name").json"
  echo "sweep.sh: arm '$name': steno serve ${serve_args[*]}"
  rc=0
  bench/seed_load.sh "${pass[@]}" --out "$file" -- "${serve_args[@]}" || rc=$?
  if [ $rc -ne 0 ]; then
    echo "sweep.sh: arm '$name' failed (exit $rc); the report shows what it recorded" >&2
    [ $status -ne 0 ] || status=$rc
  fi
  [ -f "$file" ] && specs+=("$name=$file")
done
[ ${#specs[@]} -gt 0 ] || { echo "sweep.sh: no arm wrote a result" >&2; exit 1; }
"${steno_cmd[@]}" bench report --out "$out_dir" "${sla[@]}" "${specs[@]}"
exit $status
