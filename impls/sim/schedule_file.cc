// `schedule:FILE@sim` and `schedule:FILE@proc`: an MSCCL XML algorithm file run by our executors.
// The file is read and checked once, when the backend is made; each case admitted becomes its
// schedule. A file is fixed to its ranks, layout and a count multiple (MSCCL runs it only there):
// the capabilities say so, so that check draws only those shapes.
#include <memory>

#include "impls/schedule/msccl_xml.h"
#include "impls/sim/sim_backend.h"

namespace collcheck {

Result<SimVariant> schedule_file_variant(std::string_view file) {
  if (file.empty()) return Error{"backend", "schedule:FILE names no file: e.g. schedule:ring.xml@sim"};
  Result<MscclAlgorithm> read = read_msccl_file(std::string(file));
  if (!read) return read.error();
  auto algorithm = std::make_shared<const MscclAlgorithm>(std::move(read).value());
  SimVariant variant;
  variant.name = "schedule:" + std::string(file);
  variant.description = "the MSCCL algorithm " + algorithm->name + " (" + msccl_shapes(*algorithm) + ")";
  variant.collectives = {algorithm->collective};
  variant.schedule = [algorithm](const Case& c, const Knobs&) -> Result<Schedule> {
    return msccl_schedule(*algorithm, c);
  };
  variant.narrow = [algorithm](Capabilities& capabilities) {
    capabilities.ops = msccl_ops();
    capabilities.min_ranks = capabilities.max_ranks = algorithm->ngpus;
    capabilities.in_place = algorithm->in_place;
    capabilities.out_of_place = !algorithm->in_place;
    capabilities.count_multiple = msccl_count_multiple(*algorithm);
    capabilities.knobs.clear();  // the file fixes its chunks and channels
  };
  return variant;
}

}  // namespace collcheck
