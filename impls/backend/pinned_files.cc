// Files pinned for a campaign's worlds (see pinned_files.h).
#include "impls/backend/pinned_files.h"

#include <cstdlib>
#include <map>
#include <mutex>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace collcheck {
namespace {

std::string path_variable(std::string_view role) { return "COLLCHECK_PINNED_" + std::string(role) + "_PATH"; }
std::string file_variable(std::string_view role) { return "COLLCHECK_PINNED_" + std::string(role) + "_FILE"; }

}  // namespace

std::string pinned_name(int descriptor) {
  return "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(descriptor);
}

std::string pinned_program() { return "/proc/" + std::to_string(::getpid()) + "/exe"; }

PinnedEnvironment pin_for_worlds(std::string_view role, const std::string& path, int descriptor) {
  if (descriptor < 0) return {};
  return {{path_variable(role), path}, {file_variable(role), pinned_name(descriptor)}};
}

int kept_open(const std::string& file) {
  static std::mutex mutex;
  static std::map<std::string, int> opened;
  const std::lock_guard<std::mutex> lock(mutex);
  auto [place, fresh] = opened.try_emplace(file, -1);
  if (fresh) place->second = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  return place->second;
}

int sealed_copy(std::string_view bytes) {
  const int descriptor = ::memfd_create("collcheck-pinned", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (descriptor < 0) return -1;
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t wrote = ::write(descriptor, bytes.data() + written, bytes.size() - written);
    if (wrote <= 0) {
      ::close(descriptor);
      return -1;
    }
    written += static_cast<std::size_t>(wrote);
  }
  if (::fcntl(descriptor, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) != 0) {
    ::close(descriptor);
    return -1;
  }
  return descriptor;
}

std::string pinned_or(std::string_view role, const std::string& path) {
  const char* pinned_path = std::getenv(path_variable(role).c_str());
  const char* file = std::getenv(file_variable(role).c_str());
  if (pinned_path == nullptr || file == nullptr || path != pinned_path || ::access(file, R_OK) != 0) return path;
  return file;
}

}  // namespace collcheck
