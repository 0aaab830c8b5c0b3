// collcheck's text form of a schedule (schedule_file.h; docs/schedules.md has the grammar).
//
// Writing works as follows: the schedule's steps are stored, then the `unit` is found, the
// greatest common divisor of the count and of every offset, count and scratch size in it; the
// header says `chunks count/unit`, and every number below it is in units. Reading the file at
// any count that `chunks` divides makes every range and scratch size count/chunks units long:
// since a collective's buffers grow linearly with its count, every range scales alike, and read
// back at the count it was written at, the schedule is the one written, step for step.
//
// Reading works line by line: `#` starts a comment; the header lines come first, in any order,
// each once; then a participant line (`rank R scratch S`, ranks in order, then `switch K scratch
// S`) opens each participant's steps, one per line:
//   send PEER RANGE | recv PEER RANGE | recv-reduce PEER FROM TO | copy FROM TO | reduce FROM TO
// with RANGE = BUFFER:OFFSET+COUNT (BUFFER input, output or scratch) and the options channel=N,
// stream=N and after=I,J,... (earlier steps of the participant it also waits for).
#include <algorithm>
#include <array>
#include <iterator>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "impls/schedule/schedule_file.h"
#include "reference/numbers.h"

namespace collcheck {
namespace {

constexpr std::string_view kMagic = "collcheck-schedule";
constexpr int kVersion = 1;
constexpr std::uint64_t kMaxParticipants =
    4 * std::uint64_t{kMaxRanks};                             // ranks and switches; validate() checks the peer exists
constexpr std::uint64_t kMaxNumber = std::uint64_t{1} << 36;  // kMaxBufferElements: offsets, counts, chunks
constexpr std::string_view kStepKinds = "send, recv, recv-reduce, copy or reduce";

std::uint64_t unit_of(const Schedule& s) {
  std::uint64_t unit = s.shape.count;
  const auto fold = [&unit](const Range& range) {
    unit = std::gcd(unit, std::gcd<std::uint64_t>(range.offset, range.count));
  };
  for (const Participant& participant : s.participants) {
    unit = std::gcd<std::uint64_t>(unit, participant.scratch);
    for (const Step& step : participant.steps) {
      if (step.reads()) fold(step.from);
      if (step.writes()) fold(step.to);
    }
  }
  return unit;
}

std::string range_text(const Range& range, std::uint64_t unit) {
  return std::string(name(range.buffer)) + ":" + std::to_string(range.offset / unit) + "+" +
         std::to_string(range.count / unit);
}

std::string step_text(const Participant& participant, int index, const Step& step, std::uint64_t unit) {
  std::string out = "  " + std::string(name(step.kind));
  if (step.sends() || step.receives()) out += " " + std::to_string(step.peer);
  if (step.reads()) out += " " + range_text(step.from, unit);
  if (step.writes()) out += " " + range_text(step.to, unit);
  if (step.channel != 0) out += " channel=" + std::to_string(step.channel);
  if (step.stream != 0) out += " stream=" + std::to_string(step.stream);
  std::string after;
  for (int earlier : participant.after(index)) after += (after.empty() ? "" : ",") + std::to_string(earlier);
  if (!after.empty()) out += " after=" + after;
  return out + "\n";
}

// What the reader knows as it goes: the file, the line, and the words of the line.
struct Line {
  const std::string& file;
  int number = 0;
  std::vector<std::string> words;

  Error error(const std::string& message) const {
    return Error{"", file + ":" + std::to_string(number) + ": " + message};
  }
  Result<std::uint64_t> integer(std::string_view field, std::string_view text, std::uint64_t low,
                                std::uint64_t high) const {
    Result<std::uint64_t> parsed = parse_integer(field, text, CountRange{low, high, false, {}});
    if (!parsed) return error(parsed.error().text());
    return parsed;
  }
};

// The kind a word names, as name() spells each kind; nothing where it names none.
template <typename Kind, std::size_t N>
std::optional<Kind> kind_named(std::string_view word, const std::array<Kind, N>& kinds) {
  const auto found = std::find_if(kinds.begin(), kinds.end(), [&](Kind kind) { return name(kind) == word; });
  return found == kinds.end() ? std::nullopt : std::optional<Kind>(*found);
}
constexpr std::array kBufferKindList{BufferKind::Input, BufferKind::Output, BufferKind::Scratch};
constexpr std::array kStepKindList{StepKind::Send, StepKind::Recv, StepKind::RecvReduce, StepKind::Copy,
                                   StepKind::Reduce};

Result<Range> read_range(const Line& line, std::string_view text) {
  const std::size_t colon = text.find(':'), plus = text.find('+');
  if (colon == text.npos || plus == text.npos || plus < colon) {
    return line.error("range `" + std::string(text) + "`: must be BUFFER:OFFSET+COUNT, e.g. input:0+2");
  }
  Range range;
  const std::optional<BufferKind> buffer = kind_named(text.substr(0, colon), kBufferKindList);
  if (!buffer) return line.error("range `" + std::string(text) + "`: the buffer must be input, output or scratch");
  range.buffer = *buffer;
  Result<std::uint64_t> offset = line.integer("offset", text.substr(colon + 1, plus - colon - 1), 0, kMaxNumber);
  if (!offset) return offset.error();
  Result<std::uint64_t> count = line.integer("count", text.substr(plus + 1), 0, kMaxNumber);
  if (!count) return count.error();
  range.offset = *offset;
  range.count = *count;
  return range;
}

// channel=N, stream=N, after=I,J: the words after a step's operands.
Status read_options(const Line& line, std::size_t first, Step& step, int index, Participant& participant) {
  for (std::size_t w = first; w < line.words.size(); ++w) {
    const std::string& word = line.words[w];
    const std::size_t equals = word.find('=');
    const std::string key = word.substr(0, equals == word.npos ? word.size() : equals);
    const std::string value = equals == word.npos ? "" : word.substr(equals + 1);
    if (key == "channel" || key == "stream") {
      Result<std::uint64_t> number = line.integer(key, value, 0, 1023);
      if (!number) return number.error();
      (key == "channel" ? step.channel : step.stream) = static_cast<int>(*number);
    } else if (key == "after") {
      std::istringstream list(value);
      if (index == 0) return line.error("after=: the first step of a participant has no earlier step to wait for");
      for (std::string earlier; std::getline(list, earlier, ',');) {
        Result<std::uint64_t> number = line.integer("after", earlier, 0, static_cast<std::uint64_t>(index - 1));
        if (!number) return number.error();
        participant.add_after(index, static_cast<int>(*number));
      }
    } else {
      return line.error("`" + word + "`: a step's options are channel=N, stream=N and after=I,J,...");
    }
  }
  return Ok{};
}

Status read_step(const Line& line, Participant& participant) {
  const std::string& kind = line.words[0];
  Step step;
  const int index = static_cast<int>(participant.steps.size());
  const std::optional<StepKind> named = kind_named(kind, kStepKindList);
  if (!named) return line.error("`" + kind + "`: a step is " + std::string(kStepKinds));
  step.kind = *named;
  const bool peered = step.sends() || step.receives();
  const std::size_t ranges = (step.reads() ? 1 : 0) + (step.writes() ? 1 : 0);
  const std::size_t operands = (peered ? 1 : 0) + ranges;
  if (line.words.size() < 1 + operands) {
    return line.error(kind + ": expected " + (peered ? "PEER " : "") + (ranges == 2 ? "FROM TO" : "RANGE"));
  }
  std::size_t next = 1;
  if (peered) {
    Result<std::uint64_t> peer = line.integer("peer", line.words[next++], 0, kMaxParticipants);
    if (!peer) return peer.error();
    step.peer = static_cast<int>(*peer);
  }
  if (step.reads()) {
    Result<Range> from = read_range(line, line.words[next++]);
    if (!from) return from.error();
    step.from = *from;
  }
  if (step.writes()) {
    Result<Range> to = read_range(line, line.words[next++]);
    if (!to) return to.error();
    step.to = *to;
  }
  Status options = read_options(line, next, step, index, participant);
  if (!options) return options;
  participant.steps.push_back(step);
  return Ok{};
}

}  // namespace

Result<std::string> schedule_text(Schedule schedule) {
  const Schedule s = stored(std::move(schedule));
  if (per_rank_counts(s.shape.collective)) {
    return Error{"--collective",
                 std::string(name(s.shape.collective)) +
                     ": the text form is for collectives of one count; the v-collectives' counts are per rank"};
  }
  if (s.shape.count == 0)
    return Error{"--count", "0: the text form scales a schedule by its count, so it needs one of at least 1"};
  const std::uint64_t unit = unit_of(s);
  std::string out = std::string(kMagic) + " " + std::to_string(kVersion) + "\n";
  out += "algorithm " + (s.algorithm.empty() ? std::string("unnamed") : s.algorithm) + "\n";
  out += "collective " + std::string(name(s.shape.collective)) + "\n";
  out += "ranks " + std::to_string(s.nranks()) + "\n";
  if (rooted(s.shape.collective)) out += "root " + std::to_string(s.shape.root) + "\n";
  out += std::string("layout ") + (s.shape.in_place ? "inplace" : "outofplace") + "\n";
  out += "chunks " + std::to_string(s.shape.count / unit) +
         "  # offsets, counts and scratch below in chunks of count/" + std::to_string(s.shape.count / unit) +
         " elements\n";
  for (int p = 0; p < s.nparticipants(); ++p) {
    const Participant& participant = s.participants[static_cast<std::size_t>(p)];
    out += participant.is_switch ? "switch " + std::to_string(p - s.nranks()) : "rank " + std::to_string(p);
    out += " scratch " + std::to_string(participant.scratch / unit) + "\n";
    for (int k = 0; k < static_cast<int>(participant.steps.size()); ++k)
      out += step_text(participant, k, participant.steps[static_cast<std::size_t>(k)], unit);
  }
  return out;
}

Result<ScheduleText> parse_schedule_text(std::string_view text, const std::string& file) {
  ScheduleText read;
  read.file = file;
  std::set<std::string> given;
  std::istringstream lines{std::string(text)};
  Line line{file, 0, {}};
  for (std::string raw; std::getline(lines, raw);) {
    ++line.number;
    if (const std::size_t hash = raw.find('#'); hash != raw.npos) raw.resize(hash);
    std::istringstream words(raw);
    line.words.assign(std::istream_iterator<std::string>(words), {});
    if (line.words.empty()) continue;
    const std::string& key = line.words[0];
    if (given.empty()) {
      if (key != kMagic || line.words.size() != 2 || line.words[1] != std::to_string(kVersion)) {
        return line.error("a schedule's text starts with `" + std::string(kMagic) + " " + std::to_string(kVersion) +
                          "`");
      }
      given.insert(key);
      continue;
    }
    const bool header = key == "algorithm" || key == "collective" || key == "ranks" || key == "root" ||
                        key == "layout" || key == "chunks";
    if (header) {
      if (!read.participants.empty()) return line.error(key + ": the header comes before the first participant");
      if (line.words.size() != 2) return line.error(key + ": expected one value");
      if (!given.insert(key).second) return line.error(key + ": given twice");
      const std::string& value = line.words[1];
      if (key == "algorithm") {
        read.algorithm = value;
      } else if (key == "collective") {
        Result<Collective> collective = parse_collective(value);
        if (!collective) return line.error(collective.error().text());
        if (per_rank_counts(*collective))
          return line.error("collective " + value + ": the v-collectives have no text form");
        read.collective = *collective;
      } else if (key == "layout") {
        if (value != "inplace" && value != "outofplace")
          return line.error("layout " + value + ": must be inplace or outofplace");
        read.in_place = value == "inplace";
      } else {
        Result<std::uint64_t> number =
            line.integer(key, value, key == "root" ? 0 : 1, key == "ranks" ? std::uint64_t{kMaxRanks} : kMaxNumber);
        if (!number) return number.error();
        if (key == "ranks") read.ranks = static_cast<int>(*number);
        if (key == "root") read.root = static_cast<int>(*number);
        if (key == "chunks") read.chunks = *number;
      }
      continue;
    }
    if (key == "rank" || key == "switch") {
      for (const char* needed : {"collective", "ranks", "layout", "chunks"}) {
        if (!given.contains(needed)) return line.error(std::string("the header has no `") + needed + "` line");
      }
      if (rooted(read.collective) && read.root >= read.ranks) return line.error("root: must be below ranks");
      const int expected = key == "rank" ? static_cast<int>(read.participants.size())
                                         : static_cast<int>(read.participants.size()) - read.ranks;
      if (line.words.size() != 4 || line.words[1] != std::to_string(expected) || line.words[2] != "scratch" ||
          (key == "rank" && expected >= read.ranks) || (key == "switch" && expected < 0)) {
        return line.error(key + ": expected `" + key + " " + std::to_string(std::max(expected, 0)) +
                          " scratch S` (ranks 0.." + std::to_string(read.ranks - 1) +
                          " in order, then switches 0, 1, ...)");
      }
      Result<std::uint64_t> scratch = line.integer("scratch", line.words[3], 0, kMaxNumber);
      if (!scratch) return scratch.error();
      Participant participant;
      participant.is_switch = key == "switch";
      participant.scratch = *scratch;
      read.participants.push_back(std::move(participant));
      continue;
    }
    if (read.participants.empty()) {
      return line.error(
          "`" + key +
          "`: expected a header line (algorithm, collective, ranks, root, layout, chunks) or `rank 0 scratch S`");
    }
    Participant& participant = read.participants.back();
    read.lines[{static_cast<int>(read.participants.size()) - 1, static_cast<int>(participant.steps.size())}] =
        line.number;
    Status step = read_step(line, participant);
    if (!step) return step.error();
  }
  if (given.empty()) return Error{"", file + ": empty: a schedule's text starts with `" + std::string(kMagic) + " 1`"};
  if (static_cast<int>(read.participants.size()) < read.ranks) {
    return Error{"", file + ": " + std::to_string(read.participants.size()) + " participants for ranks " +
                         std::to_string(read.ranks)};
  }
  return read;
}

Result<Schedule> text_schedule(const ScheduleText& text, const Case& c) {
  if (c.collective != text.collective || c.nranks != text.ranks || c.in_place != text.in_place ||
      (rooted(c.collective) && c.root != text.root) || c.count % text.chunks != 0) {
    return Error{"", text.file + ": the file runs only " + std::string(name(text.collective)) + " on " +
                         std::to_string(text.ranks) + " ranks " + (text.in_place ? "in place" : "out of place") +
                         (rooted(text.collective) ? ", root " + std::to_string(text.root) : std::string()) +
                         ", count a multiple of " + std::to_string(text.chunks)};
  }
  const std::uint64_t unit = c.count / text.chunks;
  Schedule s;
  s.algorithm = text.algorithm;
  s.shape = c;
  s.participants = text.participants;
  for (Participant& participant : s.participants) {
    participant.scratch *= unit;
    for (Step& step : participant.steps) {
      for (Range* range : {&step.from, &step.to}) {
        range->offset = range->offset * unit;
        range->count *= unit;
      }
    }
  }
  Status valid = validate(s);
  if (!valid) return Error{"", text.file + ": " + valid.error().text()};
  return s;
}

}  // namespace collcheck
