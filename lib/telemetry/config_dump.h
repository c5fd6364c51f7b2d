// The configuration as ferry runs it, for /ferry/config/ports, /listeners,
// /routes and /upstreams (issue 19, item 6; `nginx -T` and Envoy's
// /config_dump in spirit): one dict per item, keyed by name (routes by their
// position, the order they are tried in). DPDK's telemetry nests one level,
// so an upstream's servers are one string; their live state is in
// /ferry/upstreams.
#pragma once

#include <rte_telemetry.h>

#include "ferry/config/config.h"

namespace ferry::telemetry {

int dump_ports(const config::ferry_config &c, rte_tel_data *d);
int dump_listeners(const config::ferry_config &c, rte_tel_data *d);
int dump_routes(const config::ferry_config &c, rte_tel_data *d);
int dump_upstreams(const config::ferry_config &c, rte_tel_data *d);

}  // namespace ferry::telemetry
