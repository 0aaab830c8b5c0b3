// collcheck's text form of schedules: every built-in algorithm written and read back is the
// same schedule step for step (channels, streams and waits included);
// read at a multiple of its count it still proves; bad text is refused with its line and the
// values allowed; and a broken file's proof names the line of the step.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "impls/algorithms/algorithms.h"
#include "impls/prove/proof.h"
#include "impls/schedule/schedule_file.h"

namespace collcheck {
namespace {

// "" where the two agree on every participant, scratch, step and wait; else the first difference.
std::string difference(const Schedule& expected, const Schedule& read) {
  if (expected.nparticipants() != read.nparticipants()) return "participants differ";
  for (int p = 0; p < expected.nparticipants(); ++p) {
    const Participant& want = expected.participants[static_cast<std::size_t>(p)];
    const Participant& got = read.participants[static_cast<std::size_t>(p)];
    const std::string who = participant_name(expected, p);
    if (want.is_switch != got.is_switch || want.scratch != got.scratch) return who + ": kind or scratch differs";
    if (want.steps.size() != got.steps.size()) return who + ": step counts differ";
    if (want.waits != got.waits) return who + ": waits differ";
    for (std::size_t k = 0; k < want.steps.size(); ++k) {
      const Step &a = want.steps[k], &b = got.steps[k];
      const bool same = a.kind == b.kind && (!a.reads() || a.from == b.from) && (!a.writes() || a.to == b.to) &&
                        a.channel == b.channel && a.stream == b.stream &&
                        ((!a.sends() && !a.receives()) || a.peer == b.peer);
      if (!same)
        return describe(expected, p, static_cast<int>(k)) + " read back as " + describe(read, p, static_cast<int>(k));
    }
  }
  return "";
}

// Written and read back at the count it was written at, then at three times it (proven, where
// `proves`).
void round_trip(const Schedule& schedule, const std::string& what, bool proves = true) {
  Result<std::string> text = schedule_text(schedule);
  ASSERT_TRUE(text.ok()) << what << ": " << text.error().text();
  Result<ScheduleText> read = parse_schedule_text(*text, "exported");
  ASSERT_TRUE(read.ok()) << what << ": " << read.error().text() << "\n" << *text;
  Result<Schedule> again = text_schedule(*read, schedule.shape);
  ASSERT_TRUE(again.ok()) << what << ": " << again.error().text();
  EXPECT_EQ(difference(stored(schedule), *again), "") << what << "\n" << *text;
  Case larger = schedule.shape;
  larger.count *= 3;
  Result<Schedule> scaled = text_schedule(*read, larger);
  ASSERT_TRUE(scaled.ok()) << what << ": " << scaled.error().text();
  if (!proves) return;
  const Proof proof = prove(*scaled);
  EXPECT_TRUE(proof.ok) << what << " at count " << larger.count << ": " << proof.message;
}

TEST(ScheduleText, EveryAlgorithmRoundTripsStepForStep) {
  int tried = 0;
  for (const Algorithm& algorithm : all_algorithms()) {
    if (per_rank_counts(algorithm.collective)) continue;
    for (int ranks : {1, 2, 3, 5, 8}) {
      for (std::size_t count : {std::size_t{1}, std::size_t{7}, static_cast<std::size_t>(3 * ranks + 2)}) {
        for (bool in_place : {false, true}) {
          for (const Knobs& knobs : {Knobs{}, Knobs{2, 2, 2}}) {
            Case shape;
            shape.collective = algorithm.collective;
            shape.nranks = ranks;
            shape.count = count;
            shape.root = rooted(algorithm.collective) ? ranks - 1 : 0;
            shape.in_place = in_place;
            Result<Schedule> schedule = make_schedule(algorithm.name, shape, knobs);
            if (!schedule) continue;  // a shape the algorithm does not take
            ++tried;
            round_trip(*schedule, std::string(algorithm.name) + " " + to_string(shape));
          }
        }
      }
    }
  }
  EXPECT_GT(tried, 500);
}

// Streams and waits, which no built-in algorithm has: a ring with rank 0's later steps on a
// stream of their own, one of them waiting for an earlier step.
TEST(ScheduleText, StreamsAndWaitsRoundTrip) {
  Case shape;
  shape.nranks = 3;
  shape.count = 6;
  Result<Schedule> schedule = make_schedule("ring", shape);
  ASSERT_TRUE(schedule.ok()) << schedule.error().text();
  Participant& rank0 = schedule->participants[0];
  for (std::size_t k = 3; k < rank0.steps.size(); ++k) rank0.steps[k].stream = 1;
  rank0.add_after(4, 1);
  rank0.add_after(4, 2);
  ASSERT_TRUE(validate(*schedule).ok());
  round_trip(*schedule, "ring with streams and waits", false);
}

std::string ring_text() {
  Case shape;
  shape.nranks = 3;
  shape.count = 6;
  return *schedule_text(*make_schedule("ring", shape));
}

std::string edited(const std::string& text, const std::string& from, const std::string& to) {
  std::string out = text;
  const std::size_t at = out.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) out.replace(at, from.size(), to);
  return out;
}

TEST(ScheduleText, BadTextIsRefusedWithItsLineAndTheValuesAllowed) {
  const std::string ring = ring_text();
  const std::pair<std::string, std::string> cases[] = {
      {"", "empty"},
      {edited(ring, "collcheck-schedule 1", "collcheck-schedule 2"), "f.txt:1: a schedule's text starts with"},
      {edited(ring, "collective allreduce", "collective allreduces"), "f.txt:3: "},
      {edited(ring, "collective allreduce", "collective allgatherv"), "the v-collectives have no text form"},
      {edited(ring, "layout outofplace", "layout sideways"), "f.txt:5: layout sideways: must be inplace or outofplace"},
      {edited(ring, "ranks 3", "ranks 0"), "f.txt:4: "},
      {edited(ring, "layout outofplace\n", ""), "the header has no `layout` line"},
      {edited(ring, "rank 1 scratch", "rank 2 scratch"), "expected `rank 1 scratch S`"},
      {edited(ring, "  send 1 input:0+1", "  sned 1 input:0+1"),
       "`sned`: a step is send, recv, recv-reduce, copy or reduce"},
      {edited(ring, "  send 1 input:0+1", "  send 1 inbox:0+1"), "the buffer must be input, output or scratch"},
      {edited(ring, "  send 1 input:0+1", "  send 1 input:0"), "must be BUFFER:OFFSET+COUNT"},
      {edited(ring, "  send 1 input:0+1", "  send 1 input:0+1 lane=2"),
       "a step's options are channel=N, stream=N and after="},
      {edited(ring, "  send 1 input:0+1", "  send 1 input:0+1 after=0"),
       "the first step of a participant has no earlier"},
      {edited(ring, "  send 1 input:0+1", "  send 1"), "send: expected PEER RANGE"},
  };
  for (const auto& [text, expected] : cases) {
    Result<ScheduleText> read = parse_schedule_text(text, "f.txt");
    ASSERT_FALSE(read.ok()) << "accepted:\n" << text;
    EXPECT_NE(read.error().text().find(expected), std::string::npos) << read.error().text();
  }
  // Well formed but not a schedule: a send whose receive is gone (validate names the step).
  Result<ScheduleText> read = parse_schedule_text(edited(ring, "  send 1 input:0+1\n", ""), "f.txt");
  ASSERT_TRUE(read.ok()) << read.error().text();
  Case shape;
  shape.nranks = 3;
  shape.count = 6;
  Result<Schedule> schedule = text_schedule(*read, shape);
  ASSERT_FALSE(schedule.ok());
  EXPECT_NE(schedule.error().text().find("f.txt: "), std::string::npos) << schedule.error().text();
  // And a shape the file does not take.
  shape.count = 7;
  EXPECT_NE(text_schedule(*read, shape).error().text().find("count a multiple of 3"), std::string::npos);
}

// A reduction turned into a plain receive: the file reads, its proof fails, and the step the
// proof blames is named with its line of the file.
TEST(ScheduleText, ABrokenFilesProofNamesTheLine) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() / "collcheck-broken-ring.txt";
  std::ofstream(path) << edited(ring_text(), "recv-reduce 2 input:2+1 output:2+1", "recv 2 output:2+1");
  Result<ScheduleFile> file = read_schedule_file(path.string());
  ASSERT_TRUE(file.ok()) << file.error().text();
  const Case shape = schedule_file_shape(*file, 6);
  Result<Schedule> schedule = file->make(shape);
  ASSERT_TRUE(schedule.ok()) << schedule.error().text();
  const Proof proof = prove(*schedule);
  ASSERT_FALSE(proof.ok);
  EXPECT_NE(file->explain(shape, proof.message).find("[" + path.string() + ":"), std::string::npos)
      << file->explain(shape, proof.message);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace collcheck
