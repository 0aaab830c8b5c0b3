// A user's backend plugin (include/collcheck/plugin.h) loaded with dlopen and checked: its
// exported struct of the ABI version this collcheck loads, and what it says it runs.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "collcheck/plugin.h"
#include "impls/backend/backend.h"
#include "impls/backend/pinned_files.h"
#include "reference/result.h"

namespace collcheck {

// One `key=value` of a plugin's options or of the knobs drawn for one call.
struct PluginOption {
  std::string key, value;
};

// `key=value,...` as options (every item must have its '=', no key twice); errors name the item.
Result<std::vector<PluginOption>> parse_plugin_options(std::string_view text);

// The options as the ABI passes them: pointers into `options`, valid while it is unchanged.
std::vector<collcheck_option_v1> abi_options(const std::vector<PluginOption>& options);

// Loads the plugin at `path` (dlopen: a path with a '/' is a file, a bare name is looked for as
// the dynamic linker looks for libraries) and checks its struct: exported under
// COLLCHECK_PLUGIN_SYMBOL_V1, abi_version 1, every function there. The library stays loaded for
// the process's life (its struct and threads may outlive any one backend). Errors name the plugin
// and the cause: the loader's own message, a missing symbol, another ABI version, a null function.
Result<const collcheck_backend_v1*> load_plugin(const std::string& path);

// The plugin's file as this process loaded it, pinned for the worlds it launches on this host
// (impls/backend/pinned_files.h): the file kept open, so that a plugin rebuilt while a campaign
// runs (removed, or half written) does not change what its later worlds load; load_plugin() in a
// world's process loads the pinned file for the path it is given. Empty where the file cannot be
// found or opened (the path is loaded then).
PinnedEnvironment pinned_plugin_environment(const collcheck_backend_v1* plugin, const std::string& path);

// What the plugin says it runs with these options (its capabilities function), as Capabilities;
// the knobs the options leave out are drawn per run. Errors name the plugin and the field: the
// plugin's own error, a bit that names nothing, ranks out of 1..kMaxRanks, memory it cannot have.
Result<Capabilities> plugin_capabilities(const collcheck_backend_v1& plugin, const std::string& path,
                                         const std::vector<PluginOption>& options);

// `--backend plugin 'PATH': CAUSE`: an error about the plugin at `path`, its path in full.
Error plugin_error(const std::string& path, const std::string& cause);

// The plugin's message in a buffer it filled (cut at its size if it left no NUL), or `fallback`
// when it wrote nothing.
std::string plugin_message(const char* buffer, std::size_t size, std::string_view fallback);

}  // namespace collcheck
