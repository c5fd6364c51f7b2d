// [tcp_test] services for tests and benchmarks, one instance per (lcore, port):
// echo (RFC 862), discard (RFC 863) and a chargen-like source (RFC 864 in
// spirit: byte k of the stream is k mod 251, so a client can check it).
//
// The relay (relay_port -> relay_to) is a plain TCP proxy: each accepted
// connection gets an active open to the target on the same lcore, and bytes
// flow both ways zero-copy (received chains are sent on as they are), with
// half-close carried over (a FIN is passed on once everything before it
// was), and an abnormal end of one side (reset, timeout, refused) aborting
// the other. It exercises connect(), flow ownership of active opens and
// both directions of streaming before HTTP exists.
//
// Driven by tcp_layer::poll_events() after every rx burst and timer run.
// Echo is zero-copy: the received chain is trimmed to the piece and handed
// to send() as is. Backpressure: what send() refuses stays queued here (at
// most max_pending chains per connection) and the connection is not read
// again until the queue drains on a `writable` event, so the receive window
// closes and the peer slows down.
#pragma once

#include <rte_mbuf.h>

#include <array>
#include <cstdint>
#include <memory>

#include "ferry/config/config.h"
#include "ferry/net/tcp_layer.h"

namespace ferry::app {

class tcp_test_app {
public:
    static constexpr uint32_t max_pending = 32;

    // Opens the configured listeners on `layer`.
    tcp_test_app(const config::tcp_test_config &cfg, net::tcp_layer &layer, rte_mempool *pool);
    ~tcp_test_app();  // frees what is still pending
    tcp_test_app(const tcp_test_app &) = delete;
    tcp_test_app &operator=(const tcp_test_app &) = delete;

    // Handles every connection with news. Returns the number handled.
    uint32_t run(uint64_t now) noexcept;

private:
    enum class kind : uint8_t { none, echo, discard, source, relay_in, relay_out };
    struct conn_state {
        uint32_t gen = 0;
        kind k = kind::none;
        bool fin_seen = false;
        bool closing = false;
        uint16_t npend = 0;
        uint64_t generated = 0;  // source: bytes handed to send()
        net::tcp_handle peer;    // relay: the other side (pend holds chains for it)
        // relay: chains owed to THIS connection by a peer that already
        // closed in order; a FIN follows them (close_after_owed).
        uint16_t nowed = 0;
        bool close_after_owed = false;
        rte_mbuf *owed[max_pending] = {};
        rte_mbuf *pend[max_pending] = {};
    };

    void handle(const net::tcp_notice &n, uint64_t now) noexcept;
    void pump_echo(net::tcp_handle h, conn_state &s, uint64_t now) noexcept;
    void pump_source(net::tcp_handle h, conn_state &s, uint64_t now) noexcept;
    void drain_discard(net::tcp_handle h, uint64_t now) noexcept;
    bool flush_pending(net::tcp_handle h, conn_state &s, uint64_t now) noexcept;
    void start_relay(const net::tcp_notice &n, conn_state &s, uint64_t now) noexcept;
    void pump_relay(net::tcp_handle src, conn_state &s, uint64_t now) noexcept;
    void relay_closed(const net::tcp_notice &n, conn_state &s, uint64_t now) noexcept;
    static void reset(conn_state &s) noexcept;

    config::tcp_test_config cfg_;
    net::tcp_layer &layer_;
    rte_mempool *pool_;
    std::unique_ptr<conn_state[]> states_;  // by handle index
    std::array<net::tcp_notice, 32> notes_{};  // run()'s batch

public:
    // Relay counters (this (lcore, port)); read by telemetry.
    uint64_t relay_accepted = 0, relay_connect_failed = 0, relay_aborted = 0;
};

}  // namespace ferry::app
