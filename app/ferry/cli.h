// ferry's own command line: what follows `--` after the EAL arguments.
#pragma once

#include <string>
#include <string_view>

namespace ferry::app {

struct options {
    std::string config_path;   // empty: the embedded default config
    std::string drivers_dir;   // empty: search the default locations
    bool check = false;        // validate config + profiles, print, exit
    std::string running;       // with check: the file prefix of a running ferry to ask
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

// ferry's own options given before `--` (argv[1..split), split = argc
// without one), where EAL would
// take them: `--check` or `--config` as unknown options with ~100 lines of
// EAL usage, `-c f.toml` as a bad coremask). Returns the one-line message with
// the command line rewritten, or "" if there are none. `-c` counts as ferry's
// when its value cannot be a coremask (it has a '.' or a '/'); `-d` is EAL's
// too (a driver to load) and is left to EAL.
std::string misplaced_options(int argc, int split, char **argv);

extern const char usage_text[];

// The driver profile directory: --drivers-dir, else $FERRY_DRIVERS_DIR, else the
// source tree's drivers-config (running from the build tree), else the installed one.
std::string resolve_drivers_dir(const options &opts);

}  // namespace ferry::app
