// The access log's data path: one fixed-size record per request, and the
// per-lcore single-producer/single-consumer ring a worker writes them into.
//
// Shape (docs/OPERATIONS.md "Access log"). The worker that owns a client
// connection captures what a line needs while the request head is still in
// the head buffer (the buffer is reused for the next request): method, target,
// Host, Referer, User-Agent, each copied and truncated to the limits below.
// When the request ends — the response's last byte was handed to the client
// connection, a generated error response was sent, or the connection was
// aborted or went away first — it copies the record into its lcore's ring
// (one memcpy, no allocation, no lock, no system call). ONE control thread
// (app/ferry/access_log.cpp) drains every ring, formats the lines and
// write()s them in batches. A worker never waits for it: when the ring is
// full the record is dropped and counted (http_counters::access_log_dropped).
//
// Times are the reactor's clock (reactor::now_ns(), TSC based, nanoseconds);
// the writer converts them to wall-clock time, so a worker never reads
// CLOCK_REALTIME.
#pragma once

#include <cstdint>

#include "ferry/base/record_ring.h"
#include "ferry/net/ip_addr.h"

namespace ferry::proxy {

// The timeout that ended a request (access_record::timeout; counted in
// http_counters as timeouts_<name>). Client side: header, body (408); the
// keep-alive idle timeout ends no request. Upstream side (504 before the
// response began, a reset after): connect, write (sending the request),
// response (waiting for its head), read (its body), total. A tunnel (an
// upgraded connection): tunnel, neither side sent a byte in
// tunnel_idle_timeout_ms (both closed with a FIN).
enum class timeout_kind : uint8_t { none, header, body, connect, write, response, read, total, tunnel };

// "-", "header", "body", "connect", "write", "response", "read", "total", "tunnel".
[[nodiscard]] constexpr const char *name(timeout_kind k) noexcept {
    constexpr const char *names[] = {"-",     "header",   "body", "connect", "write",
                                     "response", "read", "total", "tunnel"};
    const auto i = static_cast<unsigned>(k);
    return i < sizeof names / sizeof names[0] ? names[i] : "?";
}

// Why a request ended without its response complete, or with a generated
// answer (access_record::reason; `reason=` in the combined line, "reason" in
// JSON; docs/OPERATIONS.md "Access log"). The first cause found is kept.
// Like HAProxy's termination state and Envoy's response flags, a small set:
//   upstream_connect_refused  the server answered the SYN with a reset (502)
//   upstream_reset            the upstream connection was reset (502, or cut)
//   upstream_closed           the origin closed before its response ended (502, or cut)
//   upstream_timeout          an upstream timeout; `to=` says which (504, or cut)
//   upstream_bad_response     the response did not parse or frame (502, or cut)
//   no_healthy_server         every server of the upstream down (503)
//   no_resources              no mbuf, connection slot, head buffer or queue room (503)
//   no_route                  no route and no default upstream (404)
//   bad_request               the request was rejected (400, 413, 414, 431, 501, 505)
//   client_timeout            the request did not arrive in time (408)
//   client_aborted            the client closed or reset first (499, or cut)
//   evicted                   a slow head reset to make room (slowloris, 444)
//   drain_timeout             still open when drain_timeout_ms passed (444)
enum class term_reason : uint8_t {
    none,
    upstream_connect_refused,
    upstream_reset,
    upstream_closed,
    upstream_timeout,
    upstream_bad_response,
    no_healthy_server,
    no_resources,
    no_route,
    bad_request,
    client_timeout,
    client_aborted,
    evicted,
    drain_timeout,
};

// "-" for none, else the enumerator's name.
[[nodiscard]] constexpr const char *name(term_reason r) noexcept {
    constexpr const char *names[] = {"-",
                                     "upstream_connect_refused",
                                     "upstream_reset",
                                     "upstream_closed",
                                     "upstream_timeout",
                                     "upstream_bad_response",
                                     "no_healthy_server",
                                     "no_resources",
                                     "no_route",
                                     "bad_request",
                                     "client_timeout",
                                     "client_aborted",
                                     "evicted",
                                     "drain_timeout"};
    const auto i = static_cast<unsigned>(r);
    return i < sizeof names / sizeof names[0] ? names[i] : "?";
}

// One request as the access log sees it. Fixed size, trivially copyable.
struct access_record {
    // Field limits: longer values are cut to this many bytes (documented).
    static constexpr uint32_t method_cap = 16;
    static constexpr uint32_t target_cap = 512;  // also the raw request line of a rejected head
    static constexpr uint32_t host_cap = 128;
    static constexpr uint32_t referer_cap = 256;
    static constexpr uint32_t user_agent_cap = 256;
    static constexpr uint64_t no_time = UINT64_MAX;

    // flags
    static constexpr uint8_t f_parsed = 1;      // the head parsed: method/target/version valid
    static constexpr uint8_t f_crossed = 2;     // handed to another lcore (shared pool)
    static constexpr uint8_t f_aborted = 4;     // the response was cut short, or never sent
    static constexpr uint8_t f_has_body = 8;    // (worker-internal) the framer counts the body
    static constexpr uint8_t f_truncated = 16;  // some field was cut to its limit

    uint64_t t_start = 0;       // the request's first byte was read (reactor ns)
    uint64_t t_end = 0;         // the request ended (reactor ns)
    uint64_t bytes_sent = 0;    // response bytes handed to the client connection (head + body)
    uint64_t body_bytes = 0;    // request body payload bytes read (chunk framing not counted)
    uint64_t uct_ns = no_time;  // upstream connect time (0: a reused connection), or none
    uint64_t urt_ns = no_time;  // request sent upstream -> response head, or none
    net::ip_addr client_addr;   // IPv4 or IPv6
    uint16_t client_port = 0;
    uint16_t status = 0;        // sent to the client; 499/444 when none was (see OPERATIONS.md)
    int16_t upstream = -1;      // index into ferry_config::upstreams, or -1
    int16_t server = -1;        // that upstream's server slot (config.h server_config::slot), or -1
    uint16_t server_port = 0;   // the server's address (server >= 0)
    net::ip_addr server_addr;   //   IPv4 or IPv6
    uint8_t version_minor = 1;  // HTTP/1.<minor> (f_parsed)
    uint8_t flags = 0;
    uint8_t method_len = 0;
    timeout_kind timeout = timeout_kind::none;  // the timeout that ended it, if one did
    term_reason reason = term_reason::none;     // why it ended badly, if it did
    uint16_t target_len = 0, host_len = 0, referer_len = 0, user_agent_len = 0;
    char method[method_cap];
    char target[target_cap];
    char host[host_cap];
    char referer[referer_cap];
    char user_agent[user_agent_cap];
};
static_assert(sizeof(access_record) <= 1280, "keep the ring's footprint predictable");

// The SPSC ring of access_records (ferry/base/record_ring.h): producer = the
// worker lcore that owns the proxy, consumer = the access-log writer thread.
class access_log_sink : public record_ring<access_record> {
public:
    // `capacity` is rounded up to a power of two (at least 2). `lcore` is the
    // EAL lcore id of the producer, for the writer's `lc=` field.
    access_log_sink(uint32_t capacity, unsigned lcore)
        : record_ring<access_record>(capacity), lcore_(lcore) {}
    [[nodiscard]] unsigned lcore() const noexcept { return lcore_; }

private:
    const unsigned lcore_;
};

}  // namespace ferry::proxy
