// What an in-process reload may change (issue 18; the app's reload.cpp swaps
// the configuration in, docs/OPERATIONS.md "Reloading the configuration").
//
// A reload replaces the values of the running configuration; the shape it
// was started with stays: the same ports, workers, TCP settings and pool
// sizes (they size what was allocated at start-up). Upstreams with a local
// pool may be added, removed and renamed (carry_slots: per-upstream state is
// kept by slot, one per name, up to ferry_config::upstream_slot_capacity; a
// removed one stays as a retired placeholder); those with a shared pool stay.
// Listeners may be added, removed, renamed and moved to
// other ports (carry_slots: per-listener counters are kept by slot, one per
// name, up to ferry_config::listener_slot_capacity), unless ferry started
// without any (it runs no proxy then). An upstream may gain, lose and reorder
// servers (carry_slots: per-server state, and a shared pool's connections,
// are kept by slot, one per address, up to upstream_config::slot_capacity);
// upstreams may be added, removed and renamed (a name keeps its pool and
// shared_connections for life; a first shared pool needs a restart). Routes may be added, removed and reordered (route_map() carries
// each one's counters to its new position) up to route_capacity(); each keeps
// an id across reloads (carry_slots, route_config::id), which requests handed
// to another lcore's shared connection carry. Everything else is applied: the wakeup
// settings, [http] timeouts and limits that size nothing, via and
// X-Forwarded-*, each listener's max_connections and default_upstream, each
// route's match (listener, host, path_prefix), upstream, header rules and
// timeouts, and each upstream's balancing, retries, passive and active health
// checks and server weights.
//
// Pure: no I/O.
#pragma once

#include <string>
#include <vector>

#include "ferry/config/config.h"

namespace ferry::config {

// The routes a proxy started with `initial_routes` can take by reload (its
// per-route counters are allocated for as many).
[[nodiscard]] constexpr size_t route_capacity(size_t initial_routes) noexcept {
    return initial_routes + 64 < max_routes ? initial_routes + 64 : max_routes;
}

// For each route of `running`, its position in `next`: the route of `next`
// with the same listener, host and path prefix (the first not taken), else
// the same position if the route of `next` there matched no route of
// `running` (a route edited in place); -1: removed.
[[nodiscard]] std::vector<int> route_map(const ferry_config &running, const ferry_config &next);
// Whether `map` (route_map()) leaves every route where it was and `next` has
// no more of them: nothing indexed by route position has to move.
[[nodiscard]] bool routes_in_place(const std::vector<int> &map, size_t next_routes);

// Gives each listener of `next` its slot (listener_config::slot): the slot
// its name had in `running` (or before: a listener that was removed and comes
// back gets its old slot, and with it its counters), else the next new one.
// Puts each upstream of `next` at the position its name had (every name since
// ferry started has one in `running`), a new one after them, and a retired
// placeholder (upstream_config::retired: `running`'s, without servers) where
// a name `next` lacks is; routes and listeners then name upstreams by that
// position. Gives each server its slot (server_config::slot) the same way, by
// address, within its upstream (an added upstream has
// added_upstream_server_slots). `next` takes over `running`'s slot lists and
// capacities. Errors: more slots than a capacity (a restart; `next` may be
// left half done). Before reload_refusals and reload_changes, which compare
// listeners and upstreams by name and servers by address.
[[nodiscard]] std::vector<error> carry_slots(const ferry_config &running, ferry_config &next);

// Why `next` cannot replace `running` in place, one error per change that
// needs a restart, each at the item of `next` it concerns (file:line:column
// and key path) and saying what to do; empty: `next` may be applied.
// `route_capacity`: route_capacity() of the configuration ferry started with.
[[nodiscard]] std::vector<error> reload_refusals(const ferry_config &running,
                                                 const ferry_config &next,
                                                 size_t route_capacity = max_routes);

// What a reload would change, one line per difference ("route[1].path_prefix:
// \"/a\" -> \"/b\""), for the log; at most `limit` lines (then "... and N more").
[[nodiscard]] std::vector<std::string> reload_changes(const ferry_config &running,
                                                      const ferry_config &next,
                                                      size_t limit = 16);

// FNV-1a, 64 bits, of a configuration's text: the active configuration's
// identity in telemetry and the log (not a security property).
[[nodiscard]] uint64_t config_hash(std::string_view text) noexcept;

}  // namespace ferry::config
