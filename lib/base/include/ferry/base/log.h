// Logging through rte_log, one `ferry.<area>` log type per area, so operators
// can raise one area's level with EAL's --log-level=ferry.net:debug.
// Each area's .cpp defines its type once with RTE_LOG_REGISTER(var, ferry.area, INFO).
// Control path only: the data path counts events instead of logging them.
#pragma once

#include <rte_log.h>

#define FERRY_LOG(level, type, area, fmt, ...) \
    rte_log(RTE_LOG_##level, type, "ferry." area ": " fmt "\n" __VA_OPT__(, ) __VA_ARGS__)
