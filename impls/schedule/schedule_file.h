// Schedules from files, whichever format: collcheck's own text form (schedule_text.cc: what
// `collcheck export` writes) or MSCCL's XML (msccl_xml.h). A file fixes a collective, its ranks,
// a layout and a count multiple; each case it admits becomes a schedule. The executors
// (`schedule:FILE@sim|proc`) and `collcheck prove --schedule FILE` read files through this.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "impls/schedule/schedule.h"
#include "reference/case.h"
#include "reference/result.h"

namespace collcheck {

// The reductions a file's steps can express: each reduces as it goes, so avg (a division at
// the end) is out.
std::vector<RedOp> schedule_file_ops();

// `message` with each "rank R step K" that describe() wrote followed by " [NAME]", NAME what
// `name_of(R, K)` calls that step in the file (nothing where it returns "").
std::string name_steps_in(const std::string& message, const std::function<std::string(int, int)>& name_of);

// collcheck's text form, as read (docs/schedules.md): a header naming the collective, ranks,
// root, layout and `chunks`, then each participant's steps with every offset, count and scratch
// size in chunks (count / chunks elements each).
struct ScheduleText {
  std::string file;
  std::string algorithm;
  Collective collective = Collective::AllReduce;
  int ranks = 0;
  int root = 0;
  bool in_place = false;
  std::size_t chunks = 1;
  std::vector<Participant> participants;     // ranges and scratch in chunks
  std::map<std::pair<int, int>, int> lines;  // (participant, step) -> its line in the file
};

// The text form of a stored or on-demand schedule, in the largest chunk that divides the count
// and every offset, count and scratch size; refused (with the reason) for the v-collectives,
// whose counts are per rank, and for the empty count.
Result<std::string> schedule_text(Schedule schedule);

// Reads the text form; errors name the file, line and field with the values allowed.
Result<ScheduleText> parse_schedule_text(std::string_view text, const std::string& file);

// The schedule of an admitted case: every range and scratch size times count / chunks elements,
// checked whole (validate).
Result<Schedule> text_schedule(const ScheduleText&, const Case&);

// A file read, in either format, and what it admits.
struct ScheduleFile {
  std::string description;  // "the MSCCL algorithm ring (allreduce on 4 ranks ...)"
  Collective collective = Collective::AllReduce;
  int ranks = 0;
  int root = 0;
  bool in_place = false;
  std::size_t count_multiple = 1;
  std::function<Result<Schedule>(const Case&)> make;
  // A proof's or run's message with each step also named as the file names it.
  std::function<std::string(const Case&, const std::string&)> explain;
};

// The whole text of a schedule file: only a regular file of a sane size (a device or a fifo
// named by mistake would never end), else an error naming it.
Result<std::string> read_schedule_file_text(const std::string& path);

// Reads `path`: the text form when its first word is `collcheck-schedule`, else MSCCL's XML.
Result<ScheduleFile> read_schedule_file(const std::string& path);
// The same for a file's text already read; messages name `path`.
Result<ScheduleFile> parse_schedule_file(const std::string& text, const std::string& path);

// An admitted shape of the file at `count` (its collective, ranks, layout, root 0 or its own).
Case schedule_file_shape(const ScheduleFile&, std::size_t count);

}  // namespace collcheck
