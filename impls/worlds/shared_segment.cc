// Shared segments of a world's members: creating, mapping and unlinking them (shared_segment.h).
#include "impls/worlds/shared_segment.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "impls/worlds/leftovers.h"

namespace collcheck {
namespace {

std::string with_errno(const std::string& what) { return what + ": " + std::strerror(errno); }

}  // namespace

Result<SegmentPlace> create_segment(const std::string& job, int rank, std::size_t bytes, std::byte*& base,
                                    const std::string& field) {
  std::string name = "/" + segment_name(job, rank);
  int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  SegmentPlace place = "s" + name;
  if (fd < 0) {
    name = "/tmp" + name;
    place = "f" + name;
    fd = ::open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) return Error{field, with_errno("cannot create a segment (shm_open, then " + name + ")")};
  }
  void* mapped = MAP_FAILED;
  if (::ftruncate(fd, static_cast<off_t>(bytes)) == 0) {
    mapped = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  const std::string error = with_errno("cannot size or map " + name);
  ::close(fd);
  if (mapped == MAP_FAILED) {
    unlink_segment(place);
    return Error{field, error};
  }
  base = static_cast<std::byte*>(mapped);
  return place;
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
