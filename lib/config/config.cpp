// The ferry configuration file: schema in config.h, rules in drivers-config/README.md.
#include "ferry/config/config.h"

#include <algorithm>
#include <cstdio>

#include "proxy_config.h"
#include "reader.h"
#include "text.h"

namespace ferry::config {

using detail::reader;

namespace {

constexpr std::string_view wakeup_names[] = {"conditional", "always", "poll", "adaptive"};
constexpr std::string_view congestion_control_names[] = {"cubic", "new_reno", "bbr"};

// Debian's DPDK 22.11 is built with RTE_MAX_LCORE 128 and RTE_MAX_ETHPORTS 32; a larger
// value cannot work there, so it is a config error rather than an EAL failure later.
constexpr int64_t max_workers = 128;
constexpr int64_t max_ports = 32;

constexpr std::string_view embedded_default_text =
    R"(# ferry's built-in configuration: one net_tap port and an HTTP proxy on port 80 in
# front of a demo origin. The tap interface "ferry0" appears in ferry's network
# namespace; give the kernel side 10.77.0.2/24 and run the origin at 10.77.0.2:8080
# (deploy/quickstart.sh does both).
[ferry]
wakeup_mode = "adaptive"
idle_threshold_us = 200
latency_weight_pct = 1000
neighbor_timeout_s = 60

[http]
client_idle_timeout_ms = 60000

[[listener]]
name = "web"
port = 80
default_upstream = "demo"

[[upstream]]
name = "demo"
pool = "local"
  [[upstream.server]]
  address = "10.77.0.2:8080"

[[port]]
name = "tap0"
profile = "net_tap"
iface = "ferry0"
address = "10.77.0.1/24"
mtu = 1500
mbufs = 16384
)";

std::string cidr_text(uint32_t addr, uint8_t len) {
    return format_ipv4(addr & detail::prefix_mask(len)) + "/" + std::to_string(len);
}

// "a.b.c.d/len" as a host address on its subnet; the reason it is not, else.
std::optional<std::string> parse_host_cidr(std::string_view s, uint32_t &addr, uint8_t &len) {
    size_t slash = s.find('/');
    if (slash == std::string_view::npos)
        return "expected 'a.b.c.d/len', got '" + std::string(s) + "'";
    std::string_view a = s.substr(0, slash), p = s.substr(slash + 1);
    auto ip = detail::parse_ipv4(a);
    if (!ip)
        return "'" + std::string(a) + "' is not an IPv4 address a.b.c.d";
    bool digits = !p.empty() && p.size() <= 2 && (p.size() == 1 || p[0] != '0') &&
                  p.find_first_not_of("0123456789") == std::string_view::npos;
    int plen = -1;
    if (digits) {
        plen = 0;
        for (char c : p)
            plen = plen * 10 + (c - '0');
    }
    if (plen < 1 || plen > 32)
        return "prefix length must be 1..32, got '" + std::string(p) + "'";
    if (auto why = detail::unusable_host_reason(*ip))
        return format_ipv4(*ip) + " is not a usable host address (" + std::string(*why) + ")";
    addr = *ip;
    len = static_cast<uint8_t>(plen);
    // /31 (RFC 3021) and /32 have no network or broadcast address.
    uint32_t mask = detail::prefix_mask(len);
    if (len <= 30 && (addr & ~mask) == 0)
        return format_ipv4(addr) + " is the network address of " + cidr_text(addr, len) +
               ", not a host address";
    if (len <= 30 && (addr & ~mask) == ~mask)
        return format_ipv4(addr) + " is the broadcast address of " + cidr_text(addr, len) +
               ", not a host address";
    return std::nullopt;
}

// The gateway must be a host on the port's subnet other than the port itself.
std::optional<std::string> check_gateway(uint32_t gw, uint32_t addr, uint8_t len) {
    if (auto why = detail::unusable_host_reason(gw))
        return format_ipv4(gw) + " is not a usable host address (" + std::string(*why) + ")";
    uint32_t mask = detail::prefix_mask(len);
    if ((gw & mask) != (addr & mask))
        return format_ipv4(gw) + " is outside the port's subnet " + cidr_text(addr, len);
    if (gw == addr)
        return format_ipv4(gw) + " is the port's own address";
    if (len <= 30 && (gw & ~mask) == 0)
        return format_ipv4(gw) + " is the network address of " + cidr_text(addr, len);
    if (len <= 30 && (gw & ~mask) == ~mask)
        return format_ipv4(gw) + " is the broadcast address of " + cidr_text(addr, len);
    return std::nullopt;
}

// An IPv6 router must be on-link: on the port's prefix or link-local
// (RFC 4861 §6.3.4: routers are named by their link-local addresses), and
// not the port itself or a group.
std::optional<std::string> check_gateway6(const ipv6_bytes &gw,
                                          const std::optional<ipv6_bytes> &addr6, uint8_t len) {
    const std::string text = format_ipv6(gw);
    if (!addr6) return "a gateway6 needs the port's address6";
    if (gw == *addr6) return text + " is the port's own address6";
    if (gw[0] == 0xff) return text + " is a multicast address";
    if (!ipv6_in_prefix(gw, *addr6, len) && !ipv6_is_link_local(gw))
        return text + " is neither on the port's prefix " + format_ipv6(*addr6) + "/" +
               std::to_string(len) + " nor link-local";
    return std::nullopt;
}

// Where the keys that must be unique across ports were, for "first defined at".
struct port_nodes {
    const toml::node *name = nullptr, *iface = nullptr, *pci = nullptr, *address = nullptr,
                     *gateway = nullptr, *gateway6 = nullptr;
};

class config_parser {
public:
    explicit config_parser(std::string_view file) : r_(file), proxy_(r_, cfg_) {}

    result<ferry_config, error> run(const toml::table &root) {
        cfg_.source = r_.file();
        const reader::field fields[] = {
            {"ferry", false,
             [this](const toml::node &n, const std::string &k) { return read_ferry(n, k); }},
            {"port", false,
             [this](const toml::node &n, const std::string &k) { return read_ports(n, k); }},
            {"tcp", false,
             [this](const toml::node &n, const std::string &k) { return read_tcp(n, k); }},
            {"tcp_test", false,
             [this](const toml::node &n, const std::string &k) { return read_tcp_test(n, k); }},
            {"http", false,
             [this](const toml::node &n, const std::string &k) { return proxy_.read_http(n, k); }},
            {"listener", false,
             [this](const toml::node &n, const std::string &k) {
                 return proxy_.read_listeners(n, k);
             }},
            {"route", false,
             [this](const toml::node &n, const std::string &k) {
                 return proxy_.read_routes(n, k);
             }},
            {"upstream", false,
             [this](const toml::node &n, const std::string &k) {
                 return proxy_.read_upstreams(n, k);
             }},
            {"admin", false,
             [this](const toml::node &n, const std::string &k) { return read_admin(n, k); }},
        };
        if (auto e = r_.walk(root, "", fields))
            return unexpected{*e};
        if (cfg_.ports.empty())
            return unexpected{
                error{source_pos{r_.file()}, "port", "at least one [[port]] table is required"}};
        if (auto e = proxy_.finish())
            return unexpected{*e};
        return std::move(cfg_);
    }

private:
    std::optional<error> read_ferry(const toml::node &n, const std::string &key) {
        auto t = r_.table(n, key);
        if (!t)
            return t.error();
        const reader::field fields[] = {
            {"workers", false, r_.integer_into(cfg_.workers, 0, max_workers)},
            {"wakeup_mode", false,
             [this](const toml::node &v, const std::string &k) -> std::optional<error> {
                 auto s = r_.string(v, k);
                 if (!s)
                     return s.error();
                 auto m = parse_wakeup_mode(*s);
                 if (!m) {
                     return r_.at(v, k,
                                  "unknown wakeup mode '" + *s + "' (expected " +
                                      detail::join_alternatives(wakeup_names) + ")");
                 }
                 cfg_.wakeup = *m;
                 return std::nullopt;
             }},
            {"idle_threshold_us", false, r_.integer_into(cfg_.idle_threshold_us, 1, 1000000)},
            {"nap_budget_us", false, r_.integer_into(cfg_.nap_budget_us, 0, 100000)},
            {"latency_weight_pct", false, r_.integer_into(cfg_.latency_weight_pct, 0, 10000)},
            {"busy_latency_weight_pct", false,
             r_.integer_into(cfg_.busy_latency_weight_pct, 0, 10000)},
            {"spin_yield_us", false, r_.integer_into(cfg_.spin_yield_us, 0, 1000000)},
            {"neighbor_timeout_s", false, r_.integer_into(cfg_.neighbor_timeout_s, 1, 86400)},
        };
        return r_.walk(**t, key, fields);
    }

    std::optional<error> read_tcp(const toml::node &n, const std::string &key) {
        auto t = r_.table(n, key);
        if (!t)
            return t.error();
        tcp_config &c = cfg_.tcp;
        const reader::field fields[] = {
            {"max_connections", false, r_.integer_into(c.max_connections, 1, 1 << 20)},
            {"syn_backlog", false, r_.integer_into(c.syn_backlog, 1, 65535)},
            {"syn_cookies", false, r_.boolean_into(c.syn_cookies)},
            {"time_wait_ms", false, r_.integer_into(c.time_wait_ms, 0, 240000)},
            {"upstream_keepalive_ms", false, r_.integer_into(c.upstream_keepalive_ms, 0, 3600000)},
            {"tx_checksum_offload", false, r_.boolean_into(c.tx_checksum_offload)},
            {"rack", false, r_.boolean_into(c.rack)},
            {"prr", false, r_.boolean_into(c.prr)},
            {"frto", false, r_.boolean_into(c.frto)},
            {"dsack", false, r_.boolean_into(c.dsack)},
            {"tlp_new_data", false, r_.boolean_into(c.tlp_new_data)},
            {"congestion_control", false,
             [this, &c](const toml::node &v, const std::string &k) -> std::optional<error> {
                 auto s = r_.string(v, k);
                 if (!s)
                     return s.error();
                 if (std::find(std::begin(congestion_control_names),
                               std::end(congestion_control_names),
                               *s) == std::end(congestion_control_names)) {
                     return r_.at(v, k,
                                  "unknown congestion control '" + *s + "' (expected " +
                                      detail::join_alternatives(congestion_control_names) + ")");
                 }
                 c.congestion_control = *s;
                 return std::nullopt;
             }},
        };
        return r_.walk(**t, key, fields);
    }

    std::optional<error> read_tcp_test(const toml::node &n, const std::string &key) {
        auto t = r_.table(n, key);
        if (!t)
            return t.error();
        tcp_test_config &c = cfg_.tcp_test;
        // Each port must differ from those read before it (document order).
        auto port_into = [this, &c](uint16_t &out) -> reader::handler {
            return [this, &c, &out](const toml::node &v,
                                    const std::string &k) -> std::optional<error> {
                auto p = r_.integer(v, k, 0, 65535);
                if (!p)
                    return p.error();
                const auto port = static_cast<uint16_t>(*p);
                for (const uint16_t *other :
                     {&c.echo_port, &c.discard_port, &c.source_port, &c.relay_port})
                    if (other != &out && port != 0 && *other == port)
                        return r_.at(v, k,
                                     "port " + std::to_string(port) +
                                         " is already used by another tcp_test service");
                out = port;
                return std::nullopt;
            };
        };
        const reader::field fields[] = {
            {"echo_port", false, port_into(c.echo_port)},
            {"discard_port", false, port_into(c.discard_port)},
            {"source_port", false, port_into(c.source_port)},
            {"source_bytes", false, r_.integer_into(c.source_bytes, 0, int64_t{1} << 48)},
            {"relay_port", false, port_into(c.relay_port)},
            {"relay_to", false,
             [this, &c](const toml::node &v, const std::string &k) -> std::optional<error> {
                 auto s = r_.string(v, k);
                 if (!s)
                     return s.error();
                 const auto ep = detail::parse_ipv4_port(*s);
                 if (!ep || ep->first == 0)
                     return r_.at(v, k, "expected a.b.c.d:port, got '" + *s + "'");
                 c.relay_addr = ep->first;
                 c.relay_to_port = ep->second;
                 relay_to_node_ = &v;
                 return std::nullopt;
             }},
        };
        if (auto e = r_.walk(**t, key, fields))
            return e;
        // Both or neither.
        if (c.relay_port != 0 && c.relay_to_port == 0)
            return r_.at(**t, key, "relay_port needs relay_to (a.b.c.d:port)");
        if (c.relay_port == 0 && c.relay_to_port != 0)
            return r_.at(*relay_to_node_, detail::join_key(key, "relay_to"),
                         "relay_to needs relay_port");
        return std::nullopt;
    }

    // [admin]: the metrics listener on a kernel socket. Only what cannot be bound on any
    // host is refused here; whether this host has the address is for bind() at start-up.
    std::optional<error> read_admin(const toml::node &n, const std::string &key) {
        auto t = r_.table(n, key);
        if (!t)
            return t.error();
        admin_config &c = cfg_.admin;
        const reader::field fields[] = {
            {"metrics_address", false,
             [this, &c](const toml::node &v, const std::string &k) -> std::optional<error> {
                 auto s = r_.string(v, k);
                 if (!s)
                     return s.error();
                 const auto ep = detail::parse_ipv4_port(*s);
                 if (!ep)
                     return r_.at(v, k, "expected a.b.c.d:port, got '" + *s + "'");
                 const uint32_t a = ep->first;
                 // 224/4 multicast, 240/4 reserved (255.255.255.255 included): no TCP
                 // listener can have them. 0.0.0.0 is INADDR_ANY, 127/8 the usual choice.
                 if (a >= 0xe0000000u)
                     return r_.at(v, k,
                                  format_ipv4(a) + " cannot be listened on (" +
                                      (a < 0xf0000000u ? "multicast" : "reserved or broadcast") +
                                      "); use a local address such as 127.0.0.1, or 0.0.0.0");
                 c.addr = a;
                 c.port = ep->second;
                 c.where = r_.pos(v.source());
                 return std::nullopt;
             }},
        };
        return r_.walk(**t, key, fields);
    }

    std::optional<error> read_ports(const toml::node &n, const std::string &key) {
        // [port] (a single table) instead of [[port]] is the likely mistake here.
        if (n.is_table())
            return r_.at(n, key, "expected an array of tables ([[port]]), got a table");
        auto a = r_.array(n, key);
        if (!a)
            return a.error();
        for (size_t i = 0; i < (*a)->size(); ++i) {
            const toml::node &elem = *(*a)->get(i);
            std::string k = detail::index_key(key, i);
            if (i >= static_cast<size_t>(max_ports))
                return r_.at(elem, k, "at most " + std::to_string(max_ports) + " ports");
            auto t = r_.table(elem, k);
            if (!t)
                return t.error();
            if (auto e = read_port(**t, k, static_cast<uint32_t>(i)))
                return e;
        }
        return std::nullopt;
    }

    std::optional<error> read_port(const toml::table &t, const std::string &key, uint32_t index) {
        port_config p;
        p.index = index;
        p.where = r_.pos(t.source());
        port_nodes nodes;

        auto checked_string = [this](std::string &out, const toml::node *&node, auto valid,
                                     std::string_view what) -> reader::handler {
            return [this, &out, &node, valid, what](const toml::node &v,
                                                    const std::string &k) -> std::optional<error> {
                auto s = r_.string(v, k);
                if (!s)
                    return s.error();
                if (!valid(*s))
                    return r_.at(v, k, std::string(what) + ", got '" + *s + "'");
                out = std::move(*s);
                node = &v;
                return std::nullopt;
            };
        };
        const toml::node *profile_node = nullptr;
        const reader::field fields[] = {
            {"name", true,
             checked_string(
                 p.name, nodes.name,
                 [](std::string_view s) { return detail::is_lower_name(s, 32); },
                 "must be 1..32 characters of [a-z0-9_]")},
            {"profile", true,
             checked_string(
                 p.profile, profile_node,
                 [](std::string_view s) { return detail::is_lower_name(s, 64); },
                 "must be a profile name of [a-z0-9_] (drivers-config/<profile>.toml)")},
            {"iface", false,
             checked_string(p.iface, nodes.iface, detail::is_iface_name,
                            "must be 1..15 characters of [A-Za-z0-9_.-] (a Linux interface "
                            "name)")},
            {"pci", false,
             checked_string(p.pci, nodes.pci, detail::is_pci_address,
                            "expected a PCI address dddd:bb:dd.f")},
            {"address", true,
             [&](const toml::node &v, const std::string &k) -> std::optional<error> {
                 auto s = r_.string(v, k);
                 if (!s)
                     return s.error();
                 if (auto why = parse_host_cidr(*s, p.address, p.prefix_len))
                     return r_.at(v, k, *why);
                 nodes.address = &v;
                 return std::nullopt;
             }},
            {"gateway", false,
             [&](const toml::node &v, const std::string &k) -> std::optional<error> {
                 auto s = r_.string(v, k);
                 if (!s)
                     return s.error();
                 auto gw = detail::parse_ipv4(*s);
                 if (!gw)
                     return r_.at(v, k, "expected an IPv4 address a.b.c.d, got '" + *s + "'");
                 // Checked against the subnet once the whole table is read: address may
                 // come later in the table.
                 p.gateway = *gw;
                 nodes.gateway = &v;
                 return std::nullopt;
             }},
            {"mac", false,
             [&](const toml::node &v, const std::string &k) -> std::optional<error> {
                 auto s = r_.string(v, k);
                 if (!s)
                     return s.error();
                 auto mac = detail::parse_mac(*s);
                 if (!mac)
                     return r_.at(v, k,
                                  "expected a MAC address xx:xx:xx:xx:xx:xx, got '" + *s + "'");
                 if ((*mac)[0] & 1)
                     return r_.at(v, k,
                                  *s + " is a multicast address (the first octet's low "
                                       "bit is set); a port needs a unicast address");
                 if (*mac == std::array<uint8_t, 6>{})
                     return r_.at(v, k, *s + " is the all-zero address");
                 p.mac = *mac;
                 return std::nullopt;
             }},
            {"address6", false,
             [&](const toml::node &v, const std::string &k) -> std::optional<error> {
                 auto s = r_.string(v, k);
                 if (!s)
                     return s.error();
                 auto a = parse_ipv6_prefix(*s);
                 if (!a)
                     return r_.at(v, k,
                                  "expected an IPv6 address with its prefix length, e.g. "
                                  "fd00:77::1/64, got '" + *s + "'");
                 const ipv6_bytes &b = a->first;
                 const bool zero8 = std::all_of(b.begin(), b.begin() + 8, [](uint8_t x) { return x == 0; });
                 const char *why = b[0] == 0xff         ? "a multicast address"
                                   : ipv6_is_link_local(b)
                                       ? "a link-local address (fe80::/10; ferry takes a unique "
                                         "local or global one)"
                                   : zero8 ? "an unspecified, loopback or IPv4-mapped address"
                                           : nullptr;
                 if (why != nullptr) return r_.at(v, k, *s + " is " + why);
                 if (a->second == 0)
                     return r_.at(v, k, "the prefix length must be 1..128, got 0");
                 p.address6 = b;
                 p.prefix6_len = a->second;
                 return std::nullopt;
             }},
            {"gateway6", false,
             [&](const toml::node &v, const std::string &k) -> std::optional<error> {
                 auto s = r_.string(v, k);
                 if (!s)
                     return s.error();
                 auto a = parse_ipv6(*s);
                 if (!a)
                     return r_.at(v, k, "expected an IPv6 address, e.g. fd00:77::fe, got '" +
                                            *s + "'");
                 p.gateway6 = *a;
                 nodes.gateway6 = &v;
                 return std::nullopt;
             }},
            {"icmp6_errors_per_s", false, r_.integer_into(p.icmp6_errors_per_s, 0, 100000)},
            {"icmp6_error_burst", false, r_.integer_into(p.icmp6_error_burst, 1, 100000)},
            {"router_discovery", false, r_.boolean_into(p.router_discovery)},
            {"mtu", false, r_.integer_into(p.mtu, 68, 9000)},
            {"mbufs", false, r_.integer_into(p.mbufs, 1024, 1 << 24)},
            {"rx_desc", false, desc_into(p.rx_desc)},
            {"tx_desc", false, desc_into(p.tx_desc)},
            {"ring_frames", false,
             [&](const toml::node &v, const std::string &k) -> std::optional<error> {
                 // 0 = the profile's; whether the profile has a kernel ring to size is
                 // check_port's question (the profile is not loaded yet).
                 auto n = r_.integer(v, k, 0, max_ring_frames);
                 if (!n)
                     return n.error();
                 if (*n != 0 && !is_ring_frames(*n))
                     return r_.at(v, k,
                                  "must be 0 (the profile's) or a power of two in " +
                                      std::to_string(min_ring_frames) + ".." +
                                      std::to_string(max_ring_frames) + ", got " +
                                      std::to_string(*n));
                 p.ring_frames = static_cast<uint32_t>(*n);
                 return std::nullopt;
             }},
            {"fault", false,
             [&](const toml::node &v, const std::string &k) { return read_fault(v, k, p.fault); }},
        };
        if (auto e = r_.walk(t, key, fields))
            return e;

        if (p.gateway) {
            if (auto why = check_gateway(*p.gateway, p.address, p.prefix_len))
                return r_.at(*nodes.gateway, detail::join_key(key, "gateway"), *why);
        }
        if (p.gateway6) {
            if (auto why = check_gateway6(*p.gateway6, p.address6, p.prefix6_len))
                return r_.at(*nodes.gateway6, detail::join_key(key, "gateway6"), *why);
        }
        if (auto e = check_unique(p, nodes, key))
            return e;
        cfg_.ports.push_back(std::move(p));
        nodes_.push_back(nodes);
        return std::nullopt;
    }

    // [port.fault] (or an inline table `fault = {...}`): fault injection for tests.
    std::optional<error> read_fault(const toml::node &n, const std::string &key, fault_config &c) {
        auto t = r_.table(n, key);
        if (!t)
            return t.error();
        const reader::field fields[] = {
            {"rx_drop", false, probability_into(c.rx_drop)},
            {"rx_duplicate", false, probability_into(c.rx_duplicate)},
            {"rx_reorder", false, probability_into(c.rx_reorder)},
            {"tx_drop", false, probability_into(c.tx_drop)},
            {"tx_duplicate", false, probability_into(c.tx_duplicate)},
            {"tx_reorder", false, probability_into(c.tx_reorder)},
            {"reorder_hold_us", false, r_.integer_into(c.reorder_hold_us, 1, 100000)},
            {"seed", false, r_.integer_into(c.seed, 0, INT64_MAX)},
        };
        return r_.walk(**t, key, fields);
    }

    // A probability: a float in 0.0..1.0, or the integer 0 or 1 (`rx_drop = 1` is a natural
    // thing to write). NaN and infinities are out of range.
    reader::handler probability_into(double &out) {
        return [this, &out](const toml::node &v, const std::string &k) -> std::optional<error> {
            const std::string range = "must be in 0.0..1.0, got ";
            if (const auto *i = v.as_integer()) {
                if (i->get() != 0 && i->get() != 1)
                    return r_.at(v, k, range + std::to_string(i->get()));
                out = static_cast<double>(i->get());
                return std::nullopt;
            }
            const auto *f = v.as_floating_point();
            if (!f)
                return r_.at(v, k,
                             "expected a probability (a number in 0.0..1.0), got " +
                                 std::string(detail::type_name(v.type())));
            const double x = f->get();
            // Written so that NaN fails too.
            if (!(x >= 0.0 && x <= 1.0)) {
                char buf[32];
                std::snprintf(buf, sizeof buf, "%g", x);
                return r_.at(v, k, range + buf);
            }
            out = x == 0.0 ? 0.0 : x;  // -0.0 is 0
            return std::nullopt;
        };
    }

    // 0 = the profile's; otherwise what every PMD accepts: a power of two.
    reader::handler desc_into(uint16_t &out) {
        return [this, &out](const toml::node &v, const std::string &k) -> std::optional<error> {
            auto n = r_.integer(v, k, 0, 32768);
            if (!n)
                return n.error();
            if (*n != 0 && (*n < 32 || (*n & (*n - 1)) != 0))
                return r_.at(v, k,
                             "must be 0 (the profile's) or a power of two in 32..32768, got " +
                                 std::to_string(*n));
            out = static_cast<uint16_t>(*n);
            return std::nullopt;
        };
    }

    // Names, interfaces and PCI addresses identify a port; subnets must not overlap, or
    // the route for an address would depend on port order.
    std::optional<error> check_unique(const port_config &p, const port_nodes &nodes,
                                      const std::string &key) {
        for (size_t j = 0; j < cfg_.ports.size(); ++j) {
            const port_config &q = cfg_.ports[j];
            auto first_at = [&](const toml::node *n) {
                source_pos w = r_.pos(n->source());
                return w.file + ":" + std::to_string(w.line) + ":" + std::to_string(w.column);
            };
            if (p.name == q.name)
                return r_.at(*nodes.name, detail::join_key(key, "name"),
                             "duplicate port name '" + p.name + "' (first defined at " +
                                 first_at(nodes_[j].name) + ")");
            if (!p.iface.empty() && p.iface == q.iface)
                return r_.at(
                    *nodes.iface, detail::join_key(key, "iface"),
                    "interface '" + p.iface + "' is already used by port '" + q.name + "'");
            if (!p.pci.empty() && p.pci == q.pci)
                return r_.at(*nodes.pci, detail::join_key(key, "pci"),
                             "PCI device " + p.pci + " is already used by port '" + q.name + "'");
            uint32_t mask = detail::prefix_mask(std::min(p.prefix_len, q.prefix_len));
            if ((p.address & mask) == (q.address & mask))
                return r_.at(*nodes.address, detail::join_key(key, "address"),
                             "subnet " + cidr_text(p.address, p.prefix_len) + " overlaps port '" +
                                 q.name + "' (" + cidr_text(q.address, q.prefix_len) + ")");
        }
        return std::nullopt;
    }

    reader r_;
    ferry_config cfg_;
    detail::proxy_reader proxy_;     // [http], [[listener]], [[route]], [[upstream]] into cfg_
    std::vector<port_nodes> nodes_;  // parallel to cfg_.ports
    const toml::node *relay_to_node_ = nullptr;
};

}  // namespace

std::string_view to_string(wakeup_mode m) {
    return wakeup_names[static_cast<size_t>(m)];
}

std::optional<wakeup_mode> parse_wakeup_mode(std::string_view s) {
    for (size_t i = 0; i < std::size(wakeup_names); ++i) {
        if (s == wakeup_names[i])
            return static_cast<wakeup_mode>(i);
    }
    return std::nullopt;
}

std::string_view to_string(bus b) {
    return b == bus::pci ? "pci" : "vdev";
}

std::string_view to_string(binding b) {
    return b == binding::vfio_pci ? "vfio-pci" : "none";
}

std::string error::to_string() const {
    std::string out = where.file;
    if (where.line != 0) {
        if (!out.empty())
            out += ':';
        out += std::to_string(where.line);
        if (where.column != 0)
            out += ":" + std::to_string(where.column);
    }
    if (!out.empty())
        out += ": ";
    if (!key.empty())
        out += "key '" + key + "': ";
    out += message;
    return out;
}

std::string format_ipv4(uint32_t a) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%u.%u.%u.%u", a >> 24, (a >> 16) & 0xff, (a >> 8) & 0xff,
                  a & 0xff);
    return buf;
}

std::string format_mac(const std::array<uint8_t, 6> &m) {
    char buf[18];
    std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4],
                  m[5]);
    return buf;
}

std::string_view embedded_default() {
    return embedded_default_text;
}

result<ferry_config, error> parse(std::string_view toml_text, std::string_view source_name) {
    toml::parse_result doc = toml::parse(toml_text, source_name);
    if (!doc)
        return unexpected{detail::from_parse_error(doc.error(), source_name)};
    return config_parser(source_name).run(doc.table());
}

result<std::string, std::string> read_text(const std::string &path) {
    return detail::read_file(path);
}

result<ferry_config, error> load_file(const std::string &path) {
    auto text = detail::read_file(path);
    if (!text)
        return unexpected{error{source_pos{path}, "", text.error()}};
    return parse(*text, path);
}

}  // namespace ferry::config
