// The toml++ implementation, compiled once with lib/config's settings (see toml.h).
#define TOML_IMPLEMENTATION
#include "toml.h"
