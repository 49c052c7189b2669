#!/usr/bin/env bash
# Key-to-screen latency of the real console while endpoints hang ("answers keys within
# 100 ms", issue 6). Runs kvtop in a private tmux server against a simulated fleet (`kvtop sim`)
# plus endpoints that accept connections and never answer, presses `s` (next sort column)
# N times, and times each press until tmux's screen names the next sort in the footer.
# The figure includes tmux's own delay and the polling of `tmux capture-pane` (a few ms).
#
#   cargo build --release && benches/key_latency.sh [PRESSES] [HANGING]
#
# KVTOP_BIN overrides the binary (default target/release/kvtop). Needs tmux and python3.
set -euo pipefail

presses=${1:-50}
hanging=${2:-8}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${KVTOP_BIN:-$root/target/release/kvtop}
[ -x "$bin" ] || { echo "no kvtop binary at $bin (cargo build --release)" >&2; exit 2; }
command -v tmux >/dev/null && command -v python3 >/dev/null ||
    { echo "needs tmux and python3" >&2; exit 2; }

tmp=$(mktemp -d)
socket="kvtop-latency-$$"
pids=()
cleanup() {
    tmux -L "$socket" kill-server 2>/dev/null || true
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$tmp"
}
trap cleanup EXIT

# Endpoints that accept and hold every connection without a byte of answer.
python3 -u - "$hanging" >"$tmp/hang.out" <<'EOF' &
import selectors, socket, sys
sel, held = selectors.DefaultSelector(), []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    sel.register(s, selectors.EVENT_READ)
    print(s.getsockname()[1])
while True:
    for key, _ in sel.select():
        conn, _ = key.fileobj.accept()
        held.append(conn)
EOF
pids+=($!)
"$bin" sim --engines 4 >"$tmp/sim.out" 2>/dev/null &
pids+=($!)

for _ in $(seq 100); do
    [ "$(wc -l <"$tmp/hang.out")" -ge "$hanging" ] && grep -q http "$tmp/sim.out" && break
    sleep 0.1
done
sleep 0.5
targets=()
while read -r url; do targets+=(--target "$url"); done < <(grep -o 'http://[^ ]*' "$tmp/sim.out" | grep -v dcgm || true)
while read -r port; do targets+=(--target "http://127.0.0.1:$port/metrics"); done <"$tmp/hang.out"

tmux -L "$socket" new-session -d -s kvtop -x 160 -y 50 \
    -e "HOME=$tmp" -e "XDG_CONFIG_HOME=$tmp/config" -e "XDG_STATE_HOME=$tmp/state" \
    -e TERM=xterm-256color "$bin --interval 1s ${targets[*]}; sleep 600"

capture() { tmux -L "$socket" capture-pane -p -t kvtop; }
# The sort in force as the footer names it (`sort status ▼`, `sorted by KV usage ▲`).
sorted() { capture | grep -o 'sort[^▲▼]*[▲▼]' | tail -n1 || true; }
for _ in $(seq 200); do capture | grep -q timeout && break; sleep 0.1; done
capture | grep -q timeout || { echo "the hanging endpoints never showed a timeout" >&2; capture >&2; exit 1; }

samples=()
for _ in $(seq "$presses"); do
    before=$(sorted)
    start=$(date +%s%N)
    tmux -L "$socket" send-keys -t kvtop s
    while :; do
        now=$(sorted)
        [ -n "$now" ] && [ "$now" != "$before" ] && break
        [ $(( $(date +%s%N) - start )) -gt 5000000000 ] && { echo "no answer to a key in 5 s (sort: $before)" >&2; capture >&2; exit 1; }
    done
    samples+=($(( ($(date +%s%N) - start) / 1000 )))
    # Land the next press at a random point of the 1 s data cycle.
    sleep "0.$(( RANDOM % 9 + 1 ))"
done
tmux -L "$socket" send-keys -t kvtop q

printf '%s\n' "${samples[@]}" | sort -n | awk -v n="$presses" -v h="$hanging" '
    { v[NR] = $1 }
    END {
        printf "key to screen, %d presses, %d hanging endpoints + 4 simulated engines:\n", n, h
        printf "  median %.1f ms  p90 %.1f ms  max %.1f ms\n", v[int((NR + 1) / 2)] / 1000, v[int(NR * 0.9 + 0.5)] / 1000, v[NR] / 1000
    }'
