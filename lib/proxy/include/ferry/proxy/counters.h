// The proxy's per-lcore counters, as telemetry reads them (/ferry/http,
// /ferry/upstreams, /metrics): one worker writes, the telemetry thread reads
// (relaxed atomics, ferry/base/counter.h). The worker itself: proxy.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>

#include "ferry/base/counter.h"

namespace ferry::proxy {

// Per-lcore proxy counters (telemetry /ferry/http).
#define FERRY_HTTP_COUNTERS(X)                                                                        \
    X(client_accepted,          "client connections accepted on a listener")                           \
    X(client_closed,            "client connections ended")                                            \
    X(clients_evicted,          "clients reset while waiting for a head: max_pending_heads reached")   \
    X(client_refused_limit,     "client connections reset: the listener's max_connections was reached") \
    X(requests,                 "request heads received and accepted")                                 \
    X(requests_rejected,        "requests rejected as malformed or over a limit (by reason in /ferry/http)") \
    X(requests_retried,         "requests replayed after their upstream connection failed (see docs)") \
    X(responses_1xx,            "1xx responses forwarded")                                             \
    X(responses_2xx,            "2xx responses sent to clients")                                       \
    X(responses_3xx,            "3xx responses sent to clients")                                       \
    X(responses_4xx,            "4xx responses sent to clients (generated ones included)")             \
    X(responses_5xx,            "5xx responses sent to clients (generated ones included)")             \
    X(generated_404,            "404: no route and no default upstream")                               \
    X(generated_502,            "502: the upstream refused, reset, closed early or answered badly")    \
    X(generated_503,            "503: every server down, or no upstream connection to be had")         \
    X(errors_kept_alive,        "generated 404/502/503/504 answers after which the client connection stayed open") \
    X(all_down_tried,           "requests sent to a server marked down: every server was (when_all_down = try)") \
    X(generated_504,            "504: the upstream did not connect or answer in time")                 \
    X(upstream_connects,        "upstream connections opened")                                         \
    X(upstream_connect_failed,  "upstream connections refused, reset or timed out before connecting") \
    X(upstream_no_connection,   "upstream connections that could not be opened here: no free connection slot or local port") \
    X(upstream_reused,          "requests sent on an idle keep-alive upstream connection")             \
    X(upstream_closed_idle,     "idle upstream connections closed (by the origin, or over max_idle)")  \
    X(upstream_bad_response,    "upstream responses rejected by the parser")                           \
    X(upstream_aborted,         "upstream connections ferry reset (client gone, error, timeout, out of step)") \
    X(upstream_closed,          "upstream connections ferry closed with a FIN (idle, origin said close, health check done)") \
    X(client_aborted,           "client connections ended mid-response (upstream failed after the head)") \
    X(client_cut_closed,        "... of them closed with a FIN: the response's framing shows the cut (else reset)") \
    X(client_gone,              "clients that closed or reset before their response was complete")     \
    X(timeouts_header,          "clients closed: request head not complete in client_header_timeout")  \
    X(timeouts_idle,            "keep-alive clients closed after client_idle_timeout")                 \
    X(timeouts_body,            "clients closed: request body stalled longer than client_body_timeout") \
    X(timeouts_upstream,        "upstream timeouts of every kind (the five below)")                    \
    X(timeouts_connect,         "upstream connections not established within connect_timeout_ms")     \
    X(timeouts_write,           "requests whose sending stalled longer than write_timeout_ms")         \
    X(timeouts_response,        "no response head within response_timeout_ms of the request's end")   \
    X(timeouts_read,            "response bodies stalled longer than read_timeout_ms")                 \
    X(timeouts_total,           "exchanges longer than total_timeout_ms")                              \
    X(timeouts_tunnel,          "tunnels closed after tunnel_idle_timeout_ms without a byte either way") \
    X(tunnels_opened,           "Upgrade requests answered 101: the connection pair became a byte tunnel") \
    X(tunnels_closed,           "tunnels ended (both sides closed, a reset, the idle timeout, a drain)") \
    X(tunnel_bytes_up,          "bytes carried through tunnels from clients to origins")               \
    X(tunnel_bytes_down,        "bytes carried through tunnels from origins to clients")               \
    X(upgrades_declined,        "Upgrade requests the origin answered without 101 (plain HTTP went on)") \
    X(upgrades_ignored,         "Upgrade fields not acted on: h2c, or an HTTP/1.0 request (plain HTTP)") \
    X(upgrades_refused,         "requests answered 501: CONNECT, or an Upgrade request with a body")   \
    X(body_too_large,           "requests answered 413: body over max_body_bytes")                     \
    X(no_buffer,                "mbuf allocation failures while building heads (connection closed)")   \
    X(head_buffers_exhausted,   "request heads answered 503: [http] client_head_buffers were all in use") \
    X(chunked_reframed,         "chunked bodies forwarded re-framed in ferry's canonical form")        \
    X(chunked_dechunked,        "chunked responses sent to an HTTP/1.0 client as plain bytes")         \
    X(trailers_dropped,         "trailer fields of chunked bodies not forwarded")                      \
    X(health_checks,            "active health checks sent")                                           \
    X(health_check_failed,      "active health checks that failed")                                    \
    X(drained,                  "connections closed by a graceful shutdown")                          \
    X(xcore_requests_out,       "requests handed to the lcore owning their shared upstream connection") \
    X(xcore_requests_in,        "requests received from another lcore for a shared connection owned here") \
    X(xcore_msgs_out,           "proxy messages handed to the cross-core outbox")                      \
    X(xcore_msgs_in,            "proxy messages received from other lcores")                           \
    X(xcore_stale,              "proxy messages for a request or client that is gone (mbufs freed)")   \
    X(xcore_lone_req_end,       "handed-over request bodies whose end went alone (after the last bytes)") \
    X(xcore_aborted,            "requests handed over here whose client went away (upstream side aborted)") \
    X(xcore_send_retry,         "proxy messages the outbox refused (lane full): kept and retried")    \
    X(xcore_backlog_full,       "proxy messages dropped: the lane and the peer's backlog were full (request failed)") \
    X(shared_queue_full,        "503: a shared connection's request FIFO (or the remote-request pool) was full") \
    X(shared_reconnects,        "shared upstream connections reopened after a close")          \
    X(shared_own_idle,          "requests given an idle shared connection of their own worker (shared_pick = own_idle_first)") \
    X(access_log_records,       "access-log records handed to the log writer (one per request)")   \
    X(access_log_dropped,       "access-log records dropped: the lcore's ring was full (writer behind)") \
    X(events_written,           "server down/up events handed to the event-log writer")                 \
    X(events_dropped,           "server down/up events dropped: the lcore's event ring was full (writer behind)") \
    X(drain_grace_accepted,     "connections accepted during drain_grace_ms after SIGTERM (readiness already 503)") \
    X(reconfigured,             "reloaded configurations this lcore took over (SIGHUP, /ferry/reload)") \
    X(shared_waiting_reload,    "shared-pool jobs held for a server a reload added that this lcore had not taken yet") \
    X(servers_removed,          "upstream servers a reload removed (this lcore's count of them)")       \
    X(upstream_retired,         "upstream connections closed with a FIN because a reload removed their server") \
    X(reload_listen,            "ports this lcore began or stopped listening on because a reload added, moved or removed a listener") \
    X(reload_listen_failed,     "a reloaded listener's port this lcore could not listen on (the port's listen table is full)")

struct alignas(64) http_counters {
    FERRY_HTTP_COUNTERS(FERRY_COUNTER_MEMBER)
    // Rejected requests by parser reason (index: http::parse_error).
    ferry::counter rejected_by_reason[64];
};
#define FERRY_HTTP_FIELD(n, h) FERRY_COUNTER_FIELD(http_counters, n, h)
inline constexpr counter_field<http_counters> http_counter_fields[] = {
    FERRY_HTTP_COUNTERS(FERRY_HTTP_FIELD)};

// A latency histogram of one lcore (single writer; telemetry sums the
// lcores): a count per bucket (not cumulative: the exporter adds them up) and
// the sum. The buckets' upper bounds, inclusive, as Prometheus's `le`:
// 0.5 ms to 10 s, and +Inf.
inline constexpr uint64_t latency_bucket_ns[] = {
    500'000,     1'000'000,     2'500'000,     5'000'000,     10'000'000,
    25'000'000,  50'000'000,    100'000'000,   250'000'000,   500'000'000,
    1'000'000'000, 2'500'000'000, 5'000'000'000, 10'000'000'000};
struct latency_histogram {
    static constexpr size_t buckets = std::size(latency_bucket_ns) + 1;  // the last: +Inf
    ferry::counter in_bucket[buckets];
    ferry::counter sum_ns;
    void observe(uint64_t ns) noexcept {
        size_t i = 0;
        while (i < std::size(latency_bucket_ns) && ns > latency_bucket_ns[i]) ++i;
        in_bucket[i].inc();
        sum_ns.inc(ns);
    }
};

// Per server and lcore (telemetry /ferry/upstreams sums the lcores).
struct alignas(64) server_counters {
    ferry::counter requests;     // requests sent to it
    ferry::counter failures;     // connect/response failures counted for health
    ferry::counter active;       // connections busy with a request (gauge: inc/dec)
    ferry::counter idle;         // idle keep-alive connections (gauge)
    ferry::counter connections;  // connections opened
    ferry::counter latency_ns;   // sum of request -> response head times
    ferry::counter responses;    // responses whose head arrived (latency samples)
    latency_histogram latency;   // request sent -> response head, the same samples
};

}  // namespace ferry::proxy
