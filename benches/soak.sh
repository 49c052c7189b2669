#!/usr/bin/env bash
# Soak: the console scraping a churning simulated fleet for a long time; does its memory or its
# count of open files grow?
#
#   benches/soak.sh [MINUTES] [ENGINES] [TIME_SCALE]      # default: 12 1000 6
#   benches/soak.sh 60 1000 1                              # the full hour, churn in real time
#
# `kvtop sim` runs in its own process with churn written as a schedule of its scenarios (in
# simulated seconds, so TIME_SCALE compresses the churn: at 6, twelve wall minutes hold 72
# simulated minutes of it):
# - 5 % of the engines crash-loop (`oom-crashloop`: the process dies, its port refuses for a few
#   seconds, it restarts with every counter from zero, again and again);
# - another 10 % disappear and come back: each is `down` (its listener closes, connections are
#   refused) for 60 s of every 180 s, staggered, then `healthy` again (a fresh process);
# - the rest are healthy.
# The console scrapes every engine at 1 s in a tmux pane of 200x60. Every 10 s the script records
# its RSS (VmRSS), open descriptors (/proc/PID/fd) and header counts into a CSV, and at the end
# compares the RSS after the warm-up (the first 6 minutes: the 5-minute rate windows fill) with
# the RSS at the end (goal: drift ≤ 10 %), and the descriptor counts over the same span (goal:
# no growth). Prints the CSV's path (kept) and a summary.
#
# HISTORY_COMPRESS=C (1 to 4; default 1) builds the console's history C times faster: the scrape
# interval is 1/C s and every history span is divided by C (full resolution 600/C s, retention
# 3600/C s, buckets of 10/C s), so each history tier holds exactly as many points as it holds
# after an hour at the defaults, after 60/C minutes. The rate windows' snapshot rings are not
# scaled (they keep 5.5 minutes, at C times the density in their 20-second dense part), so a
# compressed run holds at least as much as an uncompressed one: an upper bound. C times the
# scrapes also costs C times the CPU, so use it for small fleets.
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-12}
engines=${2:-1000}
scale=${3:-6}
warmup_s=360
sample_s=10
total_s=$((minutes * 60))
if [ "$total_s" -le "$warmup_s" ]; then
  echo "soak: MINUTES must exceed the 6-minute warm-up" >&2
  exit 2
fi

ulimit -n "$(ulimit -Hn)"
cargo build --release --quiet --bin kvtop
# A copy, so rebuilding during a long soak does not change the binary under it.
work=$(mktemp -d)
cp target/release/kvtop "$work/kvtop"
bin=$work/kvtop
csv=${SOAK_CSV:-$PWD/target/soak-$(date +%Y%m%d-%H%M%S).csv}
sock="kvtop-soak-$$"
cleanup() {
  tmux -L "$sock" kill-server 2>/dev/null || true
  [ -n "${sim_pid:-}" ] && kill "$sim_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
# shellcheck source=benches/fleet_lib.sh
. benches/fleet_lib.sh

# The churn schedule, in simulated seconds, over the whole run and a minute beyond it.
sim_span=$(awk -v t="$total_s" -v s="$scale" 'BEGIN { printf "%d", (t + 60) * s }')
churn=()
crashloop=$((engines / 20))
leaving=$((engines / 10))
for ((i = 0; i < crashloop; i++)); do
  churn+=(--scenario "oom-crashloop@$i")
done
for ((k = 0; k < leaving; k++)); do
  i=$((crashloop + k))
  offset=$((k * 180 / (leaving > 0 ? leaving : 1)))
  for ((t = offset + 30; t < sim_span; t += 180)); do
    churn+=(--scenario "down@$i+${t}s" --scenario "healthy@$i+$((t + 60))s")
  done
done
[ "${#churn[@]}" -gt 0 ] || churn=(--scenario healthy@0)

start_sim "$engines" --engines "$engines" --time-scale "$scale" "${churn[@]}"
compress=${HISTORY_COMPRESS:-1}
case $compress in 1 | 2 | 4) ;; *) echo "soak: HISTORY_COMPRESS must be 1, 2 or 4" >&2; exit 2 ;; esac
engine_urls | write_console_config "$((1000 / compress))ms" "[history]
full_resolution = \"$((600 / compress))s\"
retention = \"$((3600 / compress))s\"
coarse_step = \"$((10000 / compress))ms\""

export HOME=$work XDG_STATE_HOME=$work/state XDG_CONFIG_HOME=$work/config
tmux -L "$sock" new-session -d -s soak -x 200 -y 60 "exec $bin --config $work/kvtop.toml"
sleep 1
pid=$(tmux -L "$sock" list-panes -t soak -F '#{pane_pid}')

echo "elapsed_s,rss_kib,hwm_kib,fds,up,stale,down,cpu_ticks,load1" >"$csv"
echo "soak: $engines engines, $minutes min, history compressed ${compress}x, time scale $scale ($crashloop crash-looping, $leaving leaving and returning); samples in $csv"
start=$SECONDS
while [ $((SECONDS - start)) -lt "$total_s" ]; do
  sleep "$sample_s"
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "soak: the console exited" >&2
    exit 1
  fi
  header=$(tmux -L "$sock" capture-pane -p -t soak | head -1)
  count() { grep -o "[0-9]* $1" <<<"$header" | grep -o '^[0-9]*' || echo -1; }
  echo "$((SECONDS - start)),$(status_kib "$pid" VmRSS),$(status_kib "$pid" VmHWM),$(fd_count "$pid"),$(count up),$(count stale),$(count down),$(cpu_ticks "$pid"),$(load1)" >>"$csv"
done

awk -F, -v warm="$warmup_s" -v tck="$(getconf CLK_TCK)" 'NR == 1 { next }
  {
    t = $1; rss = $2; fds = $4
    if (t >= warm && !based) { based = 1; base_t = t; base_rss = rss; base_fds = fds; base_cpu = $8; fmin = fds; fmax = fds; rmax = rss }
    if (based) { if (fds < fmin) fmin = fds; if (fds > fmax) fmax = fds; if (rss > rmax) rmax = rss }
    if (t >= next_print) { printf "  t=%4ds rss=%6.1f MiB fds=%4d up=%s stale=%s down=%s\n", t, rss / 1024, fds, $5, $6, $7; next_print = t + 60 }
    last_t = t; last_rss = rss; last_fds = fds; last_cpu = $8; hwm = $3
  }
  END {
    printf "after warm-up (t=%ds): rss %.1f MiB, fds %d\n", base_t, base_rss / 1024, base_fds
    printf "at the end    (t=%ds): rss %.1f MiB, fds %d\n", last_t, last_rss / 1024, last_fds
    printf "rss drift %+.1f %% (max after warm-up %.1f MiB, peak %.1f MiB); fds min %d max %d; cpu %.3f cores\n",
      (last_rss - base_rss) * 100 / base_rss, rmax / 1024, hwm / 1024, fmin, fmax, (last_cpu - base_cpu) / tck / (last_t - base_t)
  }' "$csv"
