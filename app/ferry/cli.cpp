#include "cli.h"

#include <sys/stat.h>

#include <cstdlib>
#include <cstring>

#include "ferry_build_config.h"

namespace ferry::app {

const char usage_text[] =
    "usage: ferry [EAL options] -- [ferry options]\n"
    "\n"
    "A userspace HTTP/1.1 reverse proxy on DPDK. EAL options come first (see\n"
    "`dpdk-testpmd --help` or the DPDK EAL guide); every EAL lcore (-l) becomes a\n"
    "worker that owns one rx/tx queue pair on every port. Without hugepages use\n"
    "`--no-huge -m 512`, and give each instance its own `--file-prefix`.\n"
    "\n"
    "ferry options:\n"
    "  -c, --config FILE        TOML configuration (default: the embedded default,\n"
    "                           one net_tap port 'tap0', interface ferry0,\n"
    "                           address 10.77.0.1/24, an HTTP proxy on port 80 in\n"
    "                           front of 10.77.0.2:8080; see --print-default-config)\n"
    "  -d, --drivers-dir DIR    directory of driver profiles <name>.toml\n"
    "                           (default: $FERRY_DRIVERS_DIR, else the build's\n"
    "                           source drivers-config/, else the installed one)\n"
    "      --check              validate the configuration and its driver\n"
    "                           profiles, print the effective configuration (ports,\n"
    "                           listeners, routes, upstreams), exit\n"
    "      --running PREFIX     with --check: also ask the ferry running with EAL\n"
    "                           --file-prefix PREFIX what a reload of --config FILE\n"
    "                           would do (apply what, or refuse why); exit 1 if it\n"
    "                           would refuse it\n"
    "      --print-default-config\n"
    "                           print the embedded default configuration and exit\n"
    "  -h, --help               this text\n"
    "  -V, --version            print the version and exit\n"
    "\n"
    "Exit status: 0 after a clean shutdown (SIGINT/SIGTERM), 1 on a start-up\n"
    "failure (bad configuration: the message names file:line:column and key),\n"
    "2 on bad usage.\n"
    "\n"
    "Signals: SIGTERM/SIGINT drain and stop; SIGHUP re-reads --config FILE and\n"
    "applies it without dropping a connection, or refuses it (invalid, or a change\n"
    "that needs a restart) and keeps the running one, and reopens the access log.\n"
    "\n"
    "Observe a running ferry with: dpdk-telemetry.py -f <file-prefix>\n"
    "  then /ferry/ports, /ferry/net, /ferry/tcp, /ferry/lcores, /ferry/http,\n"
    "  /ferry/upstreams, /ferry/config (and /ferry/config/ports, /listeners,\n"
    "  /routes, /upstreams), /ferry/version, /ferry/wakeup_mode,\n"
    "  /ferry/idle_threshold_us, /ferry/latency_weight_pct,\n"
    "  /ferry/busy_latency_weight_pct, /ferry/spin_yield_us, /ferry/reload\n"
    "\n"
    "Example (a tap port in a private network namespace):\n"
    "  ip netns add demo\n"
    "  ip netns exec demo ferry -l 0-1 --no-huge -m 512 --no-pci --file-prefix demo --\n";

bool wants_help_or_version(int argc, char **argv) {
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (!std::strcmp(a, "-h") || !std::strcmp(a, "--help") || !std::strcmp(a, "-V") ||
            !std::strcmp(a, "--version") || !std::strcmp(a, "--print-default-config"))
            return true;
    }
    return false;
}

cli_result parse_cli(int argc, char **argv) {
    cli_result r;
    for (int i = 0; i < argc; ++i) {
        const std::string_view a = argv[i];
        auto value = [&](std::string &out) {
            if (i + 1 >= argc) {
                r.error = "option '" + std::string(a) + "' needs a value";
                return;
            }
            out = argv[++i];
        };
        if (a == "-c" || a == "--config") {
            value(r.opts.config_path);
        } else if (a.starts_with("--config=")) {
            r.opts.config_path = std::string(a.substr(9));
        } else if (a == "-d" || a == "--drivers-dir") {
            value(r.opts.drivers_dir);
        } else if (a.starts_with("--drivers-dir=")) {
            r.opts.drivers_dir = std::string(a.substr(14));
        } else if (a == "--check") {
            r.opts.check = true;
        } else if (a == "--running") {
            value(r.opts.running);
        } else if (a == "--print-default-config") {
            r.opts.print_default = true;
        } else if (a == "-h" || a == "--help") {
            r.opts.help = true;
        } else if (a == "-V" || a == "--version") {
            r.opts.version = true;
        } else {
            r.error = "unknown option '" + std::string(a) + "' (see --help)";
        }
        if (!r.error.empty()) return r;
    }
    if (!r.opts.running.empty() && (!r.opts.check || r.opts.config_path.empty()))
        r.error = "--running PREFIX goes with --check --config FILE (see --help)";
    return r;
}

std::string misplaced_options(int argc, int split, char **argv) {
    std::string eal, ours, first;
    for (int i = 1; i < split; ++i) {
        const std::string_view a = argv[i];
        const bool has_value = a == "--config" || a == "--drivers-dir" || a == "--running" ||
                               (a == "-c" && i + 1 < split &&
                                std::strpbrk(argv[i + 1], "./") != nullptr);
        const bool flag = a == "--check" || a == "--print-default-config" ||
                          a.starts_with("--config=") || a.starts_with("--drivers-dir=");
        std::string &to = has_value || flag ? ours : eal;
        to += ' ';
        to += a;
        if (has_value && i + 1 < split) {
            to += ' ';
            to += argv[++i];
        }
        if ((has_value || flag) && first.empty()) first = std::string(a);
    }
    if (first.empty()) return "";
    std::string after;
    for (int i = split + 1; i < argc; ++i) {
        after += ' ';
        after += argv[i];
    }
    return "'" + first + "' is a ferry option: ferry's options go after '--', EAL's before it: " +
           "ferry" + eal + " --" + ours + after;
}

std::string resolve_drivers_dir(const options &opts) {
    if (!opts.drivers_dir.empty()) return opts.drivers_dir;
    if (const char *env = std::getenv("FERRY_DRIVERS_DIR"); env != nullptr && *env != '\0')
        return env;
    struct stat st {};
    if (stat(FERRY_SOURCE_DRIVERS_DIR, &st) == 0 && S_ISDIR(st.st_mode))
        return FERRY_SOURCE_DRIVERS_DIR;
    return FERRY_INSTALLED_DRIVERS_DIR;
}

}  // namespace ferry::app
