// Shared segments of a world's members: creating, mapping and unlinking them (shared_segment.h).
#include "impls/worlds/shared_segment.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "impls/worlds/leftovers.h"
#include "reference/memory.h"

namespace collcheck {
namespace {

std::string with_errno(const std::string& what) { return what + ": " + std::strerror(errno); }

// Gives the file its `bytes` now. A tmpfs too small for them (a container's /dev/shm is 64 MiB
// unless `docker run --shm-size` says more) takes ftruncate's size all the same and kills the
// process with SIGBUS at the first page it cannot give, mid-run, which read as the backend's crash.
int reserve(int fd, std::size_t bytes) {
  int error = 0;
  do {
    error = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  } while (error == EINTR);
  return error;
}

std::string free_space(const char* folder) {
  std::error_code error;
  const std::filesystem::space_info space = std::filesystem::space(folder, error);
  return error ? "" : " (" + format_bytes(space.available) + " free)";
}

}  // namespace

Result<SegmentPlace> create_segment(const std::string& job, int rank, std::size_t bytes, std::byte*& base,
                                    const std::string& field) {
  const std::string name = "/" + segment_name(job, rank);
  std::string no_room;  // where there was none, said
  for (const bool in_shm : {true, false}) {
    const std::string path = in_shm ? name : "/tmp" + name;
    const SegmentPlace place = (in_shm ? "s" : "f") + path;
    const int fd = in_shm ? ::shm_open(path.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600)
                          : ::open(path.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) {
      if (in_shm) continue;
      return Error{field, with_errno("cannot create a segment (shm_open, then " + path + ")")};
    }
    if (const int error = reserve(fd, bytes); error != 0) {
      ::close(fd);
      unlink_segment(place);
      if (error != ENOSPC) return Error{field, "cannot size " + path + ": " + std::strerror(error)};
      no_room += (no_room.empty() ? "" : "; ") + (in_shm ? "/dev/shm" + free_space("/dev/shm") : path) + ": " +
                 std::strerror(error);
      continue;
    }
    void* mapped = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    const std::string error = with_errno("cannot map " + path);
    ::close(fd);
    if (mapped == MAP_FAILED) {
      unlink_segment(place);
      return Error{field, error};
    }
    base = static_cast<std::byte*>(mapped);
    return place;
  }
  return Error{field, std::string(kNoRoomForSegment) + " for rank " + std::to_string(rank) + "'s " +
                          format_bytes(bytes) + " segment: " + no_room +
                          " (a container's /dev/shm is 64 MiB unless docker run --shm-size says more)"};
}

bool says_no_room_for_segment(std::string_view error) {
  return error.find(kNoRoomForSegment) != std::string_view::npos;
}

std::byte* map_segment(const SegmentPlace& place, std::size_t bytes, std::string& error) {
  const std::string path = place.substr(1);
  const int fd = place[0] == 's' ? ::shm_open(path.c_str(), O_RDWR, 0) : ::open(path.c_str(), O_RDWR);
  if (fd < 0) {
    error = with_errno("cannot open " + path);
    return nullptr;
  }
  void* mapped = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (mapped == MAP_FAILED) error = with_errno("cannot map " + path);
  ::close(fd);
  return mapped == MAP_FAILED ? nullptr : static_cast<std::byte*>(mapped);
}

void unlink_segment(const SegmentPlace& place) {
  if (place.size() < 2) return;
  const std::string path = place.substr(1);
  place[0] == 's' ? ::shm_unlink(path.c_str()) : ::unlink(path.c_str());
}

}  // namespace collcheck
