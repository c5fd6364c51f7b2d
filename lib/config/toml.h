// The one way lib/config includes toml++.
//
// The whole project builds with -fno-exceptions, so toml++ must be built with
// TOML_EXCEPTIONS=0: toml::parse then returns a parse_result instead of throwing. Debian's
// libtomlplusplus.so is built with exceptions (only the toml::v3::ex ABI namespace is in
// it), so we cannot link it: toml_impl.cpp compiles the implementation into this library
// instead, and every file of the library must see the same settings, hence this header.
// toml++ stays private to lib/config; no public header includes it.
#pragma once

#ifdef TOML_LIB_MAJOR
#error "include toml.h before any other toml++ header"
#endif

#define TOML_HEADER_ONLY 0
#define TOML_EXCEPTIONS 0
#define TOML_ENABLE_FORMATTERS 0
#define TOML_ENABLE_WINDOWS_COMPAT 0

#include <toml++/toml.h>
