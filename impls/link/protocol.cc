// The link protocol's decisions, shared by every executor (protocol.h says how it works): the
// settings, the jitter, the receiver's judgement and requests, the sender's retry bookkeeping.
#include "impls/link/protocol.h"

#include <algorithm>

#include "reference/random.h"

namespace collcheck {

LinkSettings resolve(const LinkProtocol& protocol, const LinkClock& clock, double deadline) {
  LinkSettings settings;
  settings.checksums = protocol.checksums;
  settings.check_last = protocol.check_last;
  settings.reliable = protocol.reliable;
  settings.retries = std::max(protocol.retries, 0);
  settings.forever = protocol.timeout < 0;
  // The user's timeout or the clock's default, within the clock's share of the deadline (no limit
  // where the deadline is none: 0 or infinite).
  const double wanted = protocol.timeout > 0 ? protocol.timeout : clock.default_timeout;
  const double share = deadline * clock.deadline_share;
  settings.timeout = share > 0 && share < wanted ? share : wanted;
  // All the retransmissions of one message (jittered by at most a quarter) stay within the timeout.
  settings.retransmit =
      protocol.retransmit > 0 ? protocol.retransmit : settings.timeout / (settings.retries + kRetransmitSpare);
  settings.reorder_window = clock.reorder_window;
  return settings;
}

double RetransmitJitter::drawn(std::uint64_t number, double interval) const {
  const double unit = unit_interval(mix64(seed_ ^ mix64(number)));
  return interval * (1 - kRetransmitJitter + 2 * kRetransmitJitter * unit);
}

PieceVerdict LinkReceiver::judge(const PieceLabel& piece, std::span<const std::byte> data, std::size_t message_bytes,
                                 const LinkSettings& settings) const {
  if (piece.sequence < due_message_ || (piece.sequence == due_message_ && piece.offset < due_byte_)) {
    return PieceVerdict::Duplicate;
  }
  if (piece.sequence != due_message_ || piece.offset != due_byte_) return PieceVerdict::OutOfOrder;
  if (due_byte_ + piece.bytes > message_bytes) return PieceVerdict::Overlong;
  if (settings.checksums && checksum(data) != piece.sum) return PieceVerdict::Damaged;
  return PieceVerdict::Take;
}

bool LinkReceiver::take(std::size_t bytes, std::size_t message_bytes, double now) {
  quiet_since_ = now;
  due_byte_ += bytes;
  if (due_byte_ < message_bytes) return false;
  ++due_message_;
  due_byte_ = 0;
  return true;
}

bool LinkReceiver::ask(double now, const LinkSettings& settings, RetransmitJitter* patience) {
  const bool outstanding = asked_ && asked_message_ == due_message_ && asked_byte_ == due_byte_;
  if (outstanding && now - quiet_since_ <= settings.retransmit) return false;
  ask_anyway(now, settings, patience);
  return true;
}

void LinkReceiver::ask_anyway(double now, const LinkSettings& settings, RetransmitJitter* patience) {
  asked_ = true;
  asked_message_ = due_message_;
  asked_byte_ = due_byte_;
  quiet_since_ = now;
  if (patience != nullptr) patience_ = patience->draw(settings.retransmit);
}

bool LinkReceiver::impatient(double now, const LinkSettings& settings) const {
  return now - quiet_since_ > (patience_ > 0 ? patience_ : settings.retransmit);
}

std::uint32_t LinkSender::attempt(std::uint64_t sequence) const {
  if (sequence < first_ || sequence - first_ >= kept()) return 0;
  return records_[head_ + static_cast<std::size_t>(sequence - first_)].attempt;
}

LinkSender::Record& LinkSender::record(std::uint64_t sequence) {
  if (kept() == 0) first_ = sequence;
  for (; sequence < first_; --first_) {  // an earlier message than the first kept: rare
    if (head_ > 0) {
      records_[--head_] = Record{};
    } else {
      records_.insert(records_.begin(), Record{});
    }
  }
  const auto index = static_cast<std::size_t>(sequence - first_);
  if (index >= kept()) records_.resize(head_ + index + 1);
  return records_[head_ + index];
}

void LinkSender::forget_records(std::uint64_t sequence) {
  if (first_ < sequence) {
    const std::size_t forget = static_cast<std::size_t>(std::min<std::uint64_t>(sequence - first_, kept()));
    head_ += forget;
    first_ += forget;
  }
  if (head_ == records_.size()) {  // none kept: the storage is reused from its start
    records_.clear();
    head_ = 0;
    first_ = std::max(first_, sequence);
  } else if (head_ * 2 > records_.size()) {
    records_.erase(records_.begin(), records_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
}

std::string link_stream_text(const std::string& to, const std::string& from, int channel, std::uint64_t call) {
  return to + ": from " + from + " on channel " + std::to_string(channel) + " (call " + std::to_string(call) + ")";
}

std::string link_fault_text(PieceVerdict verdict, const PieceLabel& piece, const LinkReceiver& receiver,
                            std::size_t message_bytes) {
  const std::string due = std::to_string(receiver.due_message());
  const std::string at = std::to_string(receiver.due_byte());
  const std::string sequence = std::to_string(piece.sequence);
  if (verdict == PieceVerdict::OutOfOrder) {
    const bool whole = piece.offset == 0 && receiver.due_byte() == 0;
    const std::string arrived = whole ? "message " + sequence + " arrived where message " + due
                                      : "byte " + std::to_string(piece.offset) + " of message " + sequence +
                                            " arrived where byte " + at + " of message " + due;
    return arrived + " was due (a message lost or out of order)";
  }
  if (verdict == PieceVerdict::Overlong) {
    return "a piece of " + std::to_string(piece.bytes) + " bytes at byte " + at + " of message " + due +
           ", which has " + std::to_string(message_bytes);
  }
  const std::string where = piece.bytes == message_bytes
                                ? ""
                                : " in the piece at byte " + at + " (" + std::to_string(piece.bytes) + " bytes)";
  return "message " + sequence + " (attempt " + std::to_string(piece.attempt) + ") failed its checksum" + where;
}

std::string link_gave_up_text(std::uint64_t sequence, const LinkSettings& settings) {
  return "message " + std::to_string(sequence) + " not taken after " + std::to_string(settings.retries) +
         " retransmissions";
}

}  // namespace collcheck
