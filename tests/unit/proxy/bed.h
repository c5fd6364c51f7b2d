// A test bed for lib/proxy without a NIC: ferry's worker_proxy on a real
// lib/net stack and tcp_layer (10.0.0.1), wired back to back, frame by frame,
// to a peer stack and tcp_layer (10.0.0.2) on which the test plays both the
// clients and the origin servers with scripted bytes. Time is a fake clock
// the test advances; nothing reads a real clock, so every exchange is
// deterministic.
//
// Frames cross as a NIC would carry them: each one copied into a fresh flat
// mbuf (the sender's indirect mbufs and tx flags stay on its side). pump()
// moves frames and polls both sides until nothing moves any more: after it
// returns, every byte either side sent has been received and handled.
#pragma once

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/config/config.h"
#include "ferry/net/mbuf_chain.h"
#include "ferry/net/stack.h"
#include "ferry/net/tcp_layer.h"
#include "ferry/proxy/proxy.h"
#include "ferry/reactor/timer_wheel.h"
#include "ferry/xcore/message.h"

namespace ferry::proxy::test {

// The test binary's pool (main.cpp); null if the EAL did not start.
extern rte_mempool *g_pool;

inline constexpr uint64_t ms = 1'000'000;
inline constexpr uint32_t ferry_ip = 0x0a000001;  // 10.0.0.1
inline constexpr uint32_t peer_ip = 0x0a000002;   // 10.0.0.2

// The proxy part of a configuration around one origin 10.0.0.2:8080 and a
// listener on port 80; `extra` is appended (more [http] keys go in `http`).
inline std::string bed_config(std::string_view http = "", std::string_view upstream = "",
                              std::string_view extra = "") {
    std::string t;
    t += "[http]\n";
    t += http;
    t += "\n[[listener]]\nname = \"web\"\nport = 80\ndefault_upstream = \"o\"\n";
    t += "\n[[upstream]]\nname = \"o\"\n";
    t += upstream;
    t += "\n  [[upstream.server]]\n  address = \"10.0.0.2:8080\"\n";
    t += extra;
    t += "\n[[port]]\nname = \"p0\"\nprofile = \"net_tap\"\niface = \"ferry0\"\n"
         "address = \"10.0.0.1/24\"\n";
    return t;
}

// A TCP segment that crossed the wire between ferry and the peer (frames()).
struct wire_seg {
    bool from_ferry = false;
    uint16_t sport = 0, dport = 0;
    uint8_t flags = 0;     // net::tcp_flag bits
    uint32_t payload = 0;  // TCP payload bytes
};

// One connection of the peer side (a client of ferry, or an origin's
// accepted connection), with everything it received so far.
struct peer_conn {
    net::tcp_handle h;
    bool active = false;  // we connected (a client); else accepted (origin)
    uint16_t port = 0;    // an origin connection: the port it was accepted on
    bool connected = false;
    bool fin = false;     // the other side's FIN arrived
    bool closed = false;  // reached CLOSED
    // While set the peer reads nothing of this connection: its receive
    // window closes and the sender's queues fill (backpressure).
    bool paused = false;
    net::tcp_close_reason reason = net::tcp_close_reason::none;
    std::string rx;
};

struct bed_options {
    std::string toml = bed_config();
    uint32_t max_connections = 64;  // per side
    proxy_options px;
    // Cross-core: this proxy is worker 0 of `workers`; messages to the
    // others go to `send` (see worker_proxy::set_xcore).
    unsigned workers = 1;
    xcore_send_fn send = nullptr;
    void *send_ctx = nullptr;
    // Ports the origin side listens on (10.0.0.2); a server on another port
    // refuses connections (RST).
    std::vector<uint16_t> origin_ports = {8080};
};

class proxy_bed {
public:
    explicit proxy_bed(const bed_options &o = {}) {
        EXPECT_NE(g_pool, nullptr);
        avail0_ = rte_mempool_avail_count(g_pool);
        auto parsed = config::parse(o.toml, "bed.toml");
        if (!parsed) {
            ADD_FAILURE() << "config: " << parsed.error().message;
            return;
        }
        cfg_ = std::move(*parsed);
        net::iface_config fi, pi;
        fi.mac = net::mac_addr({0x02, 0, 0, 0, 0, 0x01});
        fi.addr = net::ipv4_addr(ferry_ip);
        pi.mac = net::mac_addr({0x02, 0, 0, 0, 0, 0x02});
        pi.addr = net::ipv4_addr(peer_ip);
        fst_.emplace(fi, g_pool, fnc_);
        pst_.emplace(pi, g_pool, pnc_);
        net::tcp_layer_config tc;
        tc.max_connections = o.max_connections;
        tc.isn_key = net::siphash_key{1, 2};
        tc.cookie_key0 = net::siphash_key{3, 4};
        tc.cookie_key1 = net::siphash_key{5, 6};
        tc.conn.time_wait_ns = 100 * ms;
        tc.active_keepalive_ns = uint64_t(cfg_.tcp.upstream_keepalive_ms) * ms;  // as main.cpp
        tc.conn.defer_output = true;  // as main.cpp: pump() flushes after the proxy's poll
        flay_.emplace(tc, *fst_, g_pool, fnc_, ftc_);
        tc.isn_key = net::siphash_key{7, 8};
        tc.active_keepalive_ns = 0;
        tc.conn.defer_output = false;  // the peer's TCP answers at once
        play_.emplace(tc, *pst_, g_pool, pnc_, ptc_);
        fst_->attach_tcp(&*flay_);
        pst_->attach_tcp(&*play_);
        timers_.emplace(now_);
        shared_.emplace(cfg_);
        const port_ref ref{&*flay_, g_pool, ferry_ip, 24, false};
        px_.emplace(cfg_, std::span(&ref, 1), 0, *shared_, *timers_, now_, o.px);
        if (o.workers > 1) px_->set_xcore(o.workers, o.send, o.send_ctx);
        EXPECT_EQ(px_->listen(now_), "");
        for (uint16_t p : o.origin_ports)
            EXPECT_EQ(play_->listen(p), net::tcp_layer::listen_result::ok);
    }

    ~proxy_bed() {
        px_.reset();
        shared_.reset();
        timers_.reset();
        flay_.reset();
        play_.reset();
        fst_.reset();
        pst_.reset();
        if (check_leaks_) {
            EXPECT_EQ(rte_mempool_avail_count(g_pool), avail0_) << "mbufs leaked";
        }
    }
    proxy_bed(const proxy_bed &) = delete;
    proxy_bed &operator=(const proxy_bed &) = delete;

    worker_proxy &proxy() { return *px_; }
    const http_counters &ctr() const { return px_->counters(); }
    shared_state &shared() { return *shared_; }
    uint64_t now() const { return now_; }
    net::tcp_layer &ferry_layer() { return *flay_; }
    void skip_leak_check() { check_leaks_ = false; }
    // While set, frames from ferry to the peer are lost (counted in dropped()).
    void blackhole(bool on) { blackhole_ = on; }
    // The peer's side of c vanishes without a word (a crash whose reset was
    // lost): ferry's side still thinks it is open.
    void vanish(peer_conn &c) {
        peer_blackhole_ = true;
        play_->abort(c.h, now_);
        pump();
        peer_blackhole_ = false;
    }
    uint64_t dropped() const { return dropped_; }
    // Ferry's TCP counters (its port's connections).
    const net::tcp_counters &ferry_tcp() const { return ftc_; }
    // Every TCP segment carried since the last clear_frames(), both ways, in
    // wire order (lost ones included).
    const std::vector<wire_seg> &frames() const { return frames_; }
    void clear_frames() { frames_.clear(); }
    // How many of them ferry sent on the client leg (from its listener's
    // port 80) or the origin leg (any other port), with data or without.
    size_t frames_from_ferry(bool client_leg, bool with_data) const {
        size_t n = 0;
        for (const wire_seg &s : frames_)
            if (s.from_ferry && (s.sport == 80) == client_leg && (s.payload != 0) == with_data) ++n;
        return n;
    }
    // worker_proxy::exchanges_in_flight()'s running count equals a recount;
    // reported once per bed (a broken count would fail every round after).
    // False if it did not.
    bool check_exchange_count() {
        const uint32_t kept = px_->exchanges_count(), walked = px_->exchanges_recount();
        if (kept == walked) return true;
        if (!count_reported_)
            ADD_FAILURE() << "exchanges in flight: running count " << kept << ", recount "
                          << walked << " at t=" << now_;
        count_reported_ = true;
        return false;
    }

    // Moves frames both ways and polls both sides until nothing moves.
    // Fires what is due at the current time, never advances it. After each
    // round, the proxy's running count of exchanges in flight must equal
    // the walk it replaced (check_exchange_count()).
    void pump() {
        for (int round = 0; round < 100000; ++round) {
            bool moved = carry(*fst_, *pst_, blackhole_) | carry(*pst_, *fst_, peer_blackhole_);
            if (timers_->next_deadline() <= now_) moved |= timers_->advance(now_) != 0;
            if (fst_->next_deadline() <= now_) fst_->poll_timers(now_);
            if (pst_->next_deadline() <= now_) pst_->poll_timers(now_);
            moved |= px_->poll(now_) != 0;
            flay_->flush(now_);  // the worker's flusher (worker.cpp flush_tx)
            check_exchange_count();
            moved |= peer_poll();
            moved |= !fst_->tx_pending().empty() || !pst_->tx_pending().empty();
            if (!moved) return;
        }
        ADD_FAILURE() << "pump: no quiescence";
    }

    // Advances the clock by `dt` in steps of at most `step`, pumping at each.
    void advance(uint64_t dt, uint64_t step = 10 * ms) {
        const uint64_t end = now_ + dt;
        while (now_ < end) {
            now_ = std::min(end, now_ + step);
            pump();
        }
    }

    // A new client connection to ferry's port 80, established.
    size_t connect(uint16_t port = 80) {
        const size_t i = try_connect(port);
        EXPECT_TRUE(conns_.back().connected) << "client did not connect";
        return i;
    }
    // The same, whatever ferry answers (connected, or closed by a reset).
    size_t try_connect(uint16_t port) {
        net::tcp_handle h;
        EXPECT_EQ(play_->connect(net::ipv4_addr(ferry_ip), port, now_, h),
                  net::tcp_layer::connect_result::ok);
        conns_.push_back(peer_conn{h, true});
        pump();
        return conns_.size() - 1;
    }

    peer_conn &conn(size_t i) { return conns_.at(i); }

    // The i-th connection the origin accepted (in order of acceptance).
    peer_conn *origin(size_t i = 0) {
        size_t k = 0;
        for (peer_conn &c : conns_)
            if (!c.active && k++ == i) return &c;
        return nullptr;
    }
    size_t origin_count() const {
        size_t k = 0;
        for (const peer_conn &c : conns_) k += !c.active;
        return k;
    }

    // Queues bytes on a peer connection (all of them, pumping while its send
    // queue is full), then pumps. False if the connection closed first.
    bool send(size_t i, std::string_view data) { return send(conns_.at(i), data); }
    bool send(peer_conn &c, std::string_view data) {
        while (!data.empty()) {
            if (c.closed) return false;
            const uint32_t k = static_cast<uint32_t>(std::min<size_t>(data.size(), 16384));
            rte_mbuf *m = chain_of(data.substr(0, k));
            if (m == nullptr) return false;
            if (play_->send(c.h, m, now_) == 0) {
                rte_pktmbuf_free(m);
                pump();
                advance(1 * ms, 1 * ms);
                continue;
            }
            data.remove_prefix(k);
        }
        pump();
        return true;
    }
    // Queues what the connection's send queue takes now (16 KiB pieces),
    // then pumps; returns the bytes queued (0: the queue is full).
    size_t send_some(peer_conn &c, std::string_view data) {
        size_t queued = 0;
        while (queued < data.size() && !c.closed) {
            const uint32_t k = static_cast<uint32_t>(std::min<size_t>(data.size() - queued, 16384));
            rte_mbuf *m = chain_of(data.substr(queued, k));
            if (m == nullptr) break;
            if (play_->send(c.h, m, now_) == 0) {
                rte_pktmbuf_free(m);
                break;
            }
            queued += k;
        }
        pump();
        return queued;
    }
    // A paused connection reads at most n of the pieces waiting for it (a
    // slow reader), then pumps; it stays paused. Returns the bytes read.
    size_t read_some(peer_conn &c, size_t n) {
        const size_t before = c.rx.size();
        net::tcp_rx_piece got[1];
        for (size_t i = 0; i < n; ++i) {
            if (play_->recv(c.h, got, now_) == 0) break;
            append(c.rx, got[0]);
            rte_pktmbuf_free(got[0].m);
        }
        pump();
        return c.rx.size() - before;
    }
    // Lets a paused connection read what waits for it (and pumps).
    void resume(peer_conn &c) {
        c.paused = false;
        net::tcp_rx_piece got[16];
        for (;;) {
            const size_t k = play_->recv(c.h, got, now_);
            for (size_t j = 0; j < k; ++j) {
                append(c.rx, got[j]);
                rte_pktmbuf_free(got[j].m);
            }
            if (k < std::size(got)) break;
        }
        pump();
    }
    void close(size_t i) {
        play_->close(conns_.at(i).h, now_);
        pump();
    }
    void close(peer_conn &c) {
        play_->close(c.h, now_);
        pump();
    }
    void reset(peer_conn &c) {
        play_->abort(c.h, now_);
        pump();
    }

private:
    rte_mbuf *chain_of(std::string_view data) {
        rte_mbuf *m = net::chain_from(g_pool, data.data(), static_cast<uint32_t>(data.size()));
        if (m == nullptr) ADD_FAILURE() << "test pool exhausted";
        return m;
    }

    // Copies every frame `from` queued into a fresh flat mbuf for `to`.
    bool carry(net::stack &from, net::stack &to, bool lose) {
        auto tx = from.tx_pending();
        if (tx.empty()) return false;
        std::vector<rte_mbuf *> in;
        for (rte_mbuf *m : tx) {
            log_frame(m, &from == &*fst_);
            if (lose) {
                ++dropped_;
                rte_pktmbuf_free(m);
                continue;
            }
            rte_mbuf *f = rte_pktmbuf_alloc(g_pool);
            EXPECT_NE(f, nullptr);
            if (f != nullptr) {
                char *dst = rte_pktmbuf_append(f, static_cast<uint16_t>(m->pkt_len));
                EXPECT_NE(dst, nullptr) << "frame of " << m->pkt_len << " bytes";
                if (dst != nullptr) {
                    // A pointer into m when the frame is contiguous, else dst.
                    const void *p = rte_pktmbuf_read(m, 0, m->pkt_len, dst);
                    if (p != dst) std::memcpy(dst, p, m->pkt_len);
                    in.push_back(f);
                } else {
                    rte_pktmbuf_free(f);
                }
            }
            rte_pktmbuf_free(m);
        }
        from.tx_consumed(static_cast<uint16_t>(tx.size()));
        if (!in.empty()) to.input_burst(in, now_);
        return true;
    }

    // Ethernet, IPv4 (any IHL), TCP: into frames_.
    void log_frame(const rte_mbuf *m, bool from_ferry) {
        uint8_t h[14 + 60 + 20];
        const uint32_t n = std::min<uint32_t>(m->pkt_len, sizeof h);
        const auto *p = static_cast<const uint8_t *>(rte_pktmbuf_read(m, 0, n, h));
        if (p == nullptr || n < 14 + 20 || p[12] != 0x08 || p[13] != 0x00 || p[14 + 9] != 6) return;
        const uint32_t ihl = (p[14] & 15u) * 4;
        const uint32_t ip_len = uint32_t{p[16]} << 8 | p[17];
        if (n < 14 + ihl + 20) return;
        const uint8_t *t = p + 14 + ihl;
        const uint32_t thl = (t[12] >> 4) * 4u;
        frames_.push_back(wire_seg{from_ferry, static_cast<uint16_t>(t[0] << 8 | t[1]),
                                   static_cast<uint16_t>(t[2] << 8 | t[3]), t[13],
                                   ip_len - ihl - thl});
    }

    peer_conn *find(net::tcp_handle h) {
        for (peer_conn &c : conns_)
            if (c.h == h && !c.closed) return &c;
        return nullptr;
    }

    bool peer_poll() {
        bool any = false;
        net::tcp_notice notes[32];
        for (;;) {
            const size_t n = play_->poll_events(notes);
            for (size_t i = 0; i < n; ++i) {
                const net::tcp_notice &e = notes[i];
                peer_conn *c = find(e.h);
                if (c == nullptr) {
                    conns_.push_back(peer_conn{e.h, false});
                    c = &conns_.back();
                    c->port = e.local_port;
                }
                if (e.events & net::tcp_event::connected) c->connected = true;
                net::tcp_rx_piece got[16];
                for (; !c->paused;) {
                    const size_t k = play_->recv(c->h, got, now_);
                    for (size_t j = 0; j < k; ++j) {
                        append(c->rx, got[j]);
                        rte_pktmbuf_free(got[j].m);
                    }
                    if (k < std::size(got)) break;
                }
                if (e.events & net::tcp_event::peer_fin) c->fin = true;
                if (e.events & net::tcp_event::closed) {
                    c->closed = true;
                    c->reason = e.reason;
                }
                any = true;
            }
            if (n < std::size(notes)) return any;
        }
    }

    static void append(std::string &s, const net::tcp_rx_piece &p) {
        uint32_t off = p.off, left = p.len;
        for (const rte_mbuf *m = p.m; m != nullptr && left > 0; m = m->next) {
            if (off >= m->data_len) {
                off -= m->data_len;
                continue;
            }
            const uint32_t k = std::min<uint32_t>(m->data_len - off, left);
            s.append(rte_pktmbuf_mtod_offset(m, const char *, off), k);
            left -= k;
            off = 0;
        }
    }

    unsigned avail0_ = 0;
    bool check_leaks_ = true;
    bool count_reported_ = false;
    bool blackhole_ = false;
    bool peer_blackhole_ = false;
    uint64_t dropped_ = 0;
    std::vector<wire_seg> frames_;
    uint64_t now_ = 1'000'000'000;
    config::ferry_config cfg_;
    net::net_counters fnc_{}, pnc_{};
    net::tcp_counters ftc_{}, ptc_{};
    std::optional<net::stack> fst_, pst_;
    std::optional<net::tcp_layer> flay_, play_;
    std::optional<reactor::timer_wheel> timers_;
    std::optional<shared_state> shared_;
    std::optional<worker_proxy> px_;
    std::deque<peer_conn> conns_;  // only appended: references stay valid
};

// Worker 1 as seen from worker 0 (bed_options::send): it takes every message
// sent to it and keeps it; the test answers for it (on_message).
struct taking_peer {
    std::vector<xcore::message> got;
    static bool send(void *ctx, unsigned peer, const xcore::message &m) noexcept {
        if (peer != 1) return false;
        static_cast<taking_peer *>(ctx)->got.push_back(m);
        return true;
    }
    // Frees what it took (before a bed counts its mbufs).
    void drop() {
        for (auto &m : got) xcore::release(m);
        got.clear();
    }
    ~taking_peer() { drop(); }
    // The last request head handed over, or null.
    [[nodiscard]] const xcore::message *last_head() const {
        const xcore::message *head = nullptr;
        for (const auto &m : got)
            if (m.opcode == op_req_head) head = &m;
        return head;
    }
};

// Worker 1's answer to the request of `head`: an error, `arg` = the status
// (and in bits 16.. a timeout kind).
inline xcore::message resp_error_for(const xcore::message &head, uint32_t arg) {
    xcore::message err{};
    err.handle = head.handle;
    err.opcode = op_resp_error;
    err.arg = arg;
    return err;
}

// A bed as worker 0 of 2 with a shared pool of two connections per server
// (k = 0 worker 0's, k = 1 worker 1's), worker 1 being `peer`; `extra`:
// more upstream keys.
inline bed_options two_workers_shared(taking_peer &peer, std::string_view extra = "") {
    bed_options o;
    o.toml = bed_config("", "pool = \"shared\"\nshared_connections = 2\nmax_fails = 0\n" +
                                std::string(extra));
    o.workers = 2;
    o.send = &taking_peer::send;
    o.send_ctx = &peer;
    return o;
}

// A keep-alive GET, and a 5-byte answer to it.
inline constexpr std::string_view simple_get = "GET /p HTTP/1.1\r\nHost: h\r\n\r\n";
inline constexpr std::string_view ok5 = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";

// Every access record the sink holds, in order.
inline std::vector<access_record> drain(access_log_sink &sink) {
    std::vector<access_record> out;
    sink.consume(UINT32_MAX, [&](const access_record &r) { out.push_back(r); });
    return out;
}

// The bytes after the head of the first message in s (or "" without a head).
inline std::string body_of(std::string_view s) {
    const size_t e = s.find("\r\n\r\n");
    return e == std::string_view::npos ? std::string() : std::string(s.substr(e + 4));
}

// Ends a test's connections and lets every timer run out.
inline void finish(proxy_bed &bed, std::initializer_list<size_t> clients) {
    for (size_t c : clients)
        if (!bed.conn(c).closed) bed.close(c);
    bed.advance(2000 * ms, 100 * ms);
}

}  // namespace ferry::proxy::test
