// The wire encoding: little-endian 64-bit integers, doubles by bits, byte strings and text with
// a length first; requests carry the case's text form so they read back exactly.
#include "impls/worlds/wire.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <type_traits>

#include "reference/numbers.h"

namespace collcheck::wire {

void Writer::u64(std::uint64_t value) {
  for (int i = 0; i < 8; ++i) data_.push_back(static_cast<std::byte>(value >> (8 * i)));
}

void Writer::f64(double value) { u64(std::bit_cast<std::uint64_t>(value)); }

void Writer::bytes(std::span<const std::byte> value) {
  u64(value.size());
  data_.insert(data_.end(), value.begin(), value.end());
}

void Writer::text(std::string_view value) { bytes(std::as_bytes(std::span(value.data(), value.size()))); }

std::span<const std::byte> Reader::take(std::size_t n) {
  if (!ok_ || n > data_.size() - at_) {
    ok_ = false;
    return {};
  }
  std::span<const std::byte> out = data_.subspan(at_, n);
  at_ += n;
  return out;
}

std::uint64_t Reader::u64() {
  std::span<const std::byte> raw = take(8);
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < raw.size(); ++i) value |= static_cast<std::uint64_t>(raw[i]) << (8 * i);
  return value;
}

double Reader::f64() { return std::bit_cast<double>(u64()); }

std::vector<std::byte> Reader::bytes() {
  const std::uint64_t n = u64();
  std::span<const std::byte> raw = take(static_cast<std::size_t>(n));
  return {raw.begin(), raw.end()};
}

std::string Reader::text() {
  std::vector<std::byte> raw = bytes();
  return {reinterpret_cast<const char*>(raw.data()), raw.size()};
}

namespace {

// The RankRunOptions fields a request carries, in wire order: the one list that both writing and
// reading follow (the request's own input follows them; a hook does not travel).
template <class Options, class Visit>
void each_option(Options& options, Visit&& visit) {
  visit(options.calls);
  visit(options.deadline);
  visit(options.timed);
  visit(options.warmup);
  visit(options.iterations);
  visit(options.checked);
  visit(options.knobs);
}

// One field on the wire: integers and flags as u64, seconds as f64, settings as text.
void put(Writer& writer, int value) { writer.u64(static_cast<std::uint64_t>(value)); }
void put(Writer& writer, bool value) { writer.u64(value); }
void put(Writer& writer, double value) { writer.f64(value); }
void put(Writer& writer, const std::string& value) { writer.text(value); }
void get(Reader& reader, int& value) { value = static_cast<int>(reader.u64()); }
void get(Reader& reader, bool& value) { value = reader.u64() != 0; }
void get(Reader& reader, double& value) { value = reader.f64(); }
void get(Reader& reader, std::string& value) { value = reader.text(); }

}  // namespace

std::vector<std::byte> encode(const RunRequest& request) {
  Writer w;
  w.text(to_string(request.c));
  each_option(request.options, [&w](const auto& field) { put(w, field); });
  w.u64(request.input.has_value());
  if (request.input) w.bytes(*request.input);
  w.text(request.fault_plan);
  w.u64(request.fault_seed);
  return std::move(w.data());
}

Result<RunRequest> decode_request(std::span<const std::byte> data) {
  Reader r(data);
  RunRequest request;
  const std::string text = r.text();
  each_option(request.options, [&r](auto& field) { get(r, field); });
  if (r.u64() != 0) request.input = r.bytes();
  request.fault_plan = r.text();
  request.fault_seed = r.u64();
  if (!r.ok()) return Error{"request", "truncated run request"};
  Result<Case> c = parse_case(text);
  if (!c) return c.error();
  request.c = *c;
  return request;
}

namespace {

template <class Run>
std::vector<std::byte> encode_run(Run& run) {
  std::size_t size = std::size_t{8} * 6 + run.error.size();
  for (const RankResult& call : run.calls) size += std::size_t{8} * 3 + call.output.size() + call.input.size();
  Writer w;
  w.reserve(size);
  w.u64(static_cast<std::uint64_t>(run.outcome));
  w.text(run.error);
  w.f64(run.seconds);
  w.u64(run.calls.size());
  for (auto& call : run.calls) {
    w.bytes(call.output);
    w.bytes(call.input);
    w.u64(call.guards_intact);
    if constexpr (!std::is_const_v<Run>) {
      call.output = {};
      call.input = {};
    }
  }
  w.u64(run.world_broken);
  w.u64(run.refused);
  return std::move(w.data());
}

}  // namespace

std::vector<std::byte> encode(const RankRun& run) { return encode_run(run); }
std::vector<std::byte> encode(RankRun&& run) { return encode_run(run); }

Result<RankRun> decode_run(std::span<const std::byte> data) {
  Reader r(data);
  RankRun run;
  run.outcome = static_cast<Outcome>(std::min<std::uint64_t>(r.u64(), static_cast<std::uint64_t>(Outcome::Crash)));
  run.error = r.text();
  run.seconds = r.f64();
  const std::uint64_t calls = r.u64();
  for (std::uint64_t k = 0; k < calls && r.ok(); ++k) {
    RankResult call;
    call.output = r.bytes();
    call.input = r.bytes();
    call.guards_intact = r.u64() != 0;
    run.calls.push_back(std::move(call));
  }
  run.world_broken = r.u64() != 0;
  run.refused = r.u64() != 0;
  if (!r.ok()) return Error{"result", "truncated rank result"};
  return run;
}

std::vector<std::byte> encode(const Hello& hello) {
  Writer w;
  w.u64(static_cast<std::uint64_t>(hello.rank));
  w.u64(static_cast<std::uint64_t>(hello.pid));
  w.text(hello.host);
  w.text(hello.error);
  return std::move(w.data());
}

Hello decode_hello(std::span<const std::byte> data) {
  Reader r(data);
  Hello hello;
  hello.rank = static_cast<int>(r.u64());
  hello.pid = static_cast<long>(r.u64());
  hello.host = r.text();
  hello.error = r.text();
  if (!r.ok()) hello.error = "malformed hello";
  return hello;
}

RepeatedRun combine(std::vector<RankRun> ranks) {
  RepeatedRun out;
  std::size_t calls = ranks.empty() ? 0 : ranks[0].calls.size();
  // Each error once, with the ranks that said it (the rest of a world stopped by one rank all
  // say the same), in the order of the first rank to say it.
  std::vector<std::pair<std::string, std::vector<std::uint64_t>>> errors;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const RankRun& run = ranks[r];
    out.seconds = std::max(out.seconds, run.seconds);
    calls = std::min(calls, run.calls.size());
    if (run.outcome == Outcome::Ok) continue;
    if (out.outcome == Outcome::Ok || run.outcome > out.outcome) out.outcome = run.outcome;
    out.refused = out.refused || run.refused;
    const auto said =
        std::find_if(errors.begin(), errors.end(), [&](const auto& error) { return error.first == run.error; });
    if (said == errors.end()) {
      errors.push_back({run.error, {r}});
    } else {
      said->second.push_back(r);
    }
  }
  for (const auto& [error, by] : errors) {
    out.error += (out.error.empty() ? "" : "; ") + ranks_text(by) + ": " + error;
  }
  // A refusal stands only where nothing worse than `detected` happened elsewhere (a rank that hung
  // or died beside it is a finding of its own).
  out.refused = out.refused && out.outcome == Outcome::Detected;
  if (out.outcome != Outcome::Ok) return out;
  out.calls.assign(calls, std::vector<RankResult>(ranks.size()));
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    for (std::size_t k = 0; k < calls; ++k) out.calls[k][r] = std::move(ranks[r].calls[k]);
  }
  return out;
}

}  // namespace collcheck::wire
