#!/usr/bin/env bash
# The second pass over the NCCL findings (docs/gpu.md): which counts and dtypes an out-of-place
# ncclAvg on one rank gets wrong, and which dtypes a graph-captured ncclAvg gets wrong on replay.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
bundle="$(pwd)/.device-bundle"
out="${OUT:-/tmp}"
exec > >(tee "$out/nccl-findings-2.log") 2>&1
nccl_dir="$(dirname "$(find /usr /opt -name libnccl.so.2 2>/dev/null | head -1)")"
export LD_LIBRARY_PATH="$bundle/lib:$nccl_dir"
collcheck="$bundle/bin/collcheck"
replay() {  # replay BACKEND PROPERTY CASE: one line, the verdict
  printf '%-45s %-8s %-75s ' "$1" "$2" "$3"
  timeout 30 "$collcheck" replay --backend "$1" --property "$2" "$3" 2>&1 | grep -E "^(FAILED|held|skipped)" | head -1
}
plain='nccl:graph=off,register=off,premul=off,window=off'
graphed='nccl:graph=on,register=off,premul=off,window=off'
for dtype in f64 i64 u64 f32 i32 f16; do
  for n in 1 2 3 5 7 1023 3573; do
    replay "$plain" oracle "allreduce/$dtype/avg/n=$n/ranks=1/root=0/outofplace/offset=0/values=exact/seed=0"
  done
done
for dtype in f64 i64 u64 f32 i32 f16 i8; do
  for n in 1 4096 40455; do
    replay "$graphed" repeat "allreduce/$dtype/avg/n=$n/ranks=1/root=0/outofplace/offset=0/values=exact/seed=1"
  done
done
replay "$graphed" repeat "allreduce/i64/prod/n=40455/ranks=1/root=0/outofplace/offset=0/values=exact/seed=1"
replay "$graphed" repeat "reducescatter/i64/avg/n=40455/ranks=1/root=0/outofplace/offset=0/values=exact/seed=1"
replay "$plain" oracle "reducescatter/f64/avg/n=3573/ranks=1/root=0/outofplace/offset=0/values=exact/seed=0"
replay "$plain" oracle "reduce/f64/avg/n=3573/ranks=1/root=0/outofplace/offset=0/values=exact/seed=0"
echo "nccl-findings-2: done"
