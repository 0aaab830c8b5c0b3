// Files pinned for a campaign's worlds: what a world's processes load or read (a user's plugin, a
// schedule file) is what the launching process loaded or read when it first did, whatever becomes
// of the path since (a rebuild removes a library and writes a new one, half written for a while;
// an editor rewrites a schedule file).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace collcheck {

// Pinning works as follows. The launching process keeps a descriptor open for its life: the
// loaded file itself (`kept_open`), or a sealed copy in memory of the bytes it read
// (`sealed_copy`), which no later write can change. pin_for_worlds() names that descriptor as
// /proc/PID/fd/N, with the path it stands for, in two variables that the worlds it launches on
// this host receive (RankBackendSpec::same_host_environment; never across hosts, where that
// name means nothing). In a world's process, pinned_or() gives the pinned file for that very path
// and role, which is opened in place of the path; messages still name the path.
using PinnedEnvironment = std::vector<std::pair<std::string, std::string>>;

// The variables that pin `descriptor` (open for this process's life) as what `path` names, for
// `role` (`PLUGIN`, `SCHEDULE`: COLLCHECK_PINNED_<ROLE>_PATH and _FILE); empty when `descriptor`
// is negative.
PinnedEnvironment pin_for_worlds(std::string_view role, const std::string& path, int descriptor);

// How a process on this host opens `descriptor` of this process: /proc/PID/fd/N.
std::string pinned_name(int descriptor);
// How a process on this host runs this process's own program, whatever became of its file since:
// /proc/PID/exe.
std::string pinned_program();

// `file` opened for reading, once for this process's life (the same descriptor on every call);
// -1 where it cannot be.
int kept_open(const std::string& file);

// A sealed copy of `bytes` in memory (memfd: no write, growth or shrink once made), its
// descriptor kept for this process's life; -1 where none can be made.
int sealed_copy(std::string_view bytes);

// In a world's process: the file pinned under `role` for `path` where its launcher pinned one
// (and it can be read), else `path`.
std::string pinned_or(std::string_view role, const std::string& path);

}  // namespace collcheck
