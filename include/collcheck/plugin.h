/* collcheck's backend plugin ABI (docs/plugins.md): include this header, fill in the current
 * version's struct and export it under its symbol. Each version lives in plugin_vN.h, unchanged
 * once released; this header names the current one. */
#ifndef COLLCHECK_PLUGIN_H
#define COLLCHECK_PLUGIN_H

#include "collcheck/plugin_v1.h"

#define COLLCHECK_PLUGIN_ABI_VERSION COLLCHECK_PLUGIN_ABI_VERSION_1
#define COLLCHECK_PLUGIN_SYMBOL COLLCHECK_PLUGIN_SYMBOL_V1
typedef collcheck_backend_v1 collcheck_backend;

#endif /* COLLCHECK_PLUGIN_H */
