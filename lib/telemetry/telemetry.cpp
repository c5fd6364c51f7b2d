#include "ferry/telemetry/telemetry.h"

#include <cstring>

#include "telemetry_log.h"

RTE_LOG_REGISTER(ferry_logtype_telemetry, ferry.telemetry, INFO);

namespace ferry::telemetry {

bool register_command(const char *cmd, handler fn, const char *help) noexcept {
    // Our namespace keeps us clear of DPDK's own /ethdev, /eal, ... commands.
    if (cmd == nullptr || std::strncmp(cmd, "/ferry/", 7) != 0) return false;
    // DPDK rejects a help text of RTE_TEL_MAX_STRING_LEN or more.
    if (help == nullptr || std::strlen(help) >= RTE_TEL_MAX_STRING_LEN) return false;
    return rte_telemetry_register_cmd(cmd, fn, help) == 0;
}

}  // namespace ferry::telemetry
