#!/bin/sh
# Regenerate validation/hardware/RESULTS.md: calibrate every dataset of data/ on some of
# its runs and predict the others (hold-out). Usage: validation/hardware/run.sh [BINARY]
# Without BINARY it builds the release binary (cargo does nothing when it is up to date).
# A fit that fails leaves its JSON empty and the others still run; RESULTS.md says which
# did not finish, and the script exits 1 at the end.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -ge 1 ]; then
    bin=$1
else
    (cd "$here/../.." && cargo build --release --quiet)
    bin=$here/../../target/release/allreduce-sim
fi
d=$here/data
out=$here/results
mkdir -p "$out"
# calibrate's charts of every log go here; two held-out ones are kept in plots/ (below).
charts=$(mktemp -d)
trap 'rm -rf "$charts"' EXIT
python3 "$here/convert_astrasim.py" "$d/astrasim_validation_digitized.csv" "$d"
python3 "$here/convert_l40s.py" "$d/l40s_nccl_allreduce.csv" "$d"

failed=""
cal() {
    name=$1; shift
    started=$(date +%s)
    if "$bin" calibrate "$@" --format json --output "$out/$name.yaml" > "$out/$name.json"; then
        echo "$name: $(($(date +%s) - started)) s"
    else
        echo "$name: calibrate failed (status $?)" >&2
        : > "$out/$name.json"
        failed="$failed $name"
    fi
}

# ABCI V100: one node (P = 4) and one two-node run (P = 8) fitted, 4 to 32 nodes predicted.
# NCCL's picks are made at the machine file's nominal figures (NVLink's and EDR's line
# rates, as NCCL's topology detection rates them) and held (--picks file). The NVLink hop
# latencies stay at NCCL's (one node cannot tell them from launch; left free they ran to
# zero, and the tree's NVLink hops with them); the rest is fitted. The network proxy's
# time per connection (inter.proxy) is held too: on one and two nodes NCCL runs rings,
# whose GPUs have one connection across nodes, so these logs see only alpha + proxy.
# The ring's step latency inside a node is fitted for LL128: the two logs take 6 and 12
# such steps, which separates it from launch, and the ring's time at 512 KiB to 32 MiB
# grows by about 7 us per step with the node count (docs/gpu-clusters.md). Simple's is
# held at NCCL's 3.4 us: these logs do not determine it (fitted, it and launch trade
# against the Simple proxy's time on the two-node ring and the multi-node rings go fast).
# The machine file's inter.nic_path (phb: the NICs hang off the CPUs) keeps LL128 off across
# nodes, as NCCL does there; inter.alpha.ll128 stays in the list but no point uses it.
abci_fit=topology.intra.bandwidth,topology.inter.alpha.simple,topology.inter.alpha.ll,topology.inter.alpha.ll128
abci_fit=$abci_fit,topology.inter.bandwidth,topology.launch.simple,topology.launch.ll,topology.launch.ll128
abci_fit=$abci_fit,topology.efficiency.ll,topology.efficiency.ll128
abci_fit=$abci_fit,topology.intra.step_latency.ll128
# A channel's rate handing LL across nodes (inter.channel_bandwidth.ll): the two-node ring's
# LL steps (4 KiB a channel from 32 to 128 KiB) show it; inter.efficiency.ll (LL's line
# share on the wire) is held, so the NVLink's fitted LL efficiency does not slow the NICs.
abci_fit=$abci_fit,topology.inter.channel_bandwidth.ll
cal abci_v100 "$here/machines/abci_v100.yaml" "$d/abci_v100_p4.txt" "$d/abci_v100_p8.txt" \
    --picks file --fit "$abci_fit" \
    --hold-out "$d/abci_v100_p16.txt" "$d/abci_v100_p32.txt" "$d/abci_v100_p64.txt" "$d/abci_v100_p128.txt" \
    --plot="$charts/abci_v100"
# The same with every rank count fitted: how far the model itself is from the data.
cal abci_v100_all "$here/machines/abci_v100.yaml" "$d"/abci_v100_p*.txt --picks file
# One H100 node: the ring-forced run (allreduce, allgather, reduce-scatter) fitted, the
# NVLS-enabled run of the same node predicted.
cal tg_h100 "$here/machines/h100_node.yaml" "$d/tg_h100_1n_p8_ring.txt" --env NCCL_ALGO=Ring \
    --hold-out "$d/tg_h100_1n_p8_nvls.txt"
# Two-node H100 runs (GCP, AWS p5) and A100 (AWS p4de), each fitted on itself only.
# The H100 logs do not say what NCCL ran; at their sizes NCCL's model picks NVLS Tree
# (their bus bandwidth is above what a ring can move through the NICs). A trial with NVLS
# Tree simulates a quarter of a million messages even where its loops are counted, and
# calibrate counts them only where their step at 8 to 11 loops is the busiest side's time
# a loop, which on this machine's trials where the NICs bind (NVLink from about 900 GB/s)
# it is not: those simulate 256 MiB to 8 GiB whole, some 4.6 million messages a trial
# (docs/nccl.md, nvls_tree). So these two fits leave it out (NCCL_ALGO=^NVLSTree) and fit
# the ring and tree as before.
cal gcp_a3mega "$here/machines/h100_node.yaml" "$d/gcp_a3mega_2n_p16.txt" --env 'NCCL_ALGO=^NVLSTree'
cal aws_p5 "$here/machines/h100_node.yaml" "$d/aws_p5_2n_p16.txt" --ranks 16 --gpus-per-node 8 \
    --env 'NCCL_ALGO=^NVLSTree'
cal aws_p4de "$here/machines/a100_p4de.yaml" "$d/aws_p4de_2n_p16.txt" --ranks 16 --gpus-per-node 8
# ASTRA-sim's validation points: fit P = 2, predict P = 4 and 8 (the ring, large sizes only).
# HGX-H100 on one NVSwitch node; HPE V100 on the DGX-1 cube-mesh (machines/dgx1_v100.yaml,
# the NVLink counts written down): a run of fewer GPUs than the node has runs on the node's
# GPUs its log names, and NCCL's rings go over distinct NVLinks.
cal astrasim_hgx_h100 "$here/machines/single_node.yaml" "$d/astrasim_hgx_h100_p2.txt" \
    --hold-out "$d/astrasim_hgx_h100_p4.txt" "$d/astrasim_hgx_h100_p8.txt"
cal astrasim_hpe_v100 "$here/machines/dgx1_v100.yaml" "$d/astrasim_hpe_v100_p2.txt" \
    --fit topology.intra.bandwidth,topology.launch --hold-out "$d/astrasim_hpe_v100_p4.txt" "$d/astrasim_hpe_v100_p8.txt"
# L40S on PCIe: every NCCL_ALGO / NCCL_PROTO run at P = 2 fitted, the same runs at P = 4 predicted.
# The P = 2 pair crosses between the CPU sockets, so its cost fixes the socket link's
# bandwidth; a GPU's own link (intra.bandwidth) and the alphas (NCCL's PCI hop latencies,
# which one rank count cannot tell from launch) stay at the machine file's values. One
# thread drove all the GPUs of each run: host.issue, its time per GPU, is fitted (the
# flat small LL sizes and the bend above them).
l40s_fit=topology.intra.socket_link.bandwidth,topology.launch.simple,topology.launch.ll
l40s_fit=$l40s_fit,topology.launch.ll128,topology.efficiency.ll,topology.efficiency.ll128,host.issue
cal l40s "$here/machines/l40s_pcie.yaml" "$d"/l40s_p2_*.txt --fit "$l40s_fit" --hold-out "$d"/l40s_p4_*.txt \
    --plot="$charts/l40s"
python3 "$here/table.py" "$out" "$d/astrasim_validation_digitized.csv" > "$here/RESULTS.md"
echo "wrote $here/RESULTS.md"
# The held-out charts the README and docs/calibrate.md show: 32 ABCI nodes predicted from
# one and two, and the L40S box's P = 4 predicted from P = 2 (NCCL_ALGO=Ring).
plots=$here/../../plots
for pair in "abci_v100/abci-v100-p128_busbw:hardware-abci-v100-p128-holdout_busbw" \
    "l40s/l40s-p4-ring_busbw:hardware-l40s-p4-ring-holdout_busbw"; do
    for ext in png svg; do
        if [ -f "$charts/${pair%%:*}.$ext" ]; then
            cp "$charts/${pair%%:*}.$ext" "$plots/${pair##*:}.$ext"
        fi
    done
done
if [ -n "$failed" ]; then
    echo "not finished:$failed" >&2
    exit 1
fi
