#!/usr/bin/env bash
# What ran on the H200 to pin down the NCCL findings of 2026-12-04-processes.log (docs/gpu.md):
# each failing case replayed with NCCL's warnings, then with one thing changed at a time (the
# knob off, the op, the count, the offset), to tell our backend's part from NCCL's.
# Run as: ci/device-check's bundle carried, command `docs/gpu-runs/2026-12-04-nccl-findings.sh`.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
bundle="$(pwd)/.device-bundle"
out="${OUT:-/tmp}"
exec > >(tee "$out/nccl-findings.log") 2>&1
nccl_dir="$(dirname "$(find /usr /opt -name libnccl.so.2 2>/dev/null | head -1)")"
export LD_LIBRARY_PATH="$bundle/lib:$nccl_dir"
collcheck="$bundle/bin/collcheck"
replay() {  # replay BACKEND PROPERTY CASE [more options]
  local backend=$1 property=$2 case_text=$3
  shift 3
  echo "== replay --backend '$backend' --property $property '$case_text' $*"
  timeout 40 "$collcheck" replay --backend "$backend" --property "$property" --mpirun-args '-x NCCL_DEBUG=WARN' \
    "$@" "$case_text" 2>&1 | grep -v "^ *\(rank [0-9]* element\|\.\.\. and\)" | head -40
  echo "== exit ${PIPESTATUS[0]}"
}
fixed='graph=off,premul=off,window=off'
# 1. Registered buffers, f64 avg on one rank: the last element 0.
registered='allreduce/f64/avg/n=3573/ranks=1/root=0/outofplace/offset=0/values=exact/seed=0'
replay "nccl:register=on,$fixed" oracle "$registered"
replay "nccl:register=off,$fixed" oracle "$registered"
replay "nccl:register=on,$fixed" oracle "${registered/avg/sum}"
replay "nccl:register=on,$fixed" oracle "${registered/f64/f32}"
replay "nccl:register=on,$fixed" oracle "${registered/n=3573/n=4096}"
replay "nccl:register=on,$fixed" oracle "${registered/outofplace/inplace}"
# 2. Graph capture, i64 avg: the tail wrong in the third call.
graphed='allreduce/i64/avg/n=40455/ranks=1/root=0/outofplace/offset=12/values=exact/seed=338361'
replay 'nccl:graph=on,register=off,premul=off,window=off' repeat "$graphed"
replay 'nccl:graph=off,register=off,premul=off,window=off' repeat "$graphed"
replay 'nccl:graph=on,register=off,premul=off,window=off' repeat "${graphed/avg/sum}"
replay 'nccl:graph=on,register=off,premul=off,window=off' repeat "${graphed/offset=12/offset=0}"
# 3. Refusals: a count of 0 under a forced algorithm, and a second window registration.
replay 'nccl:algo=ring,proto=simple' liveness 'allreduce/i8/prod/n=0/ranks=1/root=0/outofplace/offset=0/values=exact/seed=0'
replay 'nccl:algo=ring,proto=simple' liveness 'allreduce/i8/prod/n=1/ranks=1/root=0/outofplace/offset=0/values=exact/seed=0'
replay 'nccl:window=on,graph=off,premul=off,register=off' recovery 'allreduce/f8e4m3/sum/n=1/ranks=1/root=0/outofplace/offset=0/values=exact/seed=0'
replay 'nccl:register=on,graph=off,premul=off,window=off' liveness 'allreduce/u32/sum/n=0/ranks=1/root=0/outofplace/offset=0/values=real/seed=548446'
echo "nccl-findings: done"
