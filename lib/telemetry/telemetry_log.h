// The `ferry.telemetry` log type (telemetry.cpp registers it): raise it with
// EAL's --log-level=ferry.telemetry:debug.
#pragma once

#include "ferry/base/log.h"

extern int ferry_logtype_telemetry;

#define TELEMETRY_LOG(level, fmt, ...) \
    FERRY_LOG(level, ferry_logtype_telemetry, "telemetry", fmt __VA_OPT__(, ) __VA_ARGS__)
