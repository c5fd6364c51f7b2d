// The HTTP/1.1 reverse proxy of one worker lcore.
//
// Read first: RFC 9112 (message syntax, §9 connection management, §9.3
// persistence, §9.3.2 pipelining), RFC 9110 §7.6 (message forwarding:
// hop-by-hop fields, Via), §9.2.2 (idempotent methods, which may be retried),
// §15.6.3 / §15.6.4 / §15.6.5 (502 / 503 / 504); lib/http/parser.h for the
// parser's strictness choices. Models: HAProxy's H1 mux (one buffer per
// connection, head parsed in place, bodies forwarded), nginx's upstream
// keepalive pool.
//
// Shape. One `worker_proxy` per worker lcore, polled by the reactor after the
// rx queues: it takes the events of every port's tcp_layer of its lcore and
// drives two kinds of endpoints:
//   client    a connection accepted on a listener port
//   upconn    a connection this lcore opened to an upstream server (local
//             pool: each lcore opens and keeps its own, so a client and its
//             upstream connection always live on the same lcore)
// Every endpoint has an input queue of received pieces (tcp_rx_piece: mbuf
// chain + range) it has not processed yet, and an output queue of chains the
// TCP send queue refused for now. A message head is copied into the
// endpoint's head buffer (max_header_bytes) and parsed there; bodies are
// never copied: their chains move from one connection's receive queue to the
// other's send queue (a message boundary inside a chain costs one
// rte_pktmbuf_clone). Backpressure: a direction stops reading its source
// while the destination's output queue is not empty; the source's receive
// window then closes and TCP slows the sender down.
//
// One request at a time per client connection: pipelined requests wait in
// the input queue (unread) until the response before them is complete, so
// responses go out in request order (RFC 9112 §9.3.2) without buffering
// responses. Upstream connections carry one request at a time too (no
// upstream pipelining) and return to the idle pool when the response ended
// cleanly with keep-alive.
//
// Errors become real responses while nothing of the response was sent yet:
// 400/413/414/431/501/505 for a rejected request (then close), 404 when no
// route matches, 502 when the upstream refused, reset or sent a bad response,
// 503 when every server of the upstream is down, 504 when it did not answer
// in time. After the first response byte went out, an upstream failure
// aborts the client connection (RST): a truncated response must not look
// complete. An idempotent request without body that fails on a REUSED
// keep-alive connection before any response byte (the origin closed it under
// us) is retried once on a fresh connection (retries in the config).
//
// Health: a server that fails (connect refused or timed out, reset, bad
// response, timeout) max_fails times in a row is marked down for
// fail_timeout_ms — process-wide, through one relaxed atomic per server, so
// every lcore skips it (passive). With health_check_path, lcore 0 sends a GET
// to every server each interval (active); a 2xx/3xx marks it up, anything
// else or no answer in time marks it down.
//
// Single-threaded: everything here runs on the owning lcore; the telemetry
// thread reads only the counters (relaxed atomics) and the health words.
#pragma once

#include <rte_mbuf.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ferry/base/counter.h"
#include "ferry/config/config.h"
#include "ferry/http/parser.h"
#include "ferry/net/tcp_layer.h"
#include "ferry/reactor/timer_wheel.h"

namespace ferry::proxy {

// Per-lcore proxy counters (telemetry /ferry/http).
#define FERRY_HTTP_COUNTERS(X)                                                                        \
    X(client_accepted,          "client connections accepted on a listener")                           \
    X(client_closed,            "client connections ended")                                            \
    X(client_refused_limit,     "client connections reset: the listener's max_connections was reached") \
    X(requests,                 "request heads received and accepted")                                 \
    X(requests_rejected,        "requests rejected as malformed or over a limit (by reason in /ferry/http)") \
    X(requests_retried,         "idempotent requests retried on a fresh upstream connection")          \
    X(responses_1xx,            "1xx responses forwarded")                                             \
    X(responses_2xx,            "2xx responses sent to clients")                                       \
    X(responses_3xx,            "3xx responses sent to clients")                                       \
    X(responses_4xx,            "4xx responses sent to clients (generated ones included)")             \
    X(responses_5xx,            "5xx responses sent to clients (generated ones included)")             \
    X(generated_404,            "404: no route and no default upstream")                               \
    X(generated_502,            "502: the upstream refused, reset, closed early or answered badly")    \
    X(generated_503,            "503: every server of the upstream is down")                           \
    X(generated_504,            "504: the upstream did not connect or answer in time")                 \
    X(upstream_connects,        "upstream connections opened")                                         \
    X(upstream_connect_failed,  "upstream connections refused, reset or timed out before connecting") \
    X(upstream_reused,          "requests sent on an idle keep-alive upstream connection")             \
    X(upstream_closed_idle,     "idle upstream connections closed (by the origin, or over max_idle)")  \
    X(upstream_bad_response,    "upstream responses rejected by the parser")                           \
    X(upstream_aborted,         "upstream connections aborted (client gone, error, timeout)")          \
    X(client_aborted,           "client connections reset mid-response (upstream failed after the head)") \
    X(client_gone,              "clients that closed or reset before their response was complete")     \
    X(timeouts_header,          "clients closed: request head not complete in client_header_timeout")  \
    X(timeouts_idle,            "keep-alive clients closed after client_idle_timeout")                 \
    X(timeouts_body,            "clients closed: request body stalled longer than client_body_timeout") \
    X(timeouts_upstream,        "upstream connect/response/read timeouts")                             \
    X(body_too_large,           "requests answered 413: body over max_body_bytes")                     \
    X(no_buffer,                "mbuf allocation failures while building heads (connection closed)")   \
    X(health_checks,            "active health checks sent")                                           \
    X(health_check_failed,      "active health checks that failed")                                    \
    X(drained,                  "connections closed by a graceful shutdown")

struct alignas(64) http_counters {
    FERRY_HTTP_COUNTERS(FERRY_COUNTER_MEMBER)
    // Rejected requests by parser reason (index: http::parse_error).
    ferry::counter rejected_by_reason[64];
};
#define FERRY_HTTP_FIELD(n, h) FERRY_COUNTER_FIELD(http_counters, n, h)
inline constexpr counter_field<http_counters> http_counter_fields[] = {
    FERRY_HTTP_COUNTERS(FERRY_HTTP_FIELD)};

// Per server and lcore (telemetry /ferry/upstreams sums the lcores).
struct alignas(64) server_counters {
    ferry::counter requests;     // requests sent to it
    ferry::counter failures;     // connect/response failures counted for health
    ferry::counter active;       // connections busy with a request (gauge: inc/dec)
    ferry::counter idle;         // idle keep-alive connections (gauge)
    ferry::counter connections;  // connections opened
    ferry::counter latency_ns;   // sum of request -> response head times
    ferry::counter responses;    // responses whose head arrived (latency samples)
};

// Process-wide state of one upstream server, shared by every lcore.
struct alignas(64) server_health {
    // 0 = up; else the time (ns, reactor clock) until which it counts as down.
    std::atomic<uint64_t> down_until{0};
    std::atomic<uint32_t> consecutive_fails{0};
    std::atomic<uint32_t> marked_down{0};  // times it went down (telemetry)
};

// What the proxy of one lcore needs of each port.
struct port_ref {
    net::tcp_layer *layer = nullptr;
    rte_mempool *pool = nullptr;
    uint32_t addr = 0, prefix_len = 0;  // ferry's address on the port
    bool has_gateway = false;
};

// Shared by every lcore's proxy: health words, one per server of every upstream.
struct shared_state {
    explicit shared_state(const config::ferry_config &cfg);
    // health[u][s] for upstream u, server s.
    std::vector<std::unique_ptr<server_health[]>> health;
    // Set by the app on SIGTERM/SIGINT: stop accepting, finish in-flight work.
    std::atomic<bool> draining{false};
};

class worker_proxy {
public:
    // Allocates every pool here (connections, head buffers), never later.
    // `lcore_index` 0 runs the active health checks. The ports' layers must
    // outlive the proxy; their events belong to the proxy alone.
    worker_proxy(const config::ferry_config &cfg, std::span<const port_ref> ports,
                 unsigned lcore_index, shared_state &shared, reactor::timer_wheel &timers,
                 uint64_t now);
    ~worker_proxy();
    worker_proxy(const worker_proxy &) = delete;
    worker_proxy &operator=(const worker_proxy &) = delete;

    // Opens the listeners on every port. Error text, or "" on success.
    [[nodiscard]] std::string listen();

    // Handles every event of every port's layer. Returns the work done.
    uint32_t poll(uint64_t now) noexcept;
    // True if a layer has events (the reactor's pre-sleep check).
    [[nodiscard]] bool pending() const noexcept;

    // Graceful shutdown: stops listening, closes idle clients and idle
    // upstream connections, lets in-flight requests finish (their clients
    // are closed after the response). Idempotent.
    void begin_drain(uint64_t now) noexcept;
    // Connections still open (client + upstream).
    [[nodiscard]] uint32_t open_connections() const noexcept { return nclients_ + nupconns_; }
    // Aborts everything still open (the drain timeout passed).
    void abort_all(uint64_t now) noexcept;

    [[nodiscard]] const http_counters &counters() const noexcept { return ctr_; }
    // server_counters of upstream u, server s.
    [[nodiscard]] const server_counters &server(size_t u, size_t s) const noexcept {
        return srv_ctr_[u][s];
    }

    struct client;
    struct upconn;

private:
    struct endpoint;
    struct upstream_state;

    // Events.
    void on_event(uint16_t port, const net::tcp_notice &n, uint64_t now) noexcept;
    void on_accept(uint16_t port, const net::tcp_notice &n, uint64_t now) noexcept;

    // Client side.
    void drive_client(client &c, uint64_t now) noexcept;
    bool client_head(client &c, uint64_t now) noexcept;
    void client_body(client &c, uint64_t now) noexcept;
    void reject(client &c, uint16_t status, uint64_t now) noexcept;
    void finish_response(client &c, upconn *u, bool upstream_reusable, uint64_t now) noexcept;
    void close_client(client &c, uint64_t now) noexcept;
    void abort_client(client &c, uint64_t now) noexcept;
    void free_client(client &c) noexcept;

    // Upstream side.
    upconn *acquire(client &c, int upstream, int server, uint64_t now, bool fresh_only) noexcept;
    void drive_upconn(upconn &u, uint64_t now) noexcept;
    bool upconn_head(upconn &u, uint64_t now) noexcept;
    void upconn_body(upconn &u, uint64_t now) noexcept;
    void upconn_failed(upconn &u, uint16_t status, bool count_health, uint64_t now) noexcept;
    void release_upconn(upconn &u, bool reusable, uint64_t now) noexcept;
    void close_upconn(upconn &u, bool abort, uint64_t now) noexcept;
    void free_upconn(upconn &u) noexcept;
    void health_result(int upstream, int server, bool ok, uint64_t now) noexcept;
    void run_health_checks(uint64_t now) noexcept;

    // Endpoint plumbing.
    uint32_t pull(endpoint &e, uint64_t now) noexcept;
    bool flush(endpoint &e, uint64_t now) noexcept;
    bool push(endpoint &e, rte_mbuf *chain, uint64_t now) noexcept;
    rte_mbuf *chain_of(const char *data, uint32_t len, uint16_t port) noexcept;
    void drop_input(endpoint &e) noexcept;
    uint16_t port_for(uint32_t addr) const noexcept;

    static void client_timer_cb(void *ctx) noexcept;
    static void upconn_timer_cb(void *ctx) noexcept;
    static void health_timer_cb(void *ctx) noexcept;

    const config::ferry_config &cfg_;
    std::vector<port_ref> ports_;
    unsigned lcore_index_;
    shared_state &shared_;
    reactor::timer_wheel &timers_;
    http::limits limits_;
    bool draining_ = false;

    http_counters ctr_;
    std::vector<std::unique_ptr<server_counters[]>> srv_ctr_;
    std::vector<std::unique_ptr<upstream_state>> ups_;

    // Pools: clients and upstream connections, with their head buffers.
    std::unique_ptr<client[]> clients_;
    std::unique_ptr<upconn[]> upconns_;
    std::unique_ptr<char[]> buffers_;
    std::unique_ptr<uint32_t[]> free_clients_, free_upconns_;
    uint32_t nfree_clients_ = 0, nfree_upconns_ = 0;
    uint32_t max_clients_ = 0, max_upconns_ = 0;
    uint32_t nclients_ = 0, nupconns_ = 0;
    std::vector<uint32_t> listener_active_;  // open clients per listener (this lcore)
    // Which object each TCP slot serves, per port: index | kind bit, or none.
    std::vector<std::unique_ptr<uint32_t[]>> slot_owner_;
    // Scratch for parsed header fields and for serializing heads.
    std::unique_ptr<http::header[]> fields_;
    std::unique_ptr<char[]> scratch_;
    uint32_t scratch_len_ = 0;
    reactor::timer health_timer_;
};

}  // namespace ferry::proxy
