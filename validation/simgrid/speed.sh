#!/bin/sh
# Wall time of one allreduce point in allreduce-sim and in SimGrid's SMPI, side by side:
# ring, P = 64, 16 MiB of f32 per rank, the data filled before and every element of every
# rank checked after.
#
#   SimGrid: speed.c, built with smpicc, runs MPI_Allreduce(MPI_IN_PLACE, ...) with
#            --cfg=smpi/allreduce:lr (SMPI's logical ring) on a <cluster> of 64 hosts, each
#            with a private full-duplex link of 100 Gb/s and 0.5 us (a route crosses two:
#            1 us), no backbone: every pair of ranks 1 us and 100 Gb/s apart. The network
#            settings are run.py's (CM02, no software overheads, eager sends, no computation).
#   ours:    allreduce-sim run speed/ring_p64_16MiB.yaml, the same machine
#            (fully_connected, alpha 1 us, 100 Gb/s, one port each way), data.mode full.
#
# Each side runs REPS times (default 5), alternately; the table gives every side's median
# wall time (and the user and system CPU time and peak RSS of that run), then the ratio of
# the medians, and of the CPU times (user + system) of those runs: steadier than wall time on a
# machine other work shares. Both simulated times are printed too: they agree to within SimGrid's barrier
# skew (a rank leaves MPI_Barrier up to a microsecond after another).
#
# Usage: validation/simgrid/speed.sh [REPS]      (needs smpicc and smpirun: ./install.sh)
# Writes build/speed/ (the program, platform and hostfile); prints a Markdown table, which
# results/speed.md keeps.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
reps=${1:-5}
build="$here/build/speed"
mkdir -p "$build"

if [ -z "${ALLREDUCE_SIM:-}" ]; then
    (cd "$root" && cargo build --release --quiet)
fi
bin="${ALLREDUCE_SIM:-${CARGO_TARGET_DIR:-$root/target}/release/allreduce-sim}"
scenario="$here/speed/ring_p64_16MiB.yaml"
ranks=64
count=4194304 # 16 MiB of f32

smpicc -O2 -o "$build/speed" "$here/speed.c" 2>"$build/smpicc.log" || { cat "$build/smpicc.log"; exit 1; }
cat > "$build/platform.xml" <<XML
<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <cluster id="c" prefix="h" suffix="" radical="0-$((ranks - 1))" speed="1Gf" bw="12.5GBps" lat="0.5us"
           sharing_policy="SPLITDUPLEX"/>
</platform>
XML
i=0
: > "$build/hosts.txt"
while [ $i -lt $ranks ]; do echo "h$i" >> "$build/hosts.txt"; i=$((i + 1)); done

# run.py's settings (see README.md, "SimGrid settings, and why").
cfg="--cfg=network/model:CM02 --cfg=network/latency-factor:1 --cfg=network/bandwidth-factor:1
--cfg=network/weight-S:0 --cfg=network/crosstraffic:0 --cfg=network/TCP-gamma:1e30
--cfg=smpi/simulate-computation:no --cfg=smpi/host-speed:1000Gf
--cfg=smpi/send-is-detached-thresh:2147483647 --cfg=smpi/async-small-thresh:2147483647
--cfg=smpi/os:0:0:0:0:0 --cfg=smpi/ois:0:0:0:0:0 --cfg=smpi/or:0:0:0:0:0 --cfg=smpi/wtime:0
--cfg=smpi/allreduce:lr --log=root.thres:warning"

# One timed run: appends "wall user sys rss_kb" to $1, the command's stdout to $1.out.
timed() {
    out=$1
    shift
    /usr/bin/time -f "%e %U %S %M" -o "$out.t" "$@" > "$out.out"
    cat "$out.t" >> "$out"
}

: > "$build/sg.times"
: > "$build/ours.times"
r=0
while [ $r -lt "$reps" ]; do
    # shellcheck disable=SC2086
    timed "$build/sg.times" smpirun -np $ranks -platform "$build/platform.xml" -hostfile "$build/hosts.txt" \
        $cfg "$build/speed" $count
    grep -q "wrong=0 checked=$((ranks * count))" "$build/sg.times.out" || {
        echo "SimGrid's run failed its check:" >&2
        cat "$build/sg.times.out" >&2
        exit 1
    }
    timed "$build/ours.times" "$bin" run "$scenario" --quiet --format json --output "$build/ours.json"
    grep -q '"verified": *true' "$build/ours.json" || { echo "our run failed its check" >&2; exit 1; }
    r=$((r + 1))
done

# The run of median wall time (the lower middle one for an even REPS).
median() { sort -n "$1" | sed -n "$(( ($(wc -l < "$1") + 1) / 2 ))p"; }
sg=$(median "$build/sg.times")
ours=$(median "$build/ours.times")
sg_sim=$(sed -n 's/^time_s=\([^ ]*\).*/\1/p' "$build/sg.times.out")
ours_sim=$(sed -n 's/.*"time_s": *\([0-9.e+-]*\).*/\1/p' "$build/ours.json" | head -n 1)
version=$(dpkg-query -W -f '${Version}' libsimgrid-dev 2>/dev/null || echo unknown)
cores=$(nproc)
load=$(cut -d' ' -f1-3 /proc/loadavg)

echo "ring, P = $ranks, 16 MiB of f32 per rank, every element of every rank checked; $reps runs each,"
echo "median wall time; $cores cores, load average before the last run $load."
echo
echo "| simulator | wall time | user CPU | system CPU | peak RSS | simulated time |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
echo "$sg" | awk -v v="$version" -v t="$sg_sim" \
    '{ printf "| SimGrid %s (SMPI, lr) | %.2f s | %.2f s | %.2f s | %.0f MB | %.6g s |\n", v, $1, $2, $3, $4 / 1000, t }'
echo "$ours" | awk -v t="$ours_sim" \
    '{ printf "| allreduce-sim (ring, data.mode full) | %.2f s | %.2f s | %.2f s | %.0f MB | %.6g s |\n", $1, $2, $3, $4 / 1000, t }'
echo
echo "$sg $ours" | awk '{ printf "allreduce-sim is %.1fx faster than SimGrid in wall time", $1 / $5;
    printf " (%.1fx in CPU time, user + system, of the same runs)\n", ($2 + $3) / ($6 + $7) }'
echo
echo "every run's wall time (s): SimGrid $(cut -d' ' -f1 "$build/sg.times" | tr '\n' ' ')"
echo "                           allreduce-sim $(cut -d' ' -f1 "$build/ours.times" | tr '\n' ' ')"
