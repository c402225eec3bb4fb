#!/bin/sh
# Engine instructions per simulated message, counted with Callgrind (steadier than wall time
# on a shared machine): a whole `allreduce-sim run` of two timing-only points (sizes S and
# S + 4 bytes, fully connected, alpha = 1 us, 100 Gb/s, one port per rank), its total
# instructions over its messages. Prints a Markdown table (the README's "Performance"
# instruction table). Takes several minutes. P above 64 only (smaller points report a critical
# path, whose message count the count here would add).
#
# Usage: benches/instructions.sh [ALGO:P:S ...]
#   default: ring:256:1MiB ring:1024:1MiB butterfly:16384:4KiB butterfly:65536:4KiB
#            halving_doubling:16384:4KiB halving_doubling:65536:4KiB
# Builds the release binary first, unless ALLREDUCE_SIM names a binary to measure.
set -eu
cd "$(dirname "$0")/.."
if [ -z "${ALLREDUCE_SIM:-}" ]; then
    cargo build --release --quiet
fi
bin="${ALLREDUCE_SIM:-${CARGO_TARGET_DIR:-target}/release/allreduce-sim}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ $# -gt 0 ] || set -- ring:256:1MiB ring:1024:1MiB butterfly:16384:4KiB butterfly:65536:4KiB \
    halving_doubling:16384:4KiB halving_doubling:65536:4KiB

echo "| algorithm | P | S | instructions | messages | per message |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
for spec in "$@"; do
    algo=${spec%%:*}
    rest=${spec#*:}
    p=${rest%%:*}
    size=${rest#*:}
    bytes=$(echo "$size" | awk '/KiB$/ { print $0 * 1024; next } /MiB$/ { print $0 * 1048576; next } { print $0 }')
    cat > "$tmp/s.yaml" <<YAML
name: instructions
seed: 1
ranks: [$p]
topology:
  kind: fully_connected
  link: { alpha: 1us, bandwidth: 100Gbps }
  nics: 1
compute: { cost_per_byte: 0.05ns }
data: { mode: off }
algorithms: [$algo]
sizes: [$bytes, $((bytes + 4))]
YAML
    ir=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" run "$tmp/s.yaml" --quiet \
        --format json --output "$tmp/out.json" 2>&1 | grep -o 'Collected : [0-9]*' | grep -o '[0-9]*$')
    msgs=$(grep -o '"messages": *[0-9]*' "$tmp/out.json" | grep -o '[0-9]*$' | awk '{ s += $1 } END { print s }')
    awk -v a="$algo" -v p="$p" -v s="$size" -v i="$ir" -v m="$msgs" 'BEGIN {
        printf "| %s | %d | %s | %.0f | %d | %.0f |\n", a, p, s, i, m, i / m }'
done
