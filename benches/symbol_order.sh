#!/usr/bin/env bash
# Regenerates benches/symbol-order.txt, the order in which the shipped build (`[profile.dist]`,
# see build.rs) lays out its functions: first the ones a console runs, packed together, so the
# kernel's 64 KB fault-around maps little code the console never runs.
#
#   benches/symbol_order.sh [SECONDS]        # default 30
#   KVTOP_BIN=target/dist/kvtop LINK_MAP=FILE benches/symbol_order.sh   # a build made with
#                                               # KVTOP_LINK_MAP=FILE: profiled, not rebuilt
#
# Builds the dist binary with the linker's map (KVTOP_LINK_MAP), then runs it under callgrind
# (valgrind), which sees every instruction executed, start-up included: the console on a 160x45
# pseudo-terminal against `kvtop sim` with 1, 8 and 100 engines, and `kvtop demo`, SECONDS each.
# benches/symbol_order.py maps the instructions to functions through the map. Run it again when
# dependencies or the console's code paths change much: names the build no longer has are
# skipped, so a stale file costs memory, never a failed build. Needs valgrind and python3;
# takes about 10 minutes on top of the dist build.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
work=$(mktemp -d)
cleanup() {
  [ -n "${sim_pid:-}" ] && kill "$sim_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

if [ -n "${KVTOP_BIN:-}" ] && [ -n "${LINK_MAP:-}" ]; then
  # A dist binary built earlier with KVTOP_LINK_MAP=$LINK_MAP: profiled as it is.
  cp "$KVTOP_BIN" "$work/kvtop"
  cp "$LINK_MAP" "$work/kvtop.map"
else
  KVTOP_LINK_MAP=$work/kvtop.map cargo build --profile dist --quiet --bin kvtop
  cp target/dist/kvtop "$work/kvtop"
fi
[ -s "$work/kvtop.map" ] || { echo "no link map: is the linker rust-lld?" >&2; exit 1; }
cp "$work/kvtop" "$work/kvtop-sim"
# shellcheck source=benches/fleet_lib.sh
. benches/fleet_lib.sh
export HOME=$work XDG_STATE_HOME=$work/state XDG_CONFIG_HOME=$work/config

# One console under callgrind on the pty for SECONDS; its profile goes to $1.
profile() {
  local out=$1
  shift
  rm -f "$work/pid"
  python3 benches/pty_meter.py --size 160x45 --stats "$work/tty.stats" --pid-file "$work/pid" -- \
    valgrind --tool=callgrind --dump-instr=yes --compress-pos=no --compress-strings=no \
    --callgrind-out-file="$out" "$work/kvtop" "$@" 2>>"$work/valgrind.log" &
  local meter=$!
  sleep "$seconds"
  local pid
  pid=$(cat "$work/pid")
  kill "$meter"
  # Callgrind writes the profile once the console has exited, which is slow under valgrind.
  for _ in $(seq 600); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  wait "$meter" || true
  [ -s "$out" ] || { echo "callgrind wrote no profile to $out" >&2; exit 1; }
}

profiles=()
for engines in 1 8 100; do
  run_sim "$engines" --engines "$engines"
  mapfile -t urls < <(grep -o 'http://127.0.0.1:[0-9]*/metrics' "$work/sim.out")
  targets=()
  for url in "${urls[@]}"; do targets+=(--target "$url"); done
  profile "$work/console-$engines.callgrind" "${targets[@]}"
  profiles+=("$work/console-$engines.callgrind")
  kill "$sim_pid"
  wait "$sim_pid" 2>/dev/null || true
  sim_pid=
done
profile "$work/demo.callgrind" demo

python3 benches/symbol_order.py --map "$work/kvtop.map" --binary "$work/kvtop" \
  --after "$work/demo.callgrind" "${profiles[@]}" >benches/symbol-order.txt
echo "benches/symbol-order.txt: $(wc -l <benches/symbol-order.txt) functions"
