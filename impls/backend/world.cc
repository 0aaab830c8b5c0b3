// The World helpers every backend's setting up shares: an allgather that carries each member's
// failure beside its bytes (world.h).
#include "impls/backend/world.h"

#include <cstring>

namespace collcheck {
namespace {

// A member's part of allgather_unless_failed: a tag, then its bytes or its error's text.
enum class Tag : std::uint8_t { Bytes = 0, Failed = 1 };

std::vector<std::byte> tagged(Tag tag, std::span<const std::byte> body) {
  std::vector<std::byte> part;
  part.reserve(body.size() + 1);
  part.push_back(static_cast<std::byte>(tag));
  part.insert(part.end(), body.begin(), body.end());
  return part;
}

}  // namespace

Result<std::vector<std::vector<std::byte>>> allgather_unless_failed(World& world, std::span<const std::byte> mine,
                                                                    const std::string& failed) {
  const std::vector<std::byte> part = failed.empty()
                                          ? tagged(Tag::Bytes, mine)
                                          : tagged(Tag::Failed, std::as_bytes(std::span(failed.data(), failed.size())));
  std::vector<std::vector<std::byte>> all = world.allgather(part);
  for (std::size_t member = 0; member < all.size(); ++member) {
    const std::vector<std::byte>& theirs = all[member];
    if (theirs.empty() || theirs.front() != static_cast<std::byte>(Tag::Failed)) continue;
    std::string text(theirs.size() - 1, '\0');
    std::memcpy(text.data(), theirs.data() + 1, text.size());
    return Error{"", "rank " + std::to_string(member) + ": " + text};
  }
  for (std::vector<std::byte>& theirs : all) {
    if (!theirs.empty()) theirs.erase(theirs.begin());
  }
  return all;
}

std::string first_failure(World& world, const std::string& failed) {
  const Result<std::vector<std::vector<std::byte>>> all = allgather_unless_failed(world, {}, failed);
  return all ? std::string() : all.error().message;
}

}  // namespace collcheck
