// `collcheck prove --schedule FILE`: a schedule file (collcheck's text form or an MSCCL XML
// algorithm) read, checked and proven for every shape it admits. A file is fixed to its ranks and
// layout, and each of its steps moves whole chunks of count / (its count multiple) elements, so
// element j of every chunk goes where element 0 goes: proving chunks of 1, 2 and 3 elements (and
// the empty count) proves every count it admits. A failure names the step as the file does (an
// MSCCL gpu, thread block and step; a line of the text form).
#include <chrono>

#include "harness/cli_prove.h"
#include "harness/text_table.h"
#include "impls/prove/proof.h"
#include "impls/schedule/schedule_file.h"
#include "reference/numbers.h"

namespace collcheck::cli {
namespace {

constexpr int kRejected = 1;

}  // namespace

int run_prove_schedule(const Arguments& args, std::ostream& out, std::ostream& err) {
  const std::string file = args.get("schedule");
  if (args.has("algorithm")) {
    err << "collcheck prove: --schedule and --algorithm: give one of them\n";
    return 2;
  }
  Result<ScheduleFile> schedule_file = read_schedule_file(file);
  if (!schedule_file) {
    err << "collcheck prove: " << schedule_file.error().text() << '\n';
    return kRejected;
  }
  out << file << ": " << schedule_file->description << '\n';
  const std::size_t multiple = schedule_file->count_multiple;
  TextTable table;
  table.add_row({"count", "steps", "messages", "result", "time"});
  for (std::size_t count : {multiple, 2 * multiple, 3 * multiple, std::size_t{0}}) {
    const Case shape = schedule_file_shape(*schedule_file, count);
    const auto begin = std::chrono::steady_clock::now();
    Result<Schedule> schedule = schedule_file->make(shape);
    const Proof proof = schedule ? prove(*schedule) : Proof{false, schedule.error().text(), 0, 0};
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    table.add_row({std::to_string(count), std::to_string(proof.steps), std::to_string(proof.messages),
                   proof.ok ? "proven" : "FAILED", printf_text("%.3f s", seconds)});
    if (!proof.ok) {
      table.print(out);
      err << "collcheck prove: " << file << " does not implement " << name(schedule_file->collective) << " (count "
          << count << "): " << schedule_file->explain(shape, proof.message) << '\n';
      return kRejected;
    }
  }
  table.print(out);
  out << "proven: " << name(schedule_file->collective) << " for every count it admits (multiples of " << multiple
      << ")\n";
  return 0;
}

}  // namespace collcheck::cli
