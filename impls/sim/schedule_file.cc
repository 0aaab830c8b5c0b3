// `schedule:FILE@sim` and `schedule:FILE@proc`: a schedule file (collcheck's text form or an
// MSCCL XML algorithm, impls/schedule/schedule_file.h) run by our executors. The file is read and
// checked once, when the backend is made (a launched world's process reads the text its launcher
// read, pinned_files.h); each case admitted becomes its schedule. A file is
// fixed to its collective, ranks, layout (and root) and a count multiple: the capabilities say
// so, so that check draws only those shapes.
#include <memory>
#include <string>
#include <string_view>

#include "impls/backend/pinned_files.h"
#include "impls/schedule/schedule_file.h"
#include "impls/sim/sim_backend.h"

namespace collcheck {
namespace {

// The role of a schedule file among the files pinned for worlds (pinned_files.h).
constexpr std::string_view kPinnedRole = "SCHEDULE";

}  // namespace

Result<SimVariant> schedule_file_variant(std::string_view file) {
  if (file.empty()) return Error{"backend", "schedule:FILE names no file: e.g. schedule:ring.xml@sim"};
  const std::string path(file);
  // In a launched world's process, the text its launcher read (pinned_files.h).
  const std::string source = pinned_or(kPinnedRole, path);
  Result<std::string> text = read_schedule_file_text(source);
  if (!text) return text.error();
  Result<ScheduleFile> read = parse_schedule_file(*text, path);
  if (!read) return read.error();
  auto schedule_file = std::make_shared<const ScheduleFile>(std::move(read).value());
  SimVariant variant;
  // The text as read now, for the worlds launched on this host, copied when a backend that launches
  // them asks: an edit of the file while a campaign runs does not reach them.
  if (source == path) {
    variant.pinned_for_worlds = [path, read_text = std::make_shared<const std::string>(std::move(*text))] {
      return pin_for_worlds(kPinnedRole, path, sealed_copy(*read_text));
    };
  }
  variant.name = "schedule:" + std::string(file);
  variant.description = schedule_file->description;
  variant.collectives = {schedule_file->collective};
  variant.schedule = [schedule_file](const Case& c, const Knobs&) -> Result<Schedule> {
    return schedule_file->make(c);
  };
  variant.narrow = [schedule_file](Capabilities& capabilities) {
    capabilities.ops = schedule_file_ops();
    capabilities.min_ranks = capabilities.max_ranks = schedule_file->ranks;
    capabilities.in_place = schedule_file->in_place;
    capabilities.out_of_place = !schedule_file->in_place;
    capabilities.count_multiple = schedule_file->count_multiple;
    capabilities.knobs.clear();  // the file fixes its chunks and channels
    if (rooted(schedule_file->collective)) {
      capabilities.precondition = [root = schedule_file->root](const Case& c) { return c.root == root; };
    }
  };
  return variant;
}

}  // namespace collcheck
