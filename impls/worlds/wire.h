// How rank runs and run requests travel between processes (launcher <-> workers, lockstep
// ranks): a small length-prefixed binary encoding, with the case in its text form.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "impls/backend/rank_backend.h"
#include "reference/case.h"
#include "reference/result.h"

namespace collcheck::wire {

class Writer {
 public:
  void u64(std::uint64_t);
  void f64(double);
  void bytes(std::span<const std::byte>);
  void text(std::string_view);
  void reserve(std::size_t bytes) { data_.reserve(bytes); }
  std::vector<std::byte>& data() { return data_; }

 private:
  std::vector<std::byte> data_;
};

// Reads what Writer wrote; a short or malformed buffer makes ok() false (values read then are 0).
class Reader {
 public:
  explicit Reader(std::span<const std::byte> data) : data_(data) {}
  std::uint64_t u64();
  double f64();
  std::vector<std::byte> bytes();
  std::string text();
  bool ok() const { return ok_; }

 private:
  std::span<const std::byte> take(std::size_t);
  std::span<const std::byte> data_;
  std::size_t at_ = 0;
  bool ok_ = true;
};

// One case for every rank: the case, the options (without hook), and this rank's given input.
struct RunRequest {
  Case c;
  RankRunOptions options;
  std::optional<std::vector<std::byte>> input;
  std::string fault_plan;        // the run's fault plan as text (the worker builds the hook)
  std::uint64_t fault_seed = 0;  // what the faults are drawn from: the run's schedule seed
};
std::vector<std::byte> encode(const RunRequest&);
Result<RunRequest> decode_request(std::span<const std::byte>);

// A run's reply, made at its size at once. Given the run to keep (an rvalue), each call's bytes are
// let go of as they are written: a worker's results of gigabytes are not held twice.
std::vector<std::byte> encode(const RankRun&);
std::vector<std::byte> encode(RankRun&&);
Result<RankRun> decode_run(std::span<const std::byte>);

// What a worker says first: its rank, process id and host, and why it cannot serve ("" when it
// can). A malformed hello reads back with that as its error.
struct Hello {
  int rank = -1;
  long pid = 0;
  std::string host;
  std::string error;
};
std::vector<std::byte> encode(const Hello&);
Hello decode_hello(std::span<const std::byte>);

// Every rank's run of one case as the harness sees it: calls[k][rank]; Detected when any rank
// saw an error (the errors joined, each with its rank).
RepeatedRun combine(std::vector<RankRun> ranks);

}  // namespace collcheck::wire
