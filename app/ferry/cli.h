// ferry's own command line: what follows `--` after the EAL arguments.
#pragma once

#include <string>
#include <string_view>

namespace ferry::app {

struct options {
    std::string config_path;   // empty: the embedded default config
    std::string drivers_dir;   // empty: search the default locations
    bool check = false;        // validate config + profiles, print, exit
    bool print_default = false;
    bool help = false;
    bool version = false;
};

struct cli_result {
    options opts;
    std::string error;  // non-empty: bad usage, exit 2
};

// Parses ferry's arguments (argv[0] is not included).
cli_result parse_cli(int argc, char **argv);

// True if argv (the whole command line) asks only for help or the version, so
// main can answer without initialising DPDK.
bool wants_help_or_version(int argc, char **argv);

extern const char usage_text[];

// The driver profile directory: --drivers-dir, else $FERRY_DRIVERS_DIR, else the
// source tree's drivers-config (running from the build tree), else the installed one.
std::string resolve_drivers_dir(const options &opts);

}  // namespace ferry::app
