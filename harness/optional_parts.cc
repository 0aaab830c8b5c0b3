// The optional parts this build was configured with, read from the generated collcheck/config.h;
// the list itself comes from cmake/detect.cmake, so a new part needs no change here.
#include "harness/optional_parts.h"

#include <string>

#include "collcheck/config.h"
#include "harness/text_table.h"
#if COLLCHECK_HAVE_CUDA
#include "impls/cuda/cuda_device.h"
#endif
#if COLLCHECK_HAVE_NCCL
#include "impls/vendors/nccl/nccl_backend.h"
#endif

namespace collcheck::cli {
namespace {

#define COLLCHECK_OPTIONAL_PART_ROW(title, have, reason) OptionalPart{title, (have) != 0, reason},
constexpr OptionalPart kOptionalParts[] = {COLLCHECK_FOR_EACH_OPTIONAL_PART(COLLCHECK_OPTIONAL_PART_ROW)};
#undef COLLCHECK_OPTIONAL_PART_ROW

}  // namespace

std::span<const OptionalPart> optional_parts() { return kOptionalParts; }

void print_optional_parts(std::ostream& out) {
  TextTable table;
  for (const OptionalPart& part : optional_parts()) {
    table.add_row({std::string(part.name), part.enabled ? "enabled" : "disabled", std::string(part.reason)});
  }
  table.print(out);
#if COLLCHECK_HAVE_CUDA
  // What ALGORITHM@cuda would run on (docs/gpu.md): the devices and the peer links between them.
  out << "CUDA devices: " << cuda::cuda_devices_text() << '\n';
  // Where net=ib (ALGORITHM@cuda:mode=processes,net=ib) puts each GPU's ring slots (ib_rings.h).
  if (cuda::cuda_cannot_run_here().empty()) out << "net=ib slots: " << cuda::rdma_slots_on_gpus() << '\n';
#endif
#if COLLCHECK_HAVE_NCCL
  // The runtime `nccl` backends load (it may differ from the headers built against), what
  // nccl:all-algorithms expands to with it, and whether this machine can run them.
  out << "NCCL: " << nccl_description() << '\n';
#endif
}

}  // namespace collcheck::cli
