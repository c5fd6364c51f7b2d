// lib/proxy's private part: the objects worker_proxy's files share (the
// endpoint, client, upstream connection, remote request, shared slot and
// per-upstream state) and a few constants. Not installed, not for users of the
// library: see proxy.h for the interface and README.md for how a request
// flows through the files.
#pragma once

#include <rte_mbuf.h>

#include <cstdint>
#include <vector>

#include "ferry/http/parser.h"
#include "ferry/net/mbuf_chain.h"
#include "ferry/net/tcp_layer.h"
#include "ferry/proxy/access_log.h"
#include "ferry/proxy/balance.h"
#include "ferry/proxy/proxy.h"
#include "ferry/reactor/timer_wheel.h"

namespace ferry::proxy {

inline constexpr uint32_t none = UINT32_MAX;
inline constexpr uint32_t kind_up = 0x80000000u;
inline constexpr uint64_t ms = 1'000'000;
// Head buffers hold a head of up to max_header_bytes plus what arrived with it.
inline constexpr uint32_t scratch_size = 96 * 1024;
// Body pieces batched into one cross-core data message, up to this many bytes.
inline constexpr uint32_t xcore_batch = 32 * 1024;

// A timer deadline `at`, but never past `cap` (0 = no cap): the inactivity
// timers under total_timeout_ms.
inline constexpr uint64_t capped(uint64_t at, uint64_t cap) noexcept {
    return cap != 0 && cap < at ? cap : at;
}

struct worker_proxy::endpoint {
    static constexpr uint32_t in_cap = 32;
    static constexpr uint32_t out_cap = 32;
    worker_proxy *px = nullptr;
    uint16_t port = 0;
    net::tcp_handle h;
    net::tcp_rx_piece in[in_cap];  // ring of received, unprocessed pieces
    uint32_t in_head = 0, in_n = 0;
    rte_mbuf *out[out_cap] = {};  // chains send() refused so far, in order
    uint32_t out_n = 0;
    // Bit i: out[i] came in a cross-core data message and owes its sender a
    // credit when the TCP send queue takes it (shared pools).
    uint32_t cred_mask = 0;
    bool is_up = false;     // an upconn (else a client)
    bool eof = false;       // the peer's FIN arrived (no data after `in`)
    bool closing = false;   // close once `out` is empty
    bool fin_sent = false;  // close() called
    // Head buffer (cap bytes) and fields: a block of worker_proxy's head
    // buffers, held only while a head is read or bytes wait in it (null then).
    char *buf = nullptr;
    uint32_t cap = 0, buf_len = 0;
    // The head being parsed: the parser fills the message and its fields as
    // their lines complete, so both must outlive one parse call (a head
    // arriving in several reads); reset with hp.
    http::head_parser hp;
    http::header *fields = nullptr;  // limits_.max_headers entries, in buf's block
    http::body_framer framer;
    reactor::timer timer;
    uint32_t gen = 0;
    bool used = false;

    net::tcp_rx_piece &front() noexcept { return in[in_head]; }
    // Copies what fits of the front input piece into the head buffer (the
    // piece is consumed as far as copied, and dropped when empty).
    void fill_buf() noexcept {
        net::tcp_rx_piece &p = front();
        const uint32_t k = net::piece_copy_out(p, buf + buf_len, cap - buf_len);
        buf_len += k;
        skip(k);
    }
    void pop() noexcept {
        in_head = (in_head + 1) % in_cap;
        --in_n;
    }
    // Drops the first n bytes of the front piece (framing not forwarded).
    void skip(uint32_t n) noexcept {
        net::tcp_rx_piece &p = front();
        p.off += n;
        p.len -= n;
        if (p.len == 0) {
            rte_pktmbuf_free(p.m);
            pop();
        }
    }
};

struct worker_proxy::client : worker_proxy::endpoint {
    enum class st : uint8_t { head, body, wait, closing, tunnel };
    st state = st::head;
    uint16_t listener = 0;
    // The current request's route (balance.h: an index into its
    // configuration's routes, route_default or route_none), and the same
    // route's index in the configuration in force, for the per-route counts
    // (al_end) and hand-offs: a reload may move or remove it.
    int16_t route = route_none;
    int16_t ctr_route = route_none;
    // The configuration the current request started under (pin()); null
    // before the first request.
    config_gen *cgen = nullptr;
    net::ip_addr peer_addr;  // IPv4 or IPv6
    http::request req;   // the head being parsed (valid once hp is done)
    uint32_t up = none;  // the upconn serving the current request
    uint32_t up_gen = 0;
    uint32_t requests = 0;
    bool keep_alive = true;
    bool response_started = false;
    // The response going out is delimited by its framing (Content-Length or
    // chunked toward the client): a cut shows without a reset.
    bool resp_framed = false;
    bool head_method = false;
    bool http10 = false;
    // The request asks for a protocol upgrade ferry tunnels (RFC 9110 §7.8):
    // it goes on a connection of this lcore with its Upgrade field, and a 101
    // turns the pair into a tunnel (tunnel.cpp).
    bool upgrade = false;
    uint64_t tunnel_last = 0;  // a tunnel's last byte either way (its idle timeout)
    int upstream = -1;
    // The parsed head's bytes at the front of the buffer, until dispatch
    // consumes them (0 otherwise): what a kept-alive error answer drops.
    uint32_t head_len = 0;
    bool redrive = false;            // listed in redrive_
    rte_mbuf *retry_head = nullptr;  // a clone of the request head, for one retry
    uint32_t retries_left = 0;
    bool retry_idempotent = false;  // the request's method is idempotent (RFC 9110 §9.2.2)
    // Waiting for a complete head (pending_heads_ list, oldest first).
    bool pending_head = false;
    uint32_t ph_prev = none, ph_next = none;
    uint64_t balance_key = 0;       // its consistent-hash key (a retry picks again)
    // Shared pool, owner here: waiting in a shared connection's FIFO with
    // its serialized head (the body is read once the connection is ours).
    bool queued = false;
    bool q_body = false;  // the request has a body (begin_body once attached)
    rte_mbuf *q_head = nullptr;
    http::request_info q_ri;
    // Shared pool, owner elsewhere: the request went to worker xpeer.
    bool remote = false;
    uint16_t xpeer = 0;
    uint32_t xgen = 0;     // request generation (the handle's), see proxy.h
    uint32_t xcredit = 0;  // data messages we may still send
    bool xbroken = false;  // a message of the request was dropped (fail_broken)
    int server = -1;
    // Access log (used only with a sink): the request whose record is in
    // al_pending_ has not ended yet; when its first byte was read (0 = no
    // request begun); response bytes handed to the connection for it; the
    // final status the response head carried (0 = none yet); the hand-over
    // time of a remote request.
    bool al_open = false;
    uint16_t peer_port = 0;
    uint16_t al_status = 0;
    uint64_t t_req = 0;
    uint64_t t_started = 0;  // the parsed request's first byte, until its end (req_hist_)
    uint64_t resp_bytes = 0;
    uint64_t t_xsent = 0;
};

struct worker_proxy::upconn : worker_proxy::endpoint {
    enum class st : uint8_t { connecting, idle, head, body, closing, tunnel };
    st state = st::connecting;
    int upstream = -1, server = -1;
    uint32_t client = none, client_gen = 0;
    bool reused = false;
    bool health = false;  // an active health check, no client
    bool resp_keep_alive = false;
    bool dechunk = false;  // the response's chunked coding is removed (HTTP/1.0 client)
    http::response resp;  // the head being parsed (valid once hp is done)
    http::request_info ri;
    uint64_t t_sent = 0;
    uint64_t t_conn = 0;  // connected (0 = not yet)
    // The timer's meaning (arm_upconn), and the total_timeout_ms deadline of
    // the request it serves (0 = none).
    timeout_kind tkind = timeout_kind::none;
    uint64_t total_at = 0;
    uint32_t idle_prev = none, idle_next = none;
    // Shared pool: `shared` for the connection's life; `slot` while it serves
    // its slot (none once closing); `rq` the remote request it serves.
    bool shared = false;
    uint32_t slot = none;
    uint32_t rq = none, rq_gen = 0;

    // Idle and fit to carry the next request at once: nothing unread, the
    // origin has not closed it, the TCP handle still open (otherwise it is
    // closed, and a slot's connection reopened, first).
    [[nodiscard]] bool reusable() const noexcept {
        return state == st::idle && !eof && h.valid() && in_n == 0;
    }
};

// A request another worker handed over (B's side of the protocol in proxy.h).
struct worker_proxy::rreq {
    bool used = false;
    bool queued = false;            // in its slot's FIFO
    bool end = false;               // the whole request arrived (req_end / xf_end)
    bool keep_alive = true;         // the client stays open after the response
    bool http10 = false;            // an HTTP/1.0 client (xf_http10)
    bool response_started = false;  // resp_data sent
    int16_t route = -2;             // the client's route's id (xf_route; -2: route_none)
    bool broken = false;            // a message of it was dropped (fail_broken)
    uint16_t from = 0;
    uint32_t xgen = 0;
    uint32_t agen = 0;  // allocation generation (FIFO entries, upconn links)
    uint32_t cidx = 0, slot = none, up = none, up_gen = 0;
    uint32_t credit = 0;  // resp_data we may still send
    uint32_t retries_left = 0;
    uint64_t handle = 0;
    http::request_info ri;
    rte_mbuf *retry_head = nullptr;
    rte_mbuf *q[xcore_window] = {};  // chains received, not yet pushed to the upconn
    uint32_t qh = 0, qn = 0;
};

struct worker_proxy::shared_slot {
    int upstream = -1, server = -1;
    uint32_t k = 0;
    unsigned owner = 0;
    uint32_t conn = none;  // the upconn serving this slot, or none
    bool opened = false;   // a connection was opened before (reopen counts)
    bool listed = false;   // in kick_list_
    std::unique_ptr<job[]> q;  // FIFO (owner only), shared_fifo_cap entries
    uint32_t qh = 0, qn = 0;
};

// Per server slot (config.h server_config::slot: what `server` means in the
// proxy, in upconns, clients, counters and health words), sized for the
// upstream's slot_capacity, so that a reload that adds, removes or reorders
// servers leaves each server's connections and counts where they are; and per
// position in the configuration's server list (the balancer's, rebuilt by
// set_servers at every reload).
struct worker_proxy::upstream_state {
    // By slot.
    std::vector<uint32_t> idle_head;  // idle upconns (doubly linked)
    std::vector<uint32_t> nidle;
    std::vector<uint32_t> busy;     // requests in flight here
    std::vector<uint32_t> hc_conn;  // health check in flight
    std::vector<uint8_t> present;   // in the configuration (a reload may remove it)
    // By position.
    std::vector<int64_t> rr_current;  // smooth weighted round robin (nginx)
    hash_ring ring;                   // consistent hash
    std::vector<server_view> view;    // the balancer's snapshot (pick_server)
};

}  // namespace ferry::proxy
