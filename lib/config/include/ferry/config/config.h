// Typed configuration for ferry and the driver profiles it brings ports up with.
//
// Everything here is control-path code: it allocates, returns result<> with a message, and
// never touches DPDK (the app and lib/net map the names below onto rte_eth_* flags). Every
// error names file:line:column and the key path of the offending TOML node, so a typo in a
// config is reported where it is instead of being silently ignored.
//
// The configuration file (all keys listed; anything else is an error):
//
//   [ferry]                         # optional table, every key optional
//   workers = 2                     # 0..128; 0 (default) = one worker per EAL lcore
//   wakeup_mode = "adaptive"        # adaptive | conditional | always | poll (DESIGN.md
//                                   #   "doorbell"; adaptive: conditional's doorbell, the
//                                   #   spin before a sleep learned per lcore)
//   idle_threshold_us = 200         # 1..1000000: no work this long -> try to sleep (in
//                                   #   adaptive, which learns its spin: the CPU its spins
//                                   #   may cost, no more than this threshold's on the
//                                   #   same gaps)
//   nap_budget_us = 100             # 0..100000, adaptive on ports without rx interrupts
//                                   #   (af_packet): the longest timed nap, so the most
//                                   #   latency a nap adds; 0 = no naps (poll)
//   latency_weight_pct = 1000       # 0..10000, adaptive: what 1 us of wake-up latency is
//                                   #   worth in us of CPU, in percent; a sleep is priced
//                                   #   its CPU plus this times its latency, and a lcore
//                                   #   spins through a gap only when that is cheaper
//   busy_latency_weight_pct = 1000  # 0..10000, the same for gaps with a request waiting on
//                                   #   an upstream (or another lcore): its answer should
//                                   #   find the lcore awake (one wake per request at most)
//   spin_yield_us = 20              # 0..1000000: a worker spinning idle (any mode) gives
//                                   #   its CPU to any other runnable thread there this
//                                   #   often (sched_yield); 0 = never
//   neighbor_timeout_s = 60         # 1..86400: ARP entry lifetime
//
//   [tcp]                           # optional: the TCP layer of every (lcore, port)
//   max_connections = 1024          # 1..1048576 connection slots per lcore and port
//   syn_backlog = 128               # 1..65535 connections in SYN-RECEIVED per listener
//   syn_cookies = true              # RFC 4987 SYN cookies when the backlog is full
//   time_wait_ms = 60000            # 0..240000, 2*MSL (RFC 9293 3.10.8)
//   rack = true                     # RACK-TLP loss detection (RFC 8985) on connections
//                                   #   that negotiate SACK: lost retransmissions and
//                                   #   tail losses found in round trips, not by the
//                                   #   200 ms retransmission timeout (false: RFC 6675
//                                   #   alone, as Linux's net.ipv4.tcp_recovery = 0)
//   upstream_keepalive_ms = 5000    # 0..3600000: connections ferry opens (upstream)
//                                   #   send a TCP keep-alive probe after this long
//                                   #   without a segment from the peer, then every
//                                   #   as long; 3 unanswered close it. A peer that
//                                   #   lost the connection (crashed, restarted, its
//                                   #   reset lost) answers with a reset at once.
//                                   #   0 = off
//   tx_checksum_offload = false     # let the port compute TCP checksums (needs the
//                                   #   profile's tcp_cksum tx offload)
//
//   [tcp_test]                      # optional: test services inside ferry, 0 = off
//   echo_port = 7                   # 0..65535: sends back what it receives (RFC 862)
//   discard_port = 9                # reads and drops (RFC 863)
//   source_port = 19                # sends a deterministic stream (byte k = k mod 251)
//   source_bytes = 0                # 0..2^48: the source closes after this many, 0 = never
//   relay_port = 8000               # 0..65535: a TCP relay (proxy) to relay_to
//   relay_to = "10.77.0.2:9000"     # a.b.c.d:port; needs relay_port and vice versa
//                                   #   (the four ports must differ)
//
//   [[port]]                        # at least one
//   name = "tap0"                   # required, unique, 1..32 of [a-z0-9_]
//   profile = "net_tap"             # required, drivers-config/<profile>.toml
//   iface = "ferry0"                # kernel interface (tap to create, af_packet's veth);
//                                   #   1..15 of [A-Za-z0-9_.-], unique
//   # pci = "0000:03:00.0"          # for pci profiles: dddd:bb:dd.f, unique
//   address = "10.77.0.1/24"        # required; a host address (not network/broadcast,
//                                   #   not 0/8, 127/8, multicast or 240/4); prefix 1..32;
//                                   #   subnets of different ports must not overlap
//   gateway = "10.77.0.254"         # optional, a host inside the port's subnet
//   address6 = "fd00:77::1/64"      # optional, IPv6: neighbour discovery, ping, and TCP
//                                   #   (listeners, upstream servers) over IPv6 (not
//                                   #   multicast, link-local, ::/64)
//   gateway6 = "fd00:77::fe"        # optional, needs address6: the IPv6 router for every
//                                   #   destination off its prefix; on the prefix or
//                                   #   link-local (fe80::/10), not the port's own address
//   icmp6_errors_per_s = 10         # 0..100000: ICMPv6 errors (Parameter Problems) each
//                                   #   lcore sends on this port per second on average,
//                                   #   a token bucket (RFC 4443 2.4(f)); 0 = none at all
//   icmp6_error_burst = 10          # 1..100000: at most this many at once
//   router_discovery = true         # with address6 and no gateway6: solicit routers at
//                                   #   start and route what is off the prefix through
//                                   #   one a Router Advertisement names (RFC 4861 6.3)
//   mac = "02:00:0a:4d:00:01"       # optional, unicast and not all-zero
//   mtu = 1500                      # 68..9000
//   mbufs = 16384                   # 1024..16777216, the port's mbuf pool
//   rx_desc = 0                     # 0 = the profile's, else a power of two in 32..32768
//   tx_desc = 0                     # same
//   ring_frames = 0                 # 0 = the profile's, else a power of two in 16..65536:
//                                   #   frames per kernel packet ring, for profiles whose
//                                   #   devargs use {ring_frames} (net_af_packet)
//
//   [port.fault]                    # optional, for tests and benchmarks only: faults that
//                                   #   every lcore injects on this port's frames (lib/net
//                                   #   fault.h). Belongs to the [[port]] above it. The six
//                                   #   probabilities are per frame, 0.0..1.0 (the integers
//                                   #   0 and 1 too), default 0; all 0 = no injector at all
//   rx_drop = 0.02                  # received frames freed before the stack sees them
//   rx_duplicate = 0.0              # received frames delivered twice (the second a copy)
//   rx_reorder = 0.0                # received frames held back and delivered after later ones
//   tx_drop = 0.0                   # frames to send freed instead
//   tx_duplicate = 0.0              # frames sent twice
//   tx_reorder = 0.0                # frames sent after later ones
//   reorder_hold_us = 1000          # 1..100000: the longest a held frame waits
//   seed = 0                        # 0..2^63-1: each (lcore, port) draws from a stream
//                                   #   derived from seed, the port's index and the lcore,
//                                   #   so a run repeats and lcores differ; 0 = derived from
//                                   #   port index and lcore alone
//
//   # The HTTP reverse proxy. Every table below is optional: without a [[listener]] ferry
//   # runs no proxy. Cross-references (route -> listener/upstream, listener -> upstream,
//   # servers -> ports, listener ports -> [tcp_test]) are checked once the whole file has
//   # been read, so tables may come in any order.
//
//   [http]                          # optional: limits and timeouts of every listener
//   client_header_timeout_ms = 10000  # 1..3600000: the whole request head must arrive
//                                   #   within this (each head's deadline falls at random
//                                   #   in its last quarter: bursts are not cut together)
//   max_pending_heads = 0           # 0..1048576 per lcore: client connections waiting for
//                                   #   a complete request head (connected, or a request
//                                   #   begun); past it the one waiting longest is reset
//                                   #   (slowloris); 0 = 7/8 of the lcore's client slots
//   client_head_buffers = 0         # 0..4194304 per lcore: request heads being read at once
//                                   #   (a buffer of max_header_bytes + max_headers fields
//                                   #   each); past it a new head is answered 503; 0 = one
//                                   #   per client slot (never reached). Lowers the memory
//                                   #   bound; response heads always have a buffer
//   client_idle_timeout_ms = 60000  # 1..3600000: keep-alive idle time between requests
//   client_body_timeout_ms = 60000  # 1..3600000: the longest gap between request body bytes
//   tunnel_idle_timeout_ms = 600000 # 1..86400000: an upgraded connection (WebSocket: a
//                                   #   101 answer to an Upgrade request) is closed after
//                                   #   this long without a byte in either direction
//   max_requests_per_connection = 1000  # 0..1000000000, 0 = unlimited
//   max_header_bytes = 8192         # 256..65536: request head limit (431) and upstream
//                                   #   response head limit (502)
//   max_headers = 64                # 8..512 header fields per head (same answers)
//   max_body_bytes = 0              # 0..2^62 request body limit (413), 0 = unlimited
//   (Pipelining: a client connection's requests are answered in order, one at a time;
//   the ones behind wait unread in TCP's receive window: no queue to bound.)
//   drain_timeout_ms = 10000        # 0..600000: on SIGTERM, how long open connections may
//                                   #   finish their requests
//   drain_grace_ms = 0              # 0..600000: on SIGTERM, how long ferry still accepts
//                                   #   new connections (readiness, /healthz, already
//                                   #   answers 503) before the drain begins: the time a
//                                   #   balancer needs to see it unready (docs/OPERATIONS.md)
//   via = "ferry"                   # the Via header's pseudonym: 1..32 of [A-Za-z0-9._-]
//   add_x_forwarded = true          # add X-Forwarded-For and X-Forwarded-Proto
//   access_log = "/var/log/ferry/access.log"  # "" (default) = no access log; else an
//                                   #   absolute path (starting with '/', not ending with
//                                   #   '/'), at most 4095 bytes, no control characters.
//                                   #   Opened (O_APPEND|O_CREAT, 0644) at start-up: ferry
//                                   #   exits 1 when it cannot; reopened on SIGHUP
//   access_log_format = "combined"  # combined | json (docs/OPERATIONS.md "Access log");
//                                   #   accepted without access_log, and then unused
//
//   [[listener]]                    # optional, any number
//   name = "web"                    # required, unique among listeners, 1..32 of [a-z0-9_]
//   port = 80                       # required, 1..65535, different from every [tcp_test]
//                                   #   port; two listeners share it only when each is
//                                   #   bound to a different [[port]]
//   on = "front"                    # optional: listen on this [[port]] only
//   address = "10.1.0.1"            # optional: the same, by the [[port]]'s address or
//                                   #   address6 (with `on`, both must name one port);
//                                   #   without either the listener is open on every
//                                   #   port; on a port it takes IPv4 and IPv6 clients
//   max_connections = 0             # 0..1048576 client connections per lcore; 0 = only
//                                   #   [tcp] max_connections limits them
//   default_upstream = "app"        # optional: an [[upstream]] name, for requests no
//                                   #   route matches; without it they get 404
//
//   [[route]]                       # optional, any number; tried in file order, the first
//                                   #   match wins. All three conditions must hold
//   listener = "web"                # optional: only requests on this [[listener]]
//                                   #   (default: every listener)
//   host = "example.com"            # optional (default: every host): compared with the
//                                   #   request's Host without its :port, ignoring case.
//                                   #   A host name (labels of [A-Za-z0-9_-], no port) or
//                                   #   "*.example.com": any name ending in ".example.com"
//                                   #   (not example.com itself)
//   path_prefix = "/api/"           # optional, default "/": the request path starts with
//                                   #   it, byte for byte; visible ASCII starting with "/",
//                                   #   without '?' or '#', at most 1024 bytes
//   upstream = "api"                # required: an [[upstream]] name
//   request_headers.set = { "X-Env" = "prod" }   # optional header rules toward the origin:
//   request_headers.add = { "X-Tag" = "a" }      #   set, add, remove (header_rules below;
//   request_headers.remove = ["X-Debug"]         #   docs/OPERATIONS.md "Header rules")
//   response_headers.set = { "Cache-Control" = "no-store" }   # and toward the client
//   response_timeout_ms = 300000    # optional: the route's own connect_, response_, read_,
//                                   #   write_ and total_timeout_ms, each in place of the
//                                   #   upstream's (same limits)
//                                   # (at most max_routes routes in all)
//
//   [[upstream]]                    # optional, any number
//   name = "app"                    # required, unique among upstreams, 1..32 of [a-z0-9_]
//   balance = "round_robin"         # round_robin | least_conn | consistent_hash
//   hash_key = "client_ip"          # client_ip | uri | host; only with consistent_hash
//   pool = "local"                  # local: each lcore keeps its own connections to the
//                                   #   servers | shared: one set of connections for all
//                                   #   lcores, spread over them (DESIGN.md)
//   shared_connections = 4          # 1..1024, pool = "shared" only: connections per server
//                                   #   in all
//   shared_pick = "round_robin"     # pool = "shared" only: round_robin: each request takes
//                                   #   the server's next connection, whichever worker owns
//                                   #   it (so with n workers (n-1)/n of them are handed
//                                   #   over) | own_idle_first: an idle connection the
//                                   #   request's own worker owns when there is one
//                                   #   (fewer hand-offs and wake-ups at low load), the
//                                   #   next one otherwise
//   max_idle = 256                  # 0..65535, pool = "local" only: idle keep-alive
//                                   #   connections kept per lcore and server; an idle one
//                                   #   past it is closed (churn: TIME-WAIT, connects)
//   connect_timeout_ms = 5000       # 1..600000: covers two lost SYNs (retries at 1 s, 3 s)
//   write_timeout_ms = 60000        # 1..3600000: the longest gap in sending the request
//                                   #   (while its body is still being sent)
//   response_timeout_ms = 60000     # 1..3600000: request sent -> response head (504 after)
//   read_timeout_ms = 60000         # 1..3600000: the longest gap between response bytes
//   total_timeout_ms = 0            # 0..3600000: request given to a connection -> response
//                                   #   complete, whatever flows; 0 = no bound
//   retries = 1                     # 0..10: replays of a request without a body whose
//                                   #   connection failed before any response byte: any
//                                   #   method if nothing was sent (connect refused or
//                                   #   timed out), an idempotent one also after; on
//                                   #   another server when one is up (docs/OPERATIONS.md)
//   max_fails = 3                   # 0..1000: passive health, this many failures in a row
//                                   #   mark a server down; 0 = never
//   fail_timeout_ms = 10000         # 1..3600000: how long a server stays down
//   when_all_down = "try"           # every server down (passive or active checks):
//                                   #   "try" sends each request to a server all the
//                                   #   same (as nginx does with one server, Envoy's
//                                   #   panic routing), so a server back up serves at
//                                   #   once; "refuse" answers 503 without trying
//   health_check_path = ""          # "" = no active checks, else the path (and query) the
//                                   #   checks request: visible ASCII starting with "/",
//                                   #   without '#', at most 1024 bytes
//   health_check_interval_ms = 2000 # 100..3600000
//   health_check_timeout_ms = 1000  # 1..3600000
//   health_check_host = ""          # Host of the checks: "" = the server's a.b.c.d:port,
//                                   #   else a host name, optionally with :port
//                                   #   (the health_check_* keys are accepted without a
//                                   #   path, and then unused)
//
//   [[upstream.server]]             # at least one per upstream; belongs to the
//                                   #   [[upstream]] above it
//   address = "10.77.0.2:8080"      # required, a.b.c.d:port or [ipv6]:port, unique within
//                                   #   the upstream. A usable host address inside some
//                                   #   [[port]]'s subnet (not its network or broadcast
//                                   #   address), or any address when some port has a
//                                   #   gateway; IPv6: on some port's address6 prefix or
//                                   #   link-local; never one of ferry's own addresses
//   weight = 1                      # 1..1000, the server's relative share
//
//   [admin]                         # optional: the operator's side door. A kernel TCP
//                                   #   socket served by a control thread (never a worker),
//                                   #   in the network namespace ferry runs in; it is not
//                                   #   one of ferry's DPDK ports
//   metrics_address = "127.0.0.1:9180"  # optional, a.b.c.d:port (port 1..65535): HTTP/1.1
//                                   #   GET /metrics (Prometheus text format 0.0.4) and
//                                   #   GET /healthz. 0.0.0.0 = every kernel address; not
//                                   #   a multicast, broadcast or 240/4 address. Absent =
//                                   #   no listener. ferry exits 1 when it cannot bind it
//
// A driver profile (drivers-config/<name>.toml, see drivers-config/README.md):
//
//   [profile]
//   name = "net_tap"                # must match the file name
//   bus = "vdev"                    # vdev | pci
//   binding = "vfio-pci"            # pci only: vfio-pci (default for pci) | none (bifurcated
//                                   #   PMDs such as mlx5 drive the device next to its
//                                   #   kernel driver); vdev profiles may only say none
//   kernel_driver = "ixgbe"         # pci only, [a-z0-9_-]{1,32}: the kernel driver the
//                                   #   device leaves (vfio-pci) or stays on (none, required)
//   driver = "net_tap"              # DPDK driver name, net_[a-z0-9_]+
//   devargs = "iface={iface}"       # placeholders {iface} {queues} {index} {ring_frames},
//                                   #   no whitespace
//   max_queues = 4                  # 1..1024
//   rx_desc = 64                    # power of two in 32..32768
//   tx_desc = 64
//   ring_frames = 4096              # power of two in 16..65536; required exactly when
//                                   #   devargs use {ring_frames} (the port may override)
//   rx_interrupts = true            # can a queue wake a sleeping lcore
//   rss = false                     # configure RTE_ETH_MQ_RX_RSS (false: the device
//                                   #   spreads flows itself, or there is one queue)
//   rx_offloads = ["ipv4_cksum"]    # from known_rx_offloads()
//   tx_offloads = ["multi_segs"]    # from known_tx_offloads()
//   caveats = "..."                 # optional free text
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/base/result.h"
#include "ferry/base/ip_address.h"
#include "ferry/base/ipv6_text.h"
#include "ferry/base/wakeup_defaults.h"

namespace ferry::config {

// How a producer wakes a consumer lcore that may be asleep (DESIGN.md "The doorbell
// protocol"): only when it announced idleness, on every enqueue, or never (cores poll).
enum class wakeup_mode : uint8_t { conditional, always, poll, adaptive };
std::string_view to_string(wakeup_mode m);
// "conditional" | "always" | "poll" | "adaptive"; anything else (including other case) -> nullopt.
std::optional<wakeup_mode> parse_wakeup_mode(std::string_view s);

// Where a TOML node is. line/column are 1-based; 0 = unknown.
struct source_pos {
    std::string file;
    uint32_t line = 0, column = 0;
    bool operator==(const source_pos &) const = default;
};

struct error {
    source_pos where;
    std::string key;  // key path: "ferry.workers", "port[0].address"; empty if none
    std::string message;
    // "file:line:col: key 'port[0].address': message"; unknown parts are left out
    // ("file: message", "key 'x': message", "message").
    std::string to_string() const;
};

enum class bus : uint8_t { vdev, pci };
std::string_view to_string(bus b);

// What deploy/ferry-setup does with a pci device before ferry starts: bind it to vfio-pci,
// or leave it on its kernel driver (bifurcated PMDs: mlx5 works through rdma-core).
enum class binding : uint8_t { none, vfio_pci };
std::string_view to_string(binding b);  // "none" | "vfio-pci"

// Frames per kernel packet ring ({ring_frames}, af_packet's framecnt): a power of two in
// min_ring_frames..max_ring_frames (profile.cpp says why).
inline constexpr uint32_t min_ring_frames = 16, max_ring_frames = 65536;
constexpr bool is_ring_frames(int64_t n) {
    return n >= min_ring_frames && n <= max_ring_frames && (n & (n - 1)) == 0;
}

struct driver_profile {
    std::string name, file;  // profile name, file it came from
    bus bus_kind = bus::vdev;
    binding bind = binding::none;  // pci profiles default to vfio_pci
    std::string kernel_driver;     // pci only; required with binding::none
    std::string driver;   // DPDK driver name, e.g. "net_tap"
    // template; {iface} {queues} {index} {ring_frames} are replaced by expand_devargs
    std::string devargs;
    uint16_t max_queues = 1, rx_desc = 0, tx_desc = 0;
    // Frames per kernel packet ring (af_packet's framecnt) when devargs use
    // {ring_frames}, else 0.
    uint32_t ring_frames = 0;
    bool rx_interrupts = false, rss = false;
    std::vector<std::string> rx_offloads, tx_offloads;  // names from known_*_offloads()
    std::string caveats;
};

// The offload names a profile may list, in DPDK's RTE_ETH_{RX,TX}_OFFLOAD_* order. A name
// means the same flag minus the prefix, lower-cased (tcp_tso = RTE_ETH_TX_OFFLOAD_TCP_TSO).
std::span<const std::string_view> known_rx_offloads();
std::span<const std::string_view> known_tx_offloads();

// [port.fault]: see the file comment. Probabilities stay doubles here (control path);
// lib/net's fault_params_of turns them into the integer thresholds the data path uses.
struct fault_config {
    double rx_drop = 0, rx_duplicate = 0, rx_reorder = 0;
    double tx_drop = 0, tx_duplicate = 0, tx_reorder = 0;
    uint32_t reorder_hold_us = 1000;
    uint64_t seed = 0;
    // Any probability above 0. A [port.fault] table whose probabilities are all 0 is the
    // same as none: the app builds no injector.
    bool enabled() const {
        return rx_drop > 0 || rx_duplicate > 0 || rx_reorder > 0 || tx_drop > 0 ||
               tx_duplicate > 0 || tx_reorder > 0;
    }
    bool operator==(const fault_config &) const = default;
};

struct port_config {
    std::string name, profile, iface, pci;
    uint32_t address = 0;  // IPv4, host byte order, from "a.b.c.d/len"
    uint8_t prefix_len = 0;
    std::optional<uint32_t> gateway;
    std::optional<ipv6_bytes> address6;  // from "a:b::c/len" (ferry/base/ipv6_text.h)
    uint8_t prefix6_len = 0;
    std::optional<ipv6_bytes> gateway6;  // an on-link IPv6 router (needs address6)
    uint32_t icmp6_errors_per_s = 10;    // RFC 4443 §2.4(f) rate limit, per lcore
    uint32_t icmp6_error_burst = 10;
    bool router_discovery = true;        // RFC 4861 §6.3, without gateway6
    std::optional<std::array<uint8_t, 6>> mac;
    uint16_t mtu = 1500;
    uint32_t mbufs = 16384;
    uint16_t rx_desc = 0, tx_desc = 0;  // 0 = the profile's
    uint32_t ring_frames = 0;           // 0 = the profile's
    fault_config fault;                 // [port.fault]; off unless fault.enabled()
    uint32_t index = 0;                 // position in the [[port]] list: key paths, {index}
    source_pos where;                   // the port's table
    bool operator==(const port_config &) const = default;
};

struct tcp_config {
    uint32_t max_connections = 1024;
    uint32_t syn_backlog = 128;
    bool syn_cookies = true;
    uint32_t time_wait_ms = 60000;
    uint32_t upstream_keepalive_ms = 5000;  // 0 = off
    bool tx_checksum_offload = false;
    bool rack = true;  // RACK-TLP loss detection (RFC 8985) with SACK
    bool prr = true;    // Proportional Rate Reduction (RFC 6937) in SACK recovery
    bool frto = true;   // F-RTO (RFC 5682): undo a spurious retransmission timeout
    bool dsack = true;  // report duplicate data to the sender (RFC 2883 D-SACK)
    // A tail loss probe sends new data (RFC 8985 §7.3's SHOULD) instead of the
    // last segment again (tcp_conn_config::tlp_new_data).
    bool tlp_new_data = false;
    // "cubic" (RFC 9438), "new_reno" (RFC 5681/6582) or "bbr" (BBR v1's
    // model, lib/net tcp_bbr.h): the congestion control of every connection.
    std::string congestion_control = "cubic";
    bool operator==(const tcp_config &) const = default;
};

struct tcp_test_config {
    uint16_t echo_port = 0, discard_port = 0, source_port = 0;  // 0 = off
    uint64_t source_bytes = 0;                                  // 0 = unlimited
    uint16_t relay_port = 0;     // 0 = off; accepted connections are relayed to relay_to
    uint32_t relay_addr = 0;     // relay_to's address, host byte order
    uint16_t relay_to_port = 0;  // relay_to's port
    bool operator==(const tcp_test_config &) const = default;
};

// ---- The HTTP reverse proxy: [http], [[listener]], [[route]], [[upstream]] ----
// See the file comment for every key's meaning and range. The defaults below are the
// documented ones.

enum class balance_mode : uint8_t { round_robin, least_conn, consistent_hash };
enum class hash_key_kind : uint8_t { client_ip, uri, host };
enum class pool_mode : uint8_t { local, shared };
enum class shared_pick_mode : uint8_t { round_robin, own_idle_first };
enum class log_format : uint8_t { combined, json };
enum class all_down_mode : uint8_t { try_anyway, refuse };
std::string_view to_string(balance_mode m);   // "round_robin" | "least_conn" | "consistent_hash"
std::string_view to_string(hash_key_kind k);  // "client_ip" | "uri" | "host"
std::string_view to_string(pool_mode m);      // "local" | "shared"
std::string_view to_string(shared_pick_mode m);  // "round_robin" | "own_idle_first"
std::string_view to_string(log_format f);     // "combined" | "json"
std::string_view to_string(all_down_mode m);  // "try" | "refuse"

// [http]: applies to every listener.
struct http_config {
    uint32_t client_header_timeout_ms = 10000;
    uint32_t max_pending_heads = 0;  // per lcore; 0 = 7/8 of the client slots
    uint32_t client_head_buffers = 0;  // per lcore; 0 = one per client slot
    uint32_t client_idle_timeout_ms = 60000;
    uint32_t client_body_timeout_ms = 60000;
    uint32_t tunnel_idle_timeout_ms = 600000;
    uint32_t max_requests_per_connection = 1000;  // 0 = unlimited
    uint32_t max_header_bytes = 8192;
    uint16_t max_headers = 64;
    uint64_t max_body_bytes = 0;  // 0 = unlimited
    uint32_t drain_timeout_ms = 10000;
    uint32_t drain_grace_ms = 0;
    std::string via = "ferry";
    bool add_x_forwarded = true;
    std::string access_log;  // "" = no access log; else an absolute path
    log_format access_log_format = log_format::combined;
};

struct listener_config {
    std::string name;
    uint16_t port = 0;
    uint32_t max_connections = 0;     // per lcore; 0 = only [tcp] max_connections
    std::string default_upstream;     // "" = none: unmatched requests get 404
    int default_upstream_index = -1;  // into ferry_config::upstreams; -1 = none
    // Where it listens: `on` (a [[port]] name) and/or `address` (a [[port]]'s
    // address or address6; 0 = unset) name one port; neither: every port. A
    // listener on a port takes that port's IPv4 and IPv6 clients alike.
    std::string on;
    uint32_t address = 0;
    std::optional<ipv6_bytes> address6;  // `address` written as an IPv6 address
    int port_index = -1;  // into ferry_config::ports; -1 = every port
    // Its identity for ferry's life: its index in ferry_config::listener_slots.
    // The parse numbers the listeners in order; a reload gives a listener the
    // slot its name had (config/reload.h carry_slots), so that its counters
    // and its connections stay with it when others are added or removed.
    uint16_t slot = 0;
    source_pos where;     // the listener's table
};

// A route's header rules ([route.request_headers], [route.response_headers];
// docs/OPERATIONS.md "Header rules"): received fields removed by name, fields
// set (the received ones of that name dropped, this value written once) and
// added (written beside the received ones). Names are tokens and are compared
// in any case; the framing and hop-by-hop fields, Host, and the fields ferry
// writes itself (Via, X-Forwarded-*) are refused. At most max_header_rules
// entries in all per direction.
struct header_rules {
    static constexpr size_t max_header_rules = 32;
    std::vector<std::string> remove;
    std::vector<std::pair<std::string, std::string>> set, add;  // name as written, value
    [[nodiscard]] bool empty() const { return remove.empty() && set.empty() && add.empty(); }
};

// Routes in all: a route's index travels in the proxy's cross-core messages
// (11 bits), for the response rules of a request handed to another lcore.
inline constexpr size_t max_routes = 2046;
// Server slots beyond an upstream's servers at start-up, for servers a
// reload adds (upstream_config::slot_capacity).
inline constexpr uint32_t server_slot_headroom = 64;
inline constexpr uint32_t max_server_slots = 65535;
inline constexpr size_t max_servers = 4096;  // per upstream
// Listener slots beyond the listeners at start-up, for listeners a reload
// adds (ferry_config::listener_slot_capacity).
inline constexpr uint32_t listener_slot_headroom = 16;
// Upstream slots beyond the upstreams at start-up, for upstreams a reload
// adds (ferry_config::upstream_slot_capacity), and the server slots each of
// those has (the servers it comes with plus those later reloads add).
inline constexpr uint32_t upstream_slot_headroom = 16;
inline constexpr uint32_t added_upstream_server_slots = 32;
inline constexpr size_t max_listeners = 1024;

struct route_config {
    std::string listener;     // "" = every listener
    int listener_index = -1;  // into ferry_config::listeners; -1 = all
    // "" = every host. Otherwise lowercased: the exact name, or with host_wildcard the
    // suffix a name must end with, leading dot included ("*.Example.com" -> ".example.com").
    // Never contains a port.
    std::string host;
    bool host_wildcard = false;
    std::string path_prefix = "/";
    std::string upstream;
    int upstream_index = -1;  // into ferry_config::upstreams; always resolved after parse()
    header_rules request_headers;   // toward the origin
    header_rules response_headers;  // toward the client (final responses, not 1xx)
    // The route's own upstream timeouts; inherit_timeout = the upstream's.
    static constexpr uint32_t inherit_timeout = UINT32_MAX;
    uint32_t connect_timeout_ms = inherit_timeout, response_timeout_ms = inherit_timeout,
             read_timeout_ms = inherit_timeout, write_timeout_ms = inherit_timeout,
             total_timeout_ms = inherit_timeout;
    [[nodiscard]] bool own_timeouts() const {
        return connect_timeout_ms != inherit_timeout || response_timeout_ms != inherit_timeout ||
               read_timeout_ms != inherit_timeout || write_timeout_ms != inherit_timeout ||
               total_timeout_ms != inherit_timeout;
    }
    // Stable across reloads (config/reload.h carry_slots): a route a reload
    // keeps (route_map) keeps its id, a new one takes the next unused id
    // (ferry_config::route_ids). A request handed to another worker carries
    // its route's id, so routes may change while an upstream has a shared pool.
    uint32_t id = 0;
    source_pos where;               // the route's table
};

struct server_config {
    ip_address addr;  // IPv4 or IPv6 (ferry/base/ip_address.h)
    uint16_t port = 0;
    uint32_t weight = 1;
    // The server's identity for ferry's life: its index in its upstream's
    // `slots`. The parse numbers the servers in order; a reload gives a server
    // the slot its endpoint had (config/reload.h carry_slots), so that
    // per-server counters, health and connections, which are kept by slot,
    // stay with the server when others are added, removed or reordered.
    uint16_t slot = 0;
    source_pos where;  // the server's table
};

// An upstream server's address and port.
struct server_endpoint {
    ip_address addr;
    uint16_t port = 0;
    bool operator==(const server_endpoint &) const = default;
};

struct upstream_config {
    std::string name;
    balance_mode balance = balance_mode::round_robin;
    hash_key_kind hash_key = hash_key_kind::client_ip;  // meaningful with consistent_hash
    pool_mode pool = pool_mode::local;
    uint32_t shared_connections = 4;  // meaningful with pool_mode::shared
    shared_pick_mode shared_pick = shared_pick_mode::round_robin;  // likewise
    uint32_t max_idle = 256;          // meaningful with pool_mode::local
    // nginx's proxy_*_timeout and HAProxy's timeout connect/server in spirit:
    // connect, then inactivity while sending and while receiving.
    uint32_t connect_timeout_ms = 5000, response_timeout_ms = 60000, read_timeout_ms = 60000,
             write_timeout_ms = 60000, total_timeout_ms = 0;
    uint32_t retries = 1;
    uint32_t max_fails = 3;  // 0 = passive health checks off
    uint32_t fail_timeout_ms = 10000;
    all_down_mode when_all_down = all_down_mode::try_anyway;
    std::string health_check_path;  // "" = no active health checks
    uint32_t health_check_interval_ms = 2000, health_check_timeout_ms = 1000;
    std::string health_check_host;       // "" = the server's a.b.c.d:port or [v6]:port
    std::vector<server_config> servers;  // at least one
    // Every endpoint the upstream has had a server at since ferry started,
    // by slot (a reload appends, never changes one): what a slot of a server
    // that a reload removed was, for the logs and telemetry.
    std::vector<server_endpoint> slots;
    // The slots per-server state is allocated for at start-up: the servers
    // ferry started with plus server_slot_headroom (a reload that needs more
    // is refused: restart).
    uint32_t slot_capacity = 0;
    // A placeholder a reload left where an upstream it removed was (config/
    // reload.h carry_slots): no servers, no route or listener leads to it;
    // requests in flight there finish with its last values. Listings skip it.
    bool retired = false;
    source_pos where;                    // the upstream's table
    bool health_checks() const { return !health_check_path.empty(); }
};

// [admin]: see the file comment.
struct admin_config {
    // The metrics listener's IPv4 address, host byte order (0 = INADDR_ANY); nullopt =
    // no metrics listener.
    std::optional<uint32_t> addr;
    uint16_t port = 0;  // 1..65535 when addr is set
    source_pos where;   // the metrics_address value, for messages about it
    bool operator==(const admin_config &) const = default;
};

struct ferry_config {
    std::string source;    // file path, or "<embedded default>"
    uint32_t workers = 0;  // 0 = one worker per EAL lcore
    wakeup_mode wakeup = wakeup_mode::adaptive;
    uint32_t idle_threshold_us = wakeup_defaults::idle_threshold_us;
    uint32_t nap_budget_us = wakeup_defaults::nap_budget_us;
    uint32_t latency_weight_pct = wakeup_defaults::latency_weight_pct;
    uint32_t busy_latency_weight_pct = wakeup_defaults::busy_latency_weight_pct;
    uint32_t spin_yield_us = wakeup_defaults::spin_yield_us;
    uint32_t neighbor_timeout_s = 60;
    tcp_config tcp;
    tcp_test_config tcp_test;
    std::vector<port_config> ports;
    // The proxy. After parse() every name a route or listener gives is resolved to an
    // index into these vectors, and every server is reachable through some port.
    http_config http;
    std::vector<listener_config> listeners;  // empty = no proxy
    // Every listener name since ferry started, by slot (a reload appends), and
    // the slots per-listener state is allocated for (the listeners ferry
    // started with plus listener_slot_headroom).
    std::vector<std::string> listener_slots;
    uint32_t listener_slot_capacity = 0;
    std::vector<route_config> routes;        // file order = match order
    // By slot: an upstream's position is its identity for ferry's life. The
    // parse keeps the file's order; a reload (config/reload.h carry_slots)
    // puts each upstream where its name was, an added one after the others,
    // and leaves a retired placeholder where a removed one was.
    std::vector<upstream_config> upstreams;
    // The upstream slots per-upstream state is allocated for: the upstreams
    // ferry started with plus upstream_slot_headroom.
    uint32_t upstream_slot_capacity = 0;
    // Route ids handed out since ferry started (route_config::id): the next new one.
    uint32_t route_ids = 0;
    admin_config admin;
};

// The upstream slots per-upstream state is allocated for, and the server
// slots of upstream slot `u` (one a reload may add: added_upstream_server_slots).
[[nodiscard]] inline size_t upstream_capacity(const ferry_config &c) noexcept {
    return c.upstream_slot_capacity > c.upstreams.size() ? c.upstream_slot_capacity
                                                         : c.upstreams.size();
}
[[nodiscard]] inline size_t server_capacity(const ferry_config &c, size_t u) noexcept {
    if (u >= c.upstreams.size()) return added_upstream_server_slots;
    const upstream_config &uc = c.upstreams[u];
    return uc.slot_capacity > uc.servers.size() ? uc.slot_capacity : uc.servers.size();
}

// Parses and validates a whole configuration. source_name is used in error positions and
// copied to ferry_config::source. Returns the first error in document order.
result<ferry_config, error> parse(std::string_view toml_text, std::string_view source_name);
// Reads path and parse()s it. An unreadable file -> error{where.file = path, message =
// "cannot read file: <errno text>"}.
result<ferry_config, error> load_file(const std::string &path);
// The text load_file() parses: the file's bytes (at most 1 MiB), or "cannot read file:
// <errno text>" / "file is larger than 1 MiB". For a reload, which hashes the text it parsed.
result<std::string, std::string> read_text(const std::string &path);
// TOML text of the built-in configuration: one net_tap port "tap0" on iface "ferry0",
// address 10.77.0.1/24, no gateway, and a proxy listener on port 80 whose default
// upstream is the demo origin 10.77.0.2:8080. Parse it with source_name embedded_default_name.
std::string_view embedded_default();
inline constexpr std::string_view embedded_default_name = "<embedded default>";

// Parses and validates a driver profile. When source_name's file name ends in ".toml", the
// profile's name must equal the rest of it (drivers-config/net_tap.toml names net_tap).
result<driver_profile, error> parse_profile(std::string_view text, std::string_view source_name);
// Loads dir/<name>.toml. name must be [a-z0-9_]+ (no paths). A missing file -> error
// listing the profiles available in dir; an unreadable dir or file -> errno text.
result<driver_profile, error> load_profile(const std::string &dir, std::string_view name);

// Checks a port against the profile it will be opened with, for `queues` queue pairs:
// the port names this profile; a vdev profile whose devargs use {iface} needs iface, other
// vdev profiles and pci profiles must not set it; pci profiles need pci (dddd:bb:dd.f),
// vdev profiles must not set it; 1 <= queues <= max_queues; mtu in 68..9000; rx/tx_desc
// (the port's or else the profile's) powers of two in 32..32768; mbufs cover the descriptor
// rings, queues * (rx_desc + tx_desc); ring_frames set on the port only when the profile's
// devargs use {ring_frames}, and the frames used a power of two in 16..65536. nullopt if
// fine, else an error at the port's table.
std::optional<error> check_port(const port_config &port, const driver_profile &profile,
                                uint32_t queues);

// The profile's devargs with {iface}, {queues}, {index} (port.index) and {ring_frames}
// (the port's, else the profile's) filled in.
std::string expand_devargs(const driver_profile &profile, const port_config &port, uint32_t queues);
// The EAL device argument for the port: vdev -> "<driver>_<port name>[,<devargs>]" (for
// --vdev; EAL matches the driver by name prefix), pci -> "<pci>[,<devargs>]" (for -a).
std::string eal_device(const driver_profile &profile, const port_config &port, uint32_t queues);

// "10.77.0.1" (host byte order in).
std::string format_ipv4(uint32_t addr);
// "10.77.0.2:8080", "[fd00:77::2]:8080".
std::string format_endpoint(const ip_address &addr, uint16_t port);

// A route's header rules in one line, for --check and /ferry/config/routes:
// `set "X-Env: prod"; add "X-Tag: a"; remove x-debug` ("" when there are none).
std::string describe_header_rules(const header_rules &h);
// A route's own timeouts, "response 300000 ms, total off" ("" when it has none).
std::string describe_route_timeouts(const route_config &r);

// Where a listener listens: its port's name, or "*" for every port (the ready line's
// `name:port@where`, /ferry/config/listeners' "on").
std::string_view listener_where(const ferry_config &cfg, const listener_config &l);

// The proxy part of the effective configuration, for `ferry --check`: human-readable lines,
// each ending in '\n'. First "proxy: off (no [[listener]])" or "proxy: N listener(s), ...",
// then (with listeners) one line for [http], one per listener, one per route in match
// order (each followed by an indented line per direction of its header rules), and one
// per upstream followed by one indented line per server.
std::string describe_proxy(const ferry_config &cfg);
// "02:00:0a:4d:00:01".
std::string format_mac(const std::array<uint8_t, 6> &mac);

}  // namespace ferry::config
