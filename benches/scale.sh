#!/bin/sh
# Scaling of timing-only runs: for butterfly, halving_doubling and ring at growing P,
# the CPU time (user + system: steadier than wall time on a shared machine; the run is
# single-threaded, so on an idle machine the two agree), the peak resident memory of the whole process (`/usr/bin/time`), and
# that memory over P. One point per run, 4 KiB per rank, data.mode off, on a fully
# connected machine (alpha = 1 us, 100 Gb/s, one port per rank).
#
# Usage: benches/scale.sh [ALGO:P,P,... ...]
#   default: butterfly:65536,262144,1048576,4194304
#            halving_doubling:65536,262144,1048576,4194304 ring:1024,2048,4096,8192
# Prints a Markdown table (the README's "Scaling" table). Builds the release binary
# first, unless ALLREDUCE_SIM names a binary to measure.
set -eu
cd "$(dirname "$0")/.."
if [ -z "${ALLREDUCE_SIM:-}" ]; then
    cargo build --release --quiet
fi
bin="${ALLREDUCE_SIM:-${CARGO_TARGET_DIR:-target}/release/allreduce-sim}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ $# -gt 0 ] || set -- butterfly:65536,262144,1048576,4194304 \
    halving_doubling:65536,262144,1048576,4194304 ring:1024,2048,4096,8192

echo "| algorithm | P | messages | CPU time | peak RSS | bytes per rank |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
for spec in "$@"; do
    algo=${spec%%:*}
    for p in $(echo "${spec#*:}" | tr ',' ' '); do
        cat > "$tmp/s.yaml" <<YAML
name: scale
seed: 1
ranks: [$p]
topology:
  kind: fully_connected
  link: { alpha: 1us, bandwidth: 100Gbps }
  nics: 1
compute: { cost_per_byte: 0.05ns }
data: { mode: off }
algorithms: [$algo]
sizes: [4KiB]
YAML
        /usr/bin/time -f "%U %S %M" -o "$tmp/time" "$bin" run "$tmp/s.yaml" --quiet --format json \
            --output "$tmp/out.json"
        read -r user sys kib < "$tmp/time"
        secs=$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')
        msgs=$(grep -o '"messages": *[0-9]*' "$tmp/out.json" | head -1 | grep -o '[0-9]*$')
        awk -v a="$algo" -v p="$p" -v m="$msgs" -v s="$secs" -v k="$kib" 'BEGIN {
            printf "| %s | %d | %d | %.1f s | %.0f MB | %.0f |\n", a, p, m, s, k * 1024 / 1e6, k * 1024 / p }'
    done
done
