// `collcheck prove --schedule FILE`: an MSCCL XML algorithm file read, checked and proven for
// every shape it admits. A file is fixed to its ranks and layout, and each of its steps moves
// whole chunks of total count / nchunksperloop elements, so element j of every chunk goes where
// element 0 goes: proving chunks of 1, 2 and 3 elements (and the empty count) proves every
// count it admits. A failure names the gpu, thread block, step and line of the file.
#include <chrono>
#include <cstdio>

#include "harness/cli_prove.h"
#include "harness/text_table.h"
#include "impls/prove/proof.h"
#include "impls/schedule/msccl_xml.h"

namespace collcheck::cli {
namespace {

constexpr int kRejected = 1;

Case admitted_shape(const MscclAlgorithm& algorithm, std::size_t count) {
  Case shape;
  shape.collective = algorithm.collective;
  shape.nranks = algorithm.ngpus;
  shape.count = count;
  shape.in_place = algorithm.in_place;
  return shape;
}

}  // namespace

int run_prove_schedule(const Arguments& args, std::ostream& out, std::ostream& err) {
  const std::string file = args.get("schedule");
  if (args.has("algorithm")) {
    err << "collcheck prove: --schedule and --algorithm: give one of them\n";
    return 2;
  }
  Result<MscclAlgorithm> algorithm = read_msccl_file(file);
  if (!algorithm) {
    err << "collcheck prove: " << algorithm.error().text() << '\n';
    return kRejected;
  }
  out << file << ": MSCCL algorithm " << algorithm->name << ", " << msccl_shapes(*algorithm) << '\n';
  const std::size_t multiple = msccl_count_multiple(*algorithm);
  TextTable table;
  table.add_row({"count", "steps", "messages", "result", "time"});
  for (std::size_t count : {multiple, 2 * multiple, 3 * multiple, std::size_t{0}}) {
    const Case shape = admitted_shape(*algorithm, count);
    const auto begin = std::chrono::steady_clock::now();
    Result<Schedule> schedule = msccl_schedule(*algorithm, shape);
    const Proof proof = schedule ? prove(*schedule) : Proof{false, schedule.error().text(), 0, 0};
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    char time[32];
    std::snprintf(time, sizeof time, "%.3f s", seconds);
    table.add_row({std::to_string(count), std::to_string(proof.steps), std::to_string(proof.messages),
                   proof.ok ? "proven" : "FAILED", time});
    if (!proof.ok) {
      table.print(out);
      err << "collcheck prove: " << file << " does not implement " << name(algorithm->collective) << " (count " << count
          << "): " << msccl_explain(*algorithm, shape, proof.message) << '\n';
      return kRejected;
    }
  }
  table.print(out);
  out << "proven: " << name(algorithm->collective) << " for every count it admits (multiples of " << multiple << ")\n";
  return 0;
}

}  // namespace collcheck::cli
