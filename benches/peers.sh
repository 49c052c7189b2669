#!/usr/bin/env bash
# kvtop measured the way issue 17's peer table was: the console on a 160x45 pseudo-terminal
# (benches/pty_meter.py), 60 s of steady state, three runs each against `kvtop sim` with 8, 100
# and 1 engines at the default 1 s interval; per configuration the median of the runs' peak RSS
# and CPU seconds per minute. Builds only kvtop itself (the shipped build: PROFILE=dist unless
# set; KVTOP_BIN=PATH measures that binary instead, building nothing), nothing from elsewhere;
# the peers' own figures are in the issue.
#
#   benches/peers.sh [SECONDS] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
runs=${2:-3}
export PROFILE=${PROFILE:-dist}

# The shipped build laid out by benches/symbol-order.txt: built here with the linker's map (the
# same variable for every build of the run, so none links again), and the order checked against
# it: an order made for older code no longer packs what the console runs.
if [ -z "${KVTOP_BIN:-}" ] && [ "$PROFILE" = dist ]; then
  export KVTOP_LINK_MAP=$PWD/target/dist-kvtop.map
  cargo build --profile dist --quiet --bin kvtop
  python3 benches/symbol_order.py --map "$KVTOP_LINK_MAP" --check benches/symbol-order.txt || true
fi

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

printf '%-8s %-18s %-18s %s\n' engines peak_rss_mib cpu_s_per_min runs
for engines in 8 100 1; do
  rss=() cpu=()
  for _ in $(seq "$runs"); do
    line=$(benches/whole_process.sh "$engines" "$seconds" 160x45)
    rss+=("$(sed -n 's/.*peak_rss_mib=\([0-9.]*\).*/\1/p' <<<"$line")")
    cpu+=("$(sed -n 's/.*cpu_s_per_min=\([0-9.]*\).*/\1/p' <<<"$line")")
  done
  printf '%-8s %-18s %-18s %s\n' "$engines" \
    "$(printf '%s\n' "${rss[@]}" | median)" "$(printf '%s\n' "${cpu[@]}" | median)" \
    "rss ${rss[*]} / cpu ${cpu[*]}"
done
