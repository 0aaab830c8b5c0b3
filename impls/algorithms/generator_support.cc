// The helpers every schedule generator shares (see generator_support.h).
#include "impls/algorithms/generator_support.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace collcheck::generators {

void broken(std::string_view invariant) {
  throw std::logic_error("schedule generator invariant broken: " + std::string(invariant));
}

Schedule start(const Case& shape, std::string_view algorithm) {
  check(shape.nranks >= 1, "at least one rank");
  Schedule schedule;
  schedule.algorithm = std::string(algorithm);
  schedule.shape = shape;
  schedule.participants.resize(static_cast<std::size_t>(shape.nranks));
  return schedule;
}

std::size_t chunk_count(std::size_t length, std::size_t chunk) {
  if (length == 0) return 0;
  if (chunk == 0) return 1;
  return length / chunk + (length % chunk != 0 ? 1 : 0);  // (length + chunk - 1) / chunk wraps for huge chunks
}

Slice chunk_of(std::size_t length, std::size_t chunk, std::size_t k) {
  if (chunk == 0) return k == 0 ? Slice{0, length} : Slice{length, 0};
  if (k >= chunk_count(length, chunk)) return Slice{length, 0};
  const std::size_t offset = k * chunk;
  return Slice{offset, std::min(chunk, length - offset)};
}

std::vector<Piece> pieces(std::size_t length, const Knobs& knobs) {
  std::vector<Piece> out;
  std::size_t covered = 0;
  for (int channel = 0; channel < knobs.channels; ++channel) {
    const Slice part = slice(length, static_cast<std::size_t>(knobs.channels), static_cast<std::size_t>(channel));
    for (std::size_t k = 0; k < chunk_count(part.count, knobs.chunk); ++k) {
      const Slice chunk = chunk_of(part.count, knobs.chunk, k);
      out.push_back(Piece{channel, part.offset + chunk.offset, chunk.count});
      covered += chunk.count;
    }
  }
  check(covered == length, "the pieces cover the span exactly");
  return out;
}

void send(Schedule& schedule, int participant, int to, Range from, int channel) {
  schedule.add(participant, send_step(to, from, channel));
}

void recv(Schedule& schedule, int participant, int from_peer, Range to, int channel) {
  schedule.add(participant, recv_step(from_peer, to, channel));
}

void recv_reduce(Schedule& schedule, int participant, int from_peer, Range from, Range to, int channel) {
  schedule.add(participant, recv_reduce_step(from_peer, from, to, channel));
}

void copy(Schedule& schedule, int participant, Range from, Range to, int channel) {
  if (copy_needed(from, to)) schedule.add(participant, copy_step(from, to, channel));
}

Schedule on_demand(const Case& shape, std::string_view algorithm, MakeSteps rank_steps) {
  Schedule schedule = start(shape, algorithm);
  schedule.make_steps = std::move(rank_steps);
  return schedule;
}

void copy_alone(Schedule& schedule, std::size_t count) {
  if (schedule.shape.in_place) return;
  copy(schedule, 0, at(BufferKind::Input, 0, count), at(BufferKind::Output, 0, count), 0);
}

std::vector<Slice> block_ranges(const std::vector<int>& blocks, std::size_t block, const Piece& piece) {
  std::vector<Slice> out;
  if (piece.count == 0) return out;
  for (int b : blocks) {
    const std::size_t offset = static_cast<std::size_t>(b) * block + piece.offset;
    if (!out.empty() && out.back().offset + out.back().count == offset) {
      out.back().count += piece.count;
    } else {
      out.push_back(Slice{offset, piece.count});
    }
  }
  return out;
}

int floor_power_of_two(int n) {
  check(n >= 1, "a power of two below a positive number");
  int power = 1;
  while (power <= n / 2) power *= 2;
  return power;
}

int ceil_log2(int n) {
  int log = 0;
  while ((1 << log) < n) ++log;
  return log;
}

}  // namespace collcheck::generators
