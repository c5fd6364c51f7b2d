// The proxy's tables of the configuration file (private to lib/config): [http],
// [[listener]], [[route]], [[upstream]] with [[upstream.server]]. Schema in config.h.
//
// config.cpp's parser hands each top-level table to the read_* functions while it walks the
// document, then calls finish() once everything (ports, [tcp_test]) has been read:
// references between tables and the reachability of servers can only be checked then.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ferry/config/config.h"
#include "reader.h"
#include "toml.h"

namespace ferry::config::detail {

class proxy_reader {
public:
    // cfg receives the proxy's tables; r must outlive this reader, and so must the parsed
    // document (node pointers are kept for finish()'s error positions).
    proxy_reader(const reader &r, ferry_config &cfg) : r_(r), cfg_(cfg) {}

    std::optional<error> read_http(const toml::node &n, const std::string &key);
    std::optional<error> read_listeners(const toml::node &n, const std::string &key);
    std::optional<error> read_routes(const toml::node &n, const std::string &key);
    std::optional<error> read_upstreams(const toml::node &n, const std::string &key);

    // Resolves names to indices and checks what spans tables; the earliest error in the
    // file if any.
    std::optional<error> finish();

private:
    // Where values were, for errors found after the table was read.
    struct listener_nodes {
        const toml::node *name = nullptr, *port = nullptr, *default_upstream = nullptr,
                         *on = nullptr, *address = nullptr;
    };
    struct route_nodes {
        const toml::node *listener = nullptr, *upstream = nullptr;
    };
    struct server_nodes {
        const toml::node *address = nullptr;
    };

    std::optional<error> read_listener(const toml::table &t, const std::string &key);
    // `on` and `address` to listener_config::port_index.
    std::optional<error> resolve_listener_port(listener_config &l, const listener_nodes &nodes,
                                               const std::string &key) const;
    std::optional<error> read_route(const toml::table &t, const std::string &key);
    std::optional<error> read_upstream(const toml::table &t, const std::string &key);
    std::optional<error> read_server(const toml::table &t, const std::string &key,
                                     upstream_config &u, std::vector<server_nodes> &nodes);

    std::string first_at(const toml::node &n) const;

    const reader &r_;
    ferry_config &cfg_;
    std::vector<listener_nodes> listener_nodes_;           // parallel to cfg_.listeners
    std::vector<route_nodes> route_nodes_;                 // parallel to cfg_.routes
    std::vector<const toml::node *> upstream_name_nodes_;  // parallel to cfg_.upstreams
    std::vector<std::vector<server_nodes>> server_nodes_;  // parallel to cfg_.upstreams
};

}  // namespace ferry::config::detail
