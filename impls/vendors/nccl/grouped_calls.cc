// One round of grouped calls: the last member issues every part between begin and end (grouped_calls.h).
#include "impls/vendors/nccl/grouped_calls.h"

#include <map>
#include <utility>

namespace collcheck {

GroupedCalls::GroupedCalls(int members, std::function<void()> begin, std::function<int()> end)
    : begin_(std::move(begin)), end_(std::move(end)), parts_(static_cast<std::size_t>(members), nullptr),
      codes_(static_cast<std::size_t>(members), 0) {}

Result<int> GroupedCalls::join(int member, const Part& part, Clock::time_point deadline) {
  std::unique_lock<std::mutex> guard(lock_);
  if (!broken_.empty()) return Error{"", broken_};
  parts_[static_cast<std::size_t>(member)] = &part;
  if (++joined_ < members()) return wait_for_round(guard, member, deadline);
  return issue(guard, member);
}

Result<int> GroupedCalls::wait_for_round(std::unique_lock<std::mutex>& guard, int member, Clock::time_point deadline) {
  const std::uint64_t round = round_;
  const auto done = [&] { return round_ != round || !broken_.empty(); };
  while (!done()) {
    if (issuing_) {  // past the point of no return: the parts are running
      issued_.wait(guard, done);
    } else if (issued_.wait_until(guard, deadline) == std::cv_status::timeout && !done() && !issuing_) {
      std::string missing;
      for (std::size_t other = 0; other < parts_.size(); ++other) {
        if (parts_[other] == nullptr) missing += (missing.empty() ? "" : ", ") + std::to_string(other);
      }
      broken_ = "member " + std::to_string(member) + " waited past its deadline for member(s) " + missing +
                " to join the grouped call";
      issued_.notify_all();
    }
  }
  if (round_ != round) return codes_[static_cast<std::size_t>(member)];
  return Error{"", broken_};
}

Result<int> GroupedCalls::issue(std::unique_lock<std::mutex>& guard, int member) {
  issuing_ = true;
  const std::vector<const Part*> parts = parts_;
  guard.unlock();
  std::vector<int> codes;
  codes.reserve(parts.size());
  begin_();
  for (const Part* part : parts) codes.push_back((*part)());
  const int ended = end_();
  for (int& code : codes) {
    if (code == 0) code = ended;
  }
  guard.lock();
  codes_ = std::move(codes);
  parts_.assign(parts_.size(), nullptr);
  joined_ = 0;
  issuing_ = false;
  ++round_;
  issued_.notify_all();
  return codes_[static_cast<std::size_t>(member)];
}

void GroupedCalls::abandon(const std::string& why) {
  const std::lock_guard<std::mutex> guard(lock_);
  if (broken_.empty()) broken_ = why;
  issued_.notify_all();
}

std::shared_ptr<GroupedCalls> grouped_calls_of(const std::string& world, int members, std::function<void()> begin,
                                               std::function<int()> end) {
  static std::mutex lock;
  static std::map<std::string, std::weak_ptr<GroupedCalls>> worlds;
  const std::lock_guard<std::mutex> guard(lock);
  std::erase_if(worlds, [](const auto& known) { return known.second.expired(); });
  std::weak_ptr<GroupedCalls>& known = worlds[world];
  std::shared_ptr<GroupedCalls> group = known.lock();
  if (!group) {
    group = std::make_shared<GroupedCalls>(members, std::move(begin), std::move(end));
    known = group;
  }
  return group;
}

}  // namespace collcheck
