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
//             upstream connection always live on the same lcore; shared
//             pool: see "Upstream pools" below, requests may cross lcores)
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
// else or no answer in time marks it down. Every change (down, up) is written
// to the event log (events.h) by the one lcore that made it. An answered
// check ends with a FIN, not a reset (upstream_closed, not upstream_aborted).
//
// Single-threaded: everything here runs on the owning lcore; the telemetry
// thread reads only the counters (relaxed atomics), the health words and the
// drain words of shared_state.
//
// ---------------------------------------------------------------------------
// Upstream pools: `local` and `shared` (DESIGN.md "Cross-core work").
//
// local   Each lcore opens, keeps (max_idle) and uses its own connections to
//         every server: a client and its upstream connection always live on
//         the same lcore, no cross-core work at all.
// shared  A fixed number N (shared_connections) of connections per server in
//         all, spread over the lcores (the Tempesta model): shared connection
//         k (0..N-1) of server s is OWNED by worker k % nworkers, which opens
//         it lazily, keeps it and reopens it after a close (counted as
//         shared_reconnects). A shared connection carries one request at a
//         time (no upstream pipelining) and has a FIFO of waiting requests
//         (`job`s: clients of its own lcore and requests handed over by other
//         lcores, in arrival order), bounded by shared_fifo_cap; a request
//         that finds it full, or no free remote-request slot, gets 503
//         (shared_queue_full). Idle shared connections have no idle timeout
//         (the origin may close them; the next job reopens). In
//         /ferry/upstreams they count as idle, or active while serving a job,
//         on their owner.
//
// The client's worker A picks the server (the upstream's balancing) and then k
// round robin over the server's N connections (a per-A counter), or, with
// shared_pick = own_idle_first, first an idle connection A owns itself
// (shared_own_idle; round robin when none is idle); the owner is
// B = k % nworkers. B == A: the request queues on A's own shared connection,
// no messages. B != A: the request is handed to B over lib/xcore and its
// response handed back, as 24-byte messages carrying mbuf chains (ownership
// moves with the message: no copy, no allocation). Opcodes (xop, 16..31, the
// app forwards every opcode >= 16 to on_message()):
//
//   A -> B  req_head   mbuf = the request head, already serialized on A (plus
//                      the body bytes that came with it), arg = the shared
//                      connection's id (shared_base[upstream] + s * N + k),
//                      flags = xf_end (the request is complete: no body, or
//                      all of it came with the head) | xf_keep_alive (the
//                      client stays open after this response: B serializes
//                      the response head) | xf_head (HEAD request) |
//                      xf_retry (idempotent, no body: B may retry it once on a
//                      fresh connection if a reused one fails before the head)
//           req_body   mbuf = request body bytes (zero-copy: the client's rx
//                      chains, trimmed; several pieces batched up to 32 KiB),
//                      flags = xf_end on the batch with the body's last bytes
//           req_end    the request body is complete (only when no batch could
//                      carry xf_end: the last one had left before the end was
//                      seen; counted in xcore_lone_req_end)
//           req_abort  the client is gone (or A gave up): B aborts the upstream
//                      connection if the request is on it (the response
//                      cannot be resynchronised), or drops it from the FIFO
//           credit     arg = n: n more resp_data may be sent
//   B -> A  resp_data  mbuf = response bytes: the head serialized on B (with
//                      the body bytes that came with it), or body chains
//                      (zero-copy, batched); flags xf_interim: a complete 1xx
//           resp_end   arg = 1 if the client may stay keep-alive
//           resp_error arg = status | timeout_kind << 16 | term_reason << 24
//                      (access_log.h; for A's record): A answers 502/503/504 if nothing of the
//                      response was sent to the client yet, else aborts (RST)
//           credit     arg = n: n more req_head/req_body may be sent
//
// Every message's handle is A's client conn_handle{lcore = A's worker index,
// generation = the client's request generation `xgen`, index = client slot}.
// xgen changes when a handed-over request starts and when it ends (or the
// client goes), so one handle names exactly one request of one client. B keys
// its remote request (`rreq`) by (A, client slot) and checks the generation;
// A checks its client's. A message for a request that ended or a client that
// is gone (freed, or reused by another connection) is stale: its mbuf chain
// is freed and it is counted (xcore_stale). Messages of one pair of workers
// travel one SPSC ring in order, so req_head < req_body... < req_end and
// resp_data... < resp_end/resp_error per request.
//
// Backpressure, both ways, credit based per request: the sender of data
// messages (req_head/req_body from A, resp_data from B) may have at most
// xcore_window of them outstanding; the receiver returns credit when a chain
// was accepted by the destination's TCP send queue (push() handed it over at
// once, or flush() drained it later from the endpoint's out queue: a bit per
// out-queue entry says which chains owe credit). Out of credit, B stops
// reading the upstream connection and A stops reading the client's body; the
// TCP receive windows then close. When the outbox refuses a message (its
// local queue to that peer is full) the message goes to a per-peer backlog,
// retried in order at the next poll (xcore_send_retry): nothing blocks. (Per
// peer rather than per endpoint: the order to a peer is kept, and a req_abort
// survives its client's slot being freed.) The backlog is a ring sized at
// start-up from the credits: at most xcore_window data messages, one credit
// entry (credits for one request coalesce), a terminal message and an abort
// per request, for every client slot / remote request, capped at 2^16
// entries per peer. A message that finds it full is dropped and counted
// (xcore_backlog_full), and its request, which now has a gap, is failed on
// this side at the next poll: A resets the client and sends req_abort, B
// aborts the upstream connection and sends resp_error.
//
// Failures: B's upstream failing (refused, reset, bad response, timeout)
// becomes resp_error; a client dying on A mid-request becomes req_abort; an
// early response (before the request body ended) ends both connections, as
// in local mode. Drain: a worker with shared pools stays in its drain loop
// (open_connections() > 0) while it has clients, connections, remote requests
// or backlog, while a peer still counts requests handed to it, and while a
// peer still has clients that could hand it one (shared_state::xrows).
//
// Counters of every hand-off: xcore_requests_out (A), xcore_requests_in (B),
// xcore_msgs_out / xcore_msgs_in, xcore_stale, xcore_aborted (B: req_abort
// for a live request), xcore_send_retry, shared_queue_full, shared_reconnects.
//
// Access log (access_log.h, docs/OPERATIONS.md "Access log"): with a sink
// (set_access_log), the client's lcore writes one access_record per request
// when it ends: in finish_response (the response is complete; for a
// handed-over request that is A's resp_end), in reject (a generated error
// response: 400..505, 408, and the 502/503/504 of a failed upstream), in
// abort_client (reset mid-response: flagged aborted), and when the client
// goes away first (free_client, 499) or the drain timeout aborts it (444). The
// B side of a hand-over logs nothing: the first resp_data of every response
// head carries arg = status | uct << 16 (the upstream connect time in ms,
// saturated at 0xfffe; 0xffff = unknown) for A's record; body resp_data carry
// arg = 0.
//
// Test knob: proxy_options::xcore_refuse_every = n makes every n-th outbox
// send count as refused (the backlog path); the app sets it from
// FERRY_XCORE_REFUSE_EVERY for the integration test.
// ---------------------------------------------------------------------------
#pragma once

#include <rte_mbuf.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <iterator>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ferry/base/slot_array.h"
#include "ferry/base/block_pool.h"
#include "ferry/base/counter.h"
#include "ferry/config/config.h"
#include "ferry/http/parser.h"
#include "ferry/http/serializer.h"
#include "ferry/net/tcp_layer.h"
#include "ferry/proxy/access_log.h"
#include "ferry/proxy/counters.h"
#include "ferry/proxy/events.h"
#include "ferry/proxy/shared_state.h"
#include "ferry/reactor/timer_wheel.h"
#include "ferry/xcore/message.h"

namespace ferry::proxy {

// Cross-core opcodes of the proxy (the app's are below 16; see the file
// comment for the protocol).
enum xop : uint16_t {
    op_first = 16,
    op_req_head = 16,
    op_req_body = 17,
    op_req_end = 18,
    op_req_abort = 19,
    op_resp_data = 20,
    op_resp_end = 21,
    op_resp_error = 22,
    op_credit = 23,
    op_last = 31,
};
// message::flags bits.
inline constexpr uint16_t xf_end = 1;         // req_head: the request is complete
inline constexpr uint16_t xf_keep_alive = 2;  // req_head: the client stays open
inline constexpr uint16_t xf_head = 4;        // req_head: a HEAD request
inline constexpr uint16_t xf_retry = 8;       // req_head: idempotent without body
inline constexpr uint16_t xf_http10 = 16;     // req_head: an HTTP/1.0 client (no chunked to it)
// req_head: bits 5..15 hold the request's route id + 2 (route_config::id,
// stable across reloads; route_none = -2 .. config::max_routes - 1), for the
// route's response header rules and timeouts on B.
inline constexpr unsigned xf_route_shift = 5;
[[nodiscard]] constexpr uint16_t xf_route(int route) noexcept {
    return static_cast<uint16_t>(static_cast<unsigned>(route + 2) << xf_route_shift);
}
[[nodiscard]] constexpr int route_of_flags(uint16_t flags) noexcept {
    return static_cast<int>(flags >> xf_route_shift) - 2;
}
static_assert(config::max_routes + 1 < (1u << (16 - xf_route_shift)));
inline constexpr uint16_t xf_interim = 1;     // resp_data: a complete 1xx response
inline constexpr uint16_t xf_framed = 2;      // resp_data: the final head; its body is framed
                                              //   (Content-Length or chunked toward the client)
// Data messages one request may have outstanding per direction.
inline constexpr uint32_t xcore_window = 16;
// Waiting requests per shared connection.
inline constexpr uint32_t shared_fifo_cap = 256;

// Sends one message to worker `peer` (the app: outbox::send). False when the
// outbox's lane is full: the message was not taken.
using xcore_send_fn = bool (*)(void *ctx, unsigned peer, const xcore::message &m) noexcept;

// What the proxy of one lcore needs of each port.
struct port_ref {
    net::tcp_layer *layer = nullptr;
    rte_mempool *pool = nullptr;
    uint32_t addr = 0, prefix_len = 0;  // ferry's address on the port
    bool has_gateway = false;
    std::optional<ipv6_bytes> addr6;  // its IPv6 address, if it has one
    uint8_t prefix6_len = 0;
    bool routed6 = false;  // a gateway6 or router discovery: off-prefix IPv6 goes out here
};

// Knobs that are not configuration: for tests (the app sets them from its
// environment; the library reads none).
struct proxy_options {
    // Every n-th cross-core send counts as refused by the outbox (0 = off).
    uint32_t xcore_refuse_every = 0;
    // The n-th mbuf allocation of the proxy (a chain built from bytes, or a
    // clone) fails as if the pool were dry (0 = off): the exhaustion tests
    // sweep n over every allocation of an exchange.
    uint32_t fail_alloc_at = 0;
    // Entries of each peer's cross-core backlog (0 = sized from the pools,
    // see the file comment; else rounded up to a power of two).
    uint32_t xcore_backlog_cap = 0;
};

class worker_proxy {
public:
    // Allocates every pool here (connections, head buffers), never later.
    // `lcore_index` 0 runs the active health checks. The ports' layers must
    // outlive the proxy; their events belong to the proxy alone.
    worker_proxy(const config::ferry_config &cfg, std::span<const port_ref> ports,
                 unsigned lcore_index, shared_state &shared, reactor::timer_wheel &timers,
                 uint64_t now, const proxy_options &opts = {});
    ~worker_proxy();
    worker_proxy(const worker_proxy &) = delete;
    worker_proxy &operator=(const worker_proxy &) = delete;

    // Cross-core hand-off for shared pools: `workers` workers (this one is
    // lcore_index), `send` delivers a message to a peer. Call before
    // listen(); without it (or with one worker) every shared connection is
    // owned here. Allocates the shared pools' tables.
    void set_xcore(unsigned workers, xcore_send_fn send, void *ctx);
    // The access log's ring of this lcore (null = no access log, the default).
    // Call before the worker polls; allocates a pending record per client
    // slot. The sink must outlive the proxy (its destructor may still log
    // requests that were open).
    void set_access_log(access_log_sink *sink);
    // The event log's ring of this lcore (null = none: events are not
    // written, the default). The sink must outlive the proxy (events.h).
    void set_event_log(event_sink *sink) noexcept { events_ = sink; }
    // A message another worker sent (opcode op_first..op_last); takes its mbuf.
    void on_message(unsigned from, xcore::message &m, uint64_t now) noexcept;

    // Opens each listener on its port, or on every port without a binding
    // (and, on lcore 0, arms the first active health checks). Error text, or
    // "" on success.
    [[nodiscard]] std::string listen(uint64_t now);
    // Whether listener `l` listens on port index `port` (its `on`/`address`).
    [[nodiscard]] static bool binds(const config::listener_config &l, size_t port) noexcept;

    // Handles every event of every port's layer. Returns the work done.
    uint32_t poll(uint64_t now) noexcept;
    // True while some request is out to an origin (or handed to another
    // worker) and its answer has not come back: the reactor's hint that more
    // work follows soon (reactor::poller::expecting, wakeup_mode adaptive).
    // O(1): a running count, kept where requests start and end.
    [[nodiscard]] bool exchanges_in_flight() const noexcept;
    // For tests: the running count of requests out from here (every server's
    // busy count, to an origin of this worker, and every peer's hand-offs)
    // and the same sum walked afresh; equal at all times.
    [[nodiscard]] uint32_t exchanges_count() const noexcept { return exchanges_; }
    [[nodiscard]] uint32_t exchanges_recount() const noexcept;
    // True if a layer has events (the reactor's pre-sleep check).
    [[nodiscard]] bool pending() const noexcept;

    // SIGTERM came, drain_grace_ms has begun: connections are still
    // accepted (and counted as drain_grace_accepted) until begin_drain().
    void begin_grace() noexcept { grace_ = true; }
    // A reloaded configuration (config/reload.h: the shape of the one in
    // force, reload_refusals() empty) takes over: every request that starts
    // from now on runs under it. Header rules and consistent-hash rings are
    // rebuilt, active health checks start or stop, listeners and servers
    // change. Requests in flight finish under the configuration they
    // started with (their route, its header rules and timeouts, the body
    // limits, the upstream's timeouts): the proxy keeps each configuration
    // and what it built from it until no request of it is left (a request
    // handed to another worker's shared connection runs under that
    // worker's). This one: `next` must outlive the proxy (tests); the app
    // passes ownership with the other. Allocates: control path, between two
    // polls.
    void reconfigure(const config::ferry_config &next, uint64_t now);
    void reconfigure(std::shared_ptr<const config::ferry_config> next, uint64_t now);
    // Configurations kept: the one in force and those requests in flight
    // started under. Any thread (telemetry).
    [[nodiscard]] uint32_t configurations_held() const noexcept {
        return held_.load(std::memory_order_relaxed);
    }
    [[nodiscard]] const config::ferry_config &configuration() const noexcept { return *cfg_; }
    // Graceful shutdown: stops listening, closes idle clients and idle
    // upstream connections, lets in-flight requests finish (their clients
    // are closed after the response). Idempotent.
    void begin_drain(uint64_t now) noexcept;
    // Connections still open (client + upstream); with shared pools also the
    // cross-core work that keeps this worker in its drain loop (file comment).
    [[nodiscard]] uint32_t open_connections() const noexcept;
    // Bytes this worker allocated or mapped up front (client and upstream
    // connection slots, the head buffers' address space, shared-pool state,
    // the access log's pending records): all it takes, whatever the load
    // (docs/OPERATIONS.md "Memory").
    [[nodiscard]] std::size_t reserved_bytes() const noexcept {
        return sizeof(*this) + reserved_base_ + reserved_shared_ + reserved_al_ +
               (kick_list_.capacity() + 2 * redrive_.capacity()) * sizeof(uint32_t);
    }
    // Aborts everything still open (the drain timeout passed).
    void abort_all(uint64_t now) noexcept;
    // The head buffers: one block (max_header_bytes for the bytes, then
    // max_headers fields) of address space per upstream connection slot and
    // per client head allowed at once ([http] client_head_buffers, one per
    // client slot by default), held by a client or upstream connection only
    // while a head is read or bytes wait in it, so an idle connection holds
    // none and only as many blocks as are in use at once ever become
    // resident. Clients hold at most client_head_buffers() of them, so a
    // response head always finds one.
    [[nodiscard]] const block_pool &head_buffers() const noexcept { return *heads_; }
    [[nodiscard]] uint32_t client_head_buffers() const noexcept { return client_head_cap_; }
    // Client and upstream connection slots ever used, so made and resident
    // (the most open at once). Any thread (telemetry).
    [[nodiscard]] uint32_t client_slots_made() const noexcept { return clients_.made(); }
    [[nodiscard]] uint32_t upconn_slots_made() const noexcept { return upconns_.made(); }
    [[nodiscard]] uint32_t client_head_buffers_in_use() const noexcept { return client_heads_; }

    [[nodiscard]] const http_counters &counters() const noexcept { return ctr_; }
    // Parsed requests, their head's first byte -> the end of the response
    // (or of the exchange, cut or refused).
    [[nodiscard]] const latency_histogram &request_latency() const noexcept { return req_hist_; }
    // Parsed requests' final statuses by listener slot (config.h
    // listener_config::slot), route and class (cls 1..5 for 1xx..5xx), this
    // lcore; `route` an index into the configuration's
    // routes, or balance.h's route_default (the listener's default_upstream)
    // or route_none (no route: 404, or refused before routing). Any thread.
    [[nodiscard]] uint64_t route_responses(size_t listener, int route, unsigned cls) const noexcept {
        return route_ctr_[route_index(listener, route, cls)].get();
    }
    // Per listener slot (config.h listener_config::slot), this lcore: client
    // connections open now, accepted, and reset because the listener's
    // max_connections was reached. Any thread.
    [[nodiscard]] uint64_t listener_active(size_t l) const noexcept {
        return listener_ctr(l, l_active).get();
    }
    [[nodiscard]] uint64_t listener_accepted(size_t l) const noexcept {
        return listener_ctr(l, l_accepted).get();
    }
    [[nodiscard]] uint64_t listener_refused(size_t l) const noexcept {
        return listener_ctr(l, l_refused).get();
    }
    // server_counters of upstream u, server slot s (config.h
    // server_config::slot; < slot_capacity()).
    [[nodiscard]] const server_counters &server(size_t u, size_t s) const noexcept {
        return srv_ctr_[u][s];
    }
    // The server slots per-server state is allocated for: the upstream's
    // slot_capacity (its servers at start-up plus the reload headroom).
    [[nodiscard]] static size_t slot_capacity(const config::upstream_config &uc) noexcept;
    // The listener slots per-listener state is allocated for.
    [[nodiscard]] static size_t listener_capacity(const config::ferry_config &cfg) noexcept;

    struct client;
    struct upconn;
    struct rreq;

private:
    struct endpoint;
    struct upstream_state;
    struct shared_slot;
    // Whether this worker's configuration has the address of sl's server
    // (a reload another worker took first may have added it).
    [[nodiscard]] bool slot_known(const shared_slot &sl) const noexcept;
    // After a reload: a removed server's idle shared connections close,
    // slots with jobs waiting are kicked, and requests handed over for a
    // shared upstream this worker had not taken yet go to their slots.
    void reconfigure_shared(uint64_t now) noexcept;
    // Before a reload is applied: the connections of shared upstreams it
    // added, laid out after the others in upstream-slot order (the same
    // numbering on every worker). Allocates: control path.
    void grow_shared(const config::ferry_config &next);
    uint32_t lay_out_shared(shared_slot *slots, uint32_t base, size_t ui,
                            const config::upstream_config &uc);
    // Requests handed over for a slot past nslots_ (a shared upstream the
    // sender's reload added and this worker's has not yet): rreq index and
    // allocation generation, submitted at reconfigure_shared().
    std::vector<std::pair<uint32_t, uint32_t>> pending_rreqs_;
    struct job {
        uint32_t idx = 0;  // client or rreq slot
        uint32_t gen = 0;  // its generation when queued
        bool remote = false;
    };

    // Events.
    void on_event(uint16_t port, const net::tcp_notice &n, uint64_t now) noexcept;
    void on_accept(uint16_t port, const net::tcp_notice &n, uint64_t now) noexcept;

    // Client side.
    // One turn of c's state machine, then its head buffer back if empty.
    void drive_client(client &c, uint64_t now) noexcept;
    void drive_client_turn(client &c, uint64_t now) noexcept;
    bool client_head(client &c, uint64_t now) noexcept;
    bool start_request(client &c, uint32_t consumed, uint64_t now) noexcept;
    bool dispatch(client &c, uint32_t consumed, int upstream, int server, uint64_t now) noexcept;
    rte_mbuf *forward_head(client &c, int upstream, int server, uint16_t port,
                           uint64_t now) noexcept;
    bool hand_over(client &c, rte_mbuf *head, uint32_t slot, unsigned owner, uint16_t flags,
                   uint16_t hport, int server, uint64_t now) noexcept;
    void client_body(client &c, uint64_t now) noexcept;  // the request body (pump_body)
    void reject(client &c, uint16_t status, uint64_t now) noexcept;
    // A generated answer (404, 502/503/504) that keeps the connection: when
    // the request is complete (no body, or its body all read) and nothing of
    // a response went out, as nginx and HAProxy do. answer_keeps says whether
    // it may; answer_and_go_on answers and makes c ready for its next request.
    bool send_answer(client &c, uint16_t status, bool keep, uint64_t now) noexcept;
    bool answer_keeps(const client &c) const noexcept;
    void answer_and_go_on(client &c, uint16_t status, uint64_t now) noexcept;
    // The response u forwards is delimited by Content-Length or chunked
    // toward its client (not by the close: an HTTP/1.0 client's de-chunked one).
    static bool framed_toward_client(const upconn &u) noexcept;
    void redrive_later(client &c) noexcept;
    void run_redrives(uint64_t now) noexcept;
    void finish_response(client &c, upconn *u, bool upstream_reusable, uint64_t now) noexcept;
    void close_client(client &c, uint64_t now) noexcept;
    void abort_client(client &c, uint64_t now) noexcept;
    void free_client(client &c, uint64_t now) noexcept;

    // Access log (file comment). al_begin: a request head was accepted;
    // al_unparsed: a record for a head that did not parse (raw request line);
    // al_head: a response head came from the upstream (local side);
    // al_end: the request ended, writes its record (status_if_none when no
    // final response head went out). All are no-ops without a sink.
    void al_begin(client &c, const http::request &req, uint64_t now) noexcept;
    void al_unparsed(client &c, uint64_t now) noexcept;
    void al_head(client &c, const upconn &u, uint64_t now) noexcept;
    void al_end(client &c, uint16_t status_if_none, bool aborted, uint64_t now) noexcept;
    access_record &al_rec(const client &c) noexcept;
    // The record's server: slot `server` of `upstream`, and its address.
    void al_server(const client &c, int upstream, int server) noexcept;
    // The record's termination reason, unless one was found before (the
    // first cause is the one logged); a no-op without an open record.
    void al_reason(client &c, term_reason r) noexcept;

    // Upstream side. A `server` here is a slot (config.h
    // server_config::slot), not a position in the configuration's list.
    // pick_server: the upstream's balancer over a snapshot of its servers'
    // health and load (balance.h), `key` the request's hash key
    // (consistent_hash only), never `exclude` (a retry's failed server); -1
    // if none is up.
    int pick_server(int upstream, uint64_t key, uint64_t now, int exclude = -1) noexcept;
    // The address of slot `server` (one a reload removed too).
    [[nodiscard]] config::server_endpoint endpoint_of(int upstream, int server) const noexcept {
        return cfg_->upstreams[upstream].slots[static_cast<size_t>(server)];
    }
    upconn *open_upconn(int upstream, int server, uint64_t now) noexcept;
    upconn *acquire(client &c, int upstream, int server, uint64_t now, bool fresh_only) noexcept;
    // One turn of u's state machine, then its head buffer back if empty.
    void drive_upconn(upconn &u, uint64_t now) noexcept;
    void drive_upconn_turn(upconn &u, uint64_t now) noexcept;
    bool upconn_head(upconn &u, uint64_t now) noexcept;
    enum class head_next : uint8_t { stop, body, again, tunnel };
    head_next response_head(upconn &u, client *cp, rreq *rp, uint32_t consumed,
                            uint64_t now) noexcept;
    bool head_body(upconn &u, client *cp, rreq *rp, rte_mbuf *rhead, uint32_t head_arg,
                   uint64_t now) noexcept;
    void count_response(uint16_t status) noexcept;
    void upconn_body(upconn &u, uint64_t now) noexcept;  // the response body (pump_body)
    // u failed: `status` for the client if nothing of the response went
    // out, `why` for its access-log record (and, counted for health, for the
    // server's down line), `tk` the timeout that failed it.
    void upconn_failed(upconn &u, uint16_t status, term_reason why, bool count_health,
                       uint64_t now, timeout_kind tk = timeout_kind::none) noexcept;
    // Upstream timers (upstream.cpp): arm_upconn arms u's timer for kind k
    // (connect, write, response, read), never past u.total_at; arm_sending
    // arms write or response, by whether the request is all sent (only in
    // state head, not for health checks); begin_total starts the total bound
    // of a request given to u.
    void arm_upconn(upconn &u, timeout_kind k, uint64_t now) noexcept;
    // The timeout of kind k (connect, write, response, read, total) for the
    // request u serves now: its route's own if it set one, else the
    // upstream's (a health check, or a shared connection between requests:
    // the upstream's).
    [[nodiscard]] uint32_t timeout_ms(upconn &u, timeout_kind k) noexcept;
    void count_timeout(timeout_kind k) noexcept;
    [[nodiscard]] static bool replayable(timeout_kind tk) noexcept;
    void reject_timeout(client &c, timeout_kind k, uint64_t now) noexcept;
    // Clients waiting for a complete request head, oldest first (slowloris):
    // pending_head_begin at accept and when a keep-alive request begins
    // (past max_pending_heads the oldest is reset), pending_head_end when the
    // head is complete or the client ends.
    void pending_head_begin(client &c, uint64_t now) noexcept;
    // When a head begun now must be complete: client_header_timeout_ms, less
    // up to a quarter of it at random, so that connections that arrived
    // together (a slowloris burst) are not cut, and do not reconnect,
    // together.
    [[nodiscard]] uint64_t header_deadline(uint64_t now) noexcept;
    void pending_head_end(client &c) noexcept;  // timeouts_<kind> and timeouts_upstream
    void arm_sending(upconn &u, uint64_t now) noexcept;
    void begin_total(upconn &u, uint64_t now) noexcept;
    [[nodiscard]] bool request_sent(upconn &u) noexcept;
    void release_upconn(upconn &u, bool reusable, uint64_t now) noexcept;
    // Whether a connection not reused after a complete response is reset
    // (out of step with its origin) rather than closed with a FIN.
    static bool must_abort(const upconn &u, bool reusable) noexcept;
    void unaccount(upconn &u) noexcept;
    // A request starts or ends on `server` of `upstream` (its busy count:
    // the balancers' load) or handed to worker `peer` (inflight_to_,
    // published for the peer's drain); each keeps exchanges_ their sum. An
    // end never takes a count below 0.
    void busy_begin(int upstream, int server) noexcept;
    void busy_end(int upstream, int server) noexcept;
    void handoff_begin(unsigned peer) noexcept;
    void handoff_end(unsigned peer) noexcept;
    void detach_upconn(upconn &u) noexcept;
    void close_upconn(upconn &u, bool abort, uint64_t now) noexcept;
    void free_upconn(upconn &u, uint64_t now) noexcept;
    // Health (health.cpp). health_ok: the server answered (a response head,
    // or a passing check): up again if it was down. health_failed: a failure
    // counted for health (`ev` says its cause); max_fails of them in a row
    // mark it down. Each change is made by one exchange on the shared health
    // word, so exactly one lcore sees it and writes its event (emit_event).
    void health_ok(int upstream, int server, uint64_t now) noexcept;
    void health_failed(int upstream, int server, uint64_t now, const server_event &ev) noexcept;
    // Writes `ev` (its cause, for a down) stamped with the server (slot and
    // address), the change and the time.
    void emit_event(server_event ev, int upstream, int server, server_event::kind what,
                    uint64_t now) noexcept;
    void run_health_checks(uint64_t now) noexcept;

    // Shared pools.
    void init_shared();
    // make_unique<T[]>(n), its bytes added to `to` (reserved_bytes()).
    template <class T>
    static std::unique_ptr<T[]> reserve(std::size_t &to, std::size_t n) {
        to += n * sizeof(T);
        return std::make_unique<T[]>(n);
    }
    std::size_t reserved_base_ = 0, reserved_shared_ = 0, reserved_al_ = 0;
    bool begin_body(client &c, upconn &u, uint64_t now) noexcept;
    // Tunnels (tunnel.cpp): after a 101 to an Upgrade request, c and u carry
    // bytes both ways until both sides closed, one reset, or neither sent a
    // byte for tunnel_idle_timeout_ms. begin_tunnel: false when it could not
    // start (both ended). tunnel_turn: moves what both sides have (false:
    // the tunnel ended). tunnel_end: ends it once (access log, counters),
    // closing both with a FIN (clean) or a reset, and frees c if its
    // connection is gone; u may be null. tunnel_close: the same for u and
    // the accounting, leaving c to the caller (free_client).
    bool begin_tunnel(client &c, upconn &u, uint64_t now) noexcept;
    bool tunnel_turn(client &c, upconn &u, uint64_t now) noexcept;
    void tunnel_end(client &c, upconn *u, bool clean, uint64_t now) noexcept;
    void tunnel_close(client &c, upconn *u, bool clean, uint64_t now) noexcept;
    void tunnel_timer(client &c, uint64_t now) noexcept;
    enum class tunnel_dir_end : uint8_t { going, closed, failed };
    tunnel_dir_end tunnel_dir(endpoint &src, endpoint &dst, client &c, bool up,
                              uint64_t now) noexcept;
    [[nodiscard]] upconn *tunnel_peer(client &c) noexcept;
    [[nodiscard]] client *tunnel_peer(upconn &u) noexcept;
    bool shared_submit(uint32_t slot, job j, bool front) noexcept;
    void kick(uint32_t slot) noexcept;
    void run_kicks(uint64_t now) noexcept;
    bool job_valid(const job &j) const noexcept;
    void fail_job(const job &j, uint16_t status, uint64_t now) noexcept;
    void attach(uint32_t slot, upconn &u, const job &j, uint64_t now) noexcept;
    upconn *open_shared(uint32_t slot, uint64_t now) noexcept;
    // shared_pick = own_idle_first: the first of the n slots from `base` that
    // this worker owns whose connection is open, idle and has no job waiting;
    // none if there is none.
    [[nodiscard]] uint32_t own_idle_slot(uint32_t base, uint32_t n) const noexcept;
    void shared_release(upconn &u, bool reusable, uint64_t now) noexcept;
    rreq *rreq_of(upconn &u) noexcept;
    void pump_req(rreq &r, upconn &u, uint64_t now) noexcept;
    void finish_rreq(upconn &u, rreq &r, bool reusable, uint64_t now) noexcept;
    void free_rreq(rreq &r) noexcept;

    // Cross-core plumbing. xhandle: the handle of c's handed-over request.
    uint64_t xhandle(const client &c) const noexcept;
    void xsend(unsigned peer, uint16_t op, uint64_t handle, uint16_t flags, uint32_t arg,
               rte_mbuf *m) noexcept;
    bool retry_backlog() noexcept;
    void mark_broken(unsigned peer, uint64_t handle) noexcept;
    void fail_broken(uint64_t now) noexcept;
    void credit_back(endpoint &e, uint32_t n) noexcept;
    int push_credited(endpoint &e, rte_mbuf *chain, uint64_t now) noexcept;
    void abort_remote(client &c) noexcept;
    void end_remote(client &c) noexcept;
    void on_client_message(unsigned from, xcore::message &m, uint64_t now) noexcept;
    void on_owner_message(unsigned from, xcore::message &m, uint64_t now) noexcept;

    // Bodies: one pump from a source endpoint to a sink, a local endpoint
    // or a remote worker (body.cpp).
    struct body_sink {
        endpoint *dst = nullptr;  // local; else remote:
        unsigned peer = 0;
        uint16_t op = 0;
        uint64_t handle = 0;
        uint32_t *credit = nullptr;  // data messages the peer still takes
        bool *sent = nullptr;        // set once a message went out
        rte_mbuf *acc = nullptr;     // the batch being built (its credit taken)
        uint32_t acc_len = 0;
        bool framing = true;  // send the framer's canonical framing (false: dechunk)
        // Remote: the flag the batch with the body's last bytes carries (a
        // request's xf_end), so that the end cannot trail its bytes in a
        // message of its own; end_sent: it went (else the caller sends the
        // end alone: the last batch had left before the body was seen to end).
        uint16_t end_flag = 0;
        bool end_sent = false;
    };
    // Body bytes that came with a head, in a head buffer: their payload and
    // canonical framing as one copied chain (m: nullptr when there is none).
    struct buf_body {
        http::body_framer::feed_result fr;  // consumed: bytes of buf the body took
        rte_mbuf *m = nullptr;
        bool no_buffer = false;  // the copy failed (m is nullptr)
    };
    [[nodiscard]] buf_body body_from_buf(endpoint &src, uint16_t port, bool framing) noexcept;
    void note_body_end(const http::body_framer &f, bool framing) noexcept;
    enum class pump_end : uint8_t { blocked, done, eof, bad_framing, too_large, no_buffer };
    struct pump_result {
        pump_end end = pump_end::blocked;
        http::parse_error err = http::parse_error::none;  // bad_framing
    };
    // Moves body bytes from src until the body ends (done), the sink or the
    // source has nothing more for now (blocked), the source ended (eof), the
    // framing is bad, the payload passed body_limit (0 = none) or an mbuf
    // could not be had (no_buffer, counted). Every chain taken re-arms
    // src.timer to now + rearm_ns, but never past not_after (0 = no bound).
    // The sink's batch is sent before it returns.
    pump_result pump_body(endpoint &src, body_sink &sink, uint64_t body_limit, uint64_t rearm_ns,
                          uint64_t not_after, uint64_t now) noexcept;
    bool sink_ready(body_sink &s, uint64_t now) noexcept;
    bool sink_put(body_sink &s, rte_mbuf *m, uint32_t len, uint64_t now) noexcept;
    // at_end: the batch holds the body's last bytes (it carries s.end_flag).
    void sink_flush(body_sink &s, bool at_end = false) noexcept;

    // Endpoint plumbing.
    uint32_t pull(endpoint &e, uint64_t now) noexcept;
    // e's peer is mid-message and all it sent is read: the ACK it may wait
    // for goes now (tcp_conn::quick_ack), not at the delayed-ACK timeout.
    void want_more(endpoint &e, uint64_t now) noexcept;
    bool flush(endpoint &e, uint64_t now) noexcept;
    bool push(endpoint &e, rte_mbuf *chain, uint64_t now) noexcept;
    // mbufs: every allocation passes gate() (proxy_options::fail_alloc_at).
    // chain_of / clone_of count no_buffer when they fail; take_front: the
    // first n bytes of a piece as their own chain (net::piece_take_front).
    bool gate() noexcept;
    rte_mbuf *chain_of(const char *data, uint32_t len, uint16_t port) noexcept;
    rte_mbuf *clone_of(rte_mbuf *m, uint16_t port) noexcept;
    rte_mbuf *take_front(net::tcp_rx_piece &p, uint32_t n, uint16_t port, bool &whole) noexcept;
    // A rejected request, by parser reason; a generated 502/503/504, counted
    // by its status, then answer_and_go_on() or reject().
    void note_rejected(http::parse_error e) noexcept;
    void reject_generated(client &c, uint16_t status, uint64_t now) noexcept;
    void drop_input(endpoint &e) noexcept;
    // Head buffers (head_buffers()): attach_head gives e a block if it has
    // none (false: the pool is empty or e is a client and clients hold
    // client_head_buffers() already; counted); settle_head gives e's block
    // back when nothing is in it (no bytes, no head begun); drop_head
    // discards e's buffered bytes and parse state and gives the block back.
    [[nodiscard]] bool attach_head(endpoint &e) noexcept;
    void settle_head(endpoint &e) noexcept;
    void drop_head(endpoint &e) noexcept;
    uint16_t port_for(const ip_address &addr) const noexcept;

    static void client_timer_cb(void *ctx, uint64_t now) noexcept;
    static void upconn_timer_cb(void *ctx, uint64_t now) noexcept;
    static void health_timer_cb(void *ctx, uint64_t now) noexcept;

    // The configuration in force: the one the proxy was made with, then
    // the last one reconfigure() swapped in (held by the caller).
    const config::ferry_config *cfg_;
    std::vector<port_ref> ports_;
    unsigned lcore_index_;
    shared_state &shared_;
    reactor::timer_wheel &timers_;
    http::limits limits_;
    bool draining_ = false;
    bool grace_ = false;  // begin_grace() was called
    // The time of the latest call in (poll, message, timer): for the
    // destructor, which gets none.
    uint64_t last_now_ = 0;
    uint64_t spread_state_ = 0x9e3779b97f4a7c15ULL;  // header_deadline's generator
    // poll()'s batch of TCP events: a member, because a local array of
    // tcp_notice (default member initialisers) was zeroed on every loop
    // iteration, 5% of a polling core's time.
    std::array<net::tcp_notice, 32> notes_{};

    http_counters ctr_;
    latency_histogram req_hist_;
    // Each route's header rules as the serializer takes them (views into *cfg_),
    // made at start-up; routes without rules have empty edits.
    struct edit_storage {
        std::vector<std::string_view> remove;
        std::vector<http::header> set, add;
        http::header_edit edit;  // spans into the vectors above
        bool any = false;        // the route has rules in this direction
    };
    struct route_edits {
        edit_storage req, resp;
    };
    // A configuration and what the proxy built from it, kept while requests
    // that started under it are in flight (`pins`: clients whose current
    // request did), so that they finish under it (reconfigure()).
    struct config_gen {
        std::shared_ptr<const config::ferry_config> hold;  // null: the caller keeps it
        const config::ferry_config *cfg = nullptr;
        std::vector<route_edits> edits;  // per route of *cfg
        std::vector<int16_t> route_of_id;  // route_config::id -> position (route_none: gone)
        uint32_t pins = 0;
    };
    // The position in g's routes of the route with id `id` (a hand-over's
    // route, xf_route); route_default and route_none stay as they are.
    [[nodiscard]] static int route_of_id(const config_gen &g, int id) noexcept;
    // The id of route `route` (a position in the configuration in force).
    [[nodiscard]] int route_id(int route) const noexcept;
    std::vector<std::unique_ptr<config_gen>> gens_;  // back(): the one in force
    config_gen *cur_ = nullptr;
    std::atomic<uint32_t> held_{1};  // gens_.size(), for other threads
    void retire(config_gen *g) noexcept;  // drops g (not cur_) from gens_
    void adopt(const config::ferry_config &next, std::shared_ptr<const config::ferry_config> hold,
               uint64_t now);
    void build_edits(config_gen &g);  // g.edits from g.cfg's routes
    // c's request runs under the configuration in force; unpin() lets go
    // (and frees a replaced configuration its last request leaves).
    void pin(client &c) noexcept;
    void unpin(client &c) noexcept;
    // The configuration c's current request runs under, and its rules.
    [[nodiscard]] const config::ferry_config &cfg_of(const client &c) const noexcept;
    [[nodiscard]] const config_gen &gen_of(const client &c) const noexcept;
    // listener_by_slot_ and listener_pos_ from cfg_'s listeners.
    void set_listeners();
    // Listens on the (port, TCP port) pairs `next`'s listeners need and
    // `prev`'s did not, and stops on those no longer needed.
    void relisten(const config::ferry_config &prev, const config::ferry_config &next) noexcept;
    // st's per-position part and `present` from uc's servers.
    static void set_servers(upstream_state &st, const config::upstream_config &uc);
    // The rules of `route` (an index into g's routes, or route_default /
    // route_none) toward the origin or the client; nullptr when it has none.
    [[nodiscard]] static const http::header_edit *request_edit(const config_gen &g,
                                                               int route) noexcept {
        return edit_of(g, route, &route_edits::req);
    }
    [[nodiscard]] static const http::header_edit *response_edit(const config_gen &g,
                                                                int route) noexcept {
        return edit_of(g, route, &route_edits::resp);
    }
    [[nodiscard]] static const http::header_edit *edit_of(const config_gen &g, int route,
                                                          edit_storage route_edits::*dir) noexcept {
        if (route < 0 || static_cast<size_t>(route) >= g.edits.size()) return nullptr;
        const edit_storage &s = g.edits[route].*dir;
        return s.any ? &s.edit : nullptr;
    }
    // route_responses(): (listeners x (routes + 2)) x 5 classes, allocated once.
    std::unique_ptr<counter[]> route_ctr_;
    size_t route_stride_ = 2;  // routes + 2
    // cls 1..5: 1xx..5xx.
    [[nodiscard]] size_t route_index(size_t listener, int route, unsigned cls) const noexcept {
        return (listener * route_stride_ + static_cast<size_t>(route + 2)) * 5 + (cls - 1);
    }
    std::vector<std::unique_ptr<server_counters[]>> srv_ctr_;
    std::vector<std::unique_ptr<upstream_state>> ups_;

    // Pools: clients and upstream connections (made on first use: only as
    // many as were ever open at once are resident), with their head buffers.
    slot_array<client> clients_;
    slot_array<upconn> upconns_;
    std::unique_ptr<block_pool> heads_;
    std::size_t head_fields_off_ = 0;  // where a head block's fields begin
    uint32_t client_head_cap_ = 0;     // [http] client_head_buffers, resolved
    uint32_t client_heads_ = 0;        // head blocks clients hold
    uint32_t max_clients_ = 0, max_upconns_ = 0;
    // The pending-head list (pending_head_begin): head, tail, length, cap.
    uint32_t ph_head_ = UINT32_MAX, ph_tail_ = UINT32_MAX, ph_n_ = 0, ph_cap_ = 0;
    // Per listener, this lcore, three each: open clients, clients accepted,
    // connections reset at its max_connections (listener_*() read them).
    enum : size_t { l_active, l_accepted, l_refused, l_n };
    // Per listener slot: its configuration (the last one it had, for the
    // requests of its connections after a reload removed it) and its position
    // in cfg_'s listeners (-1: removed).
    std::vector<config::listener_config> listener_by_slot_;
    std::vector<int> listener_pos_;
    std::unique_ptr<counter[]> listener_ctr_;
    [[nodiscard]] counter &listener_ctr(size_t l, size_t k) noexcept { return listener_ctr_[l * l_n + k]; }
    [[nodiscard]] const counter &listener_ctr(size_t l, size_t k) const noexcept {
        return listener_ctr_[l * l_n + k];
    }
    // Which object each TCP slot serves, per port: index | kind bit, or none.
    std::vector<std::unique_ptr<uint32_t[]>> slot_owner_;
    // Scratch for serializing heads.
    std::unique_ptr<char[]> scratch_;
    uint32_t scratch_len_ = 0;
    reactor::timer health_timer_;

    // Shared pools (see the file comment).
    unsigned nworkers_ = 1;
    xcore_send_fn send_fn_ = nullptr;
    void *send_ctx_ = nullptr;
    bool has_shared_ = false;
    std::vector<uint32_t> shared_base_;                // per upstream: id of its (0, 0)
    std::vector<std::vector<uint32_t>> shared_rr_;     // per upstream, server: next k
    std::unique_ptr<shared_slot[]> slots_;             // per shared connection id
    uint32_t nslots_ = 0;
    std::vector<uint32_t> kick_list_;                  // slots to look at (each once)
    // Clients with requests already read to go on with at the next poll
    // (after a generated answer, or drive_client's guard): index, gen.
    std::vector<std::pair<uint32_t, uint32_t>> redrive_;
    std::unique_ptr<rreq[]> rreqs_;                    // requests from other workers
    std::unique_ptr<uint32_t[]> free_rreqs_;
    uint32_t max_rreqs_ = 0, nfree_rreqs_ = 0, nrreqs_ = 0;
    std::unique_ptr<uint32_t[]> rreq_of_;              // [from * max_clients_ + client] -> rreq
    // Per peer: messages the outbox refused, oldest first, in a ring sized in
    // init_shared() (at most backlog_max entries; see the file comment).
    static constexpr uint64_t backlog_max = 1u << 16;
    struct backlog {
        std::unique_ptr<xcore::message[]> q;
        uint32_t mask = 0;  // capacity - 1 (a power of two)
        uint32_t head = 0, n = 0;
    };
    std::vector<backlog> backlog_;
    // Requests whose message was dropped (backlog full), failed at the next
    // poll: a client slot or a remote request, with its generation then.
    struct xfail_entry {
        uint32_t idx = 0, gen = 0;
        bool rreq = false;
    };
    std::unique_ptr<xfail_entry[]> xfail_;
    uint32_t nxfail_ = 0;
    uint32_t backlog_total_ = 0;
    uint32_t refuse_every_ = 0, refuse_n_ = 0;  // test knob (file comment)
    uint32_t fail_alloc_at_ = 0, nalloc_ = 0;   // test knob (proxy_options)
    uint32_t backlog_cap_ = 0;                  // test knob (proxy_options)
    std::vector<uint32_t> inflight_to_;                // requests handed to each peer, open
    // The sum of every upstream_state::busy and of inflight_to_, kept by
    // busy_begin/_end and handoff_begin/_end (exchanges_in_flight()).
    uint32_t exchanges_ = 0;
    // Open tunnels: counted in exchanges_ (their servers are busy), but no
    // answer is coming (exchanges_in_flight() leaves them out).
    uint32_t tunnels_ = 0;

    // Access log: the sink, and a record in the making per client slot.
    access_log_sink *alog_ = nullptr;
    event_sink *events_ = nullptr;  // the event log (events.h), or none
    side_array<access_record> al_pending_;  // per client slot, made with it
};

}  // namespace ferry::proxy
