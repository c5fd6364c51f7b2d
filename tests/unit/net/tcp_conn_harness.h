// Scripted-segment harness for tcp_conn (packetdrill / smoltcp style): build a
// connection in a state, send_seg() what the peer sends, expect_seg() exactly
// what the connection emits, expect_nothing(), with injected time.
//
// The connection under test is "local" (10.0.0.1:80); the script plays the
// peer (10.0.0.2:40000). Sequence numbers in scripts are absolute: local ISS
// is `local_iss`, the peer's is `peer_iss`.
#pragma once

#include <rte_mbuf.h>

#include <deque>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "ferry/net/tcp_conn.h"
#include "stack_test_env.h"
#include "test_util.h"

namespace ferry::net::test {

inline constexpr uint64_t ms = 1'000'000;
inline constexpr uint64_t sec = 1'000'000'000;

// One segment, as the script writes it.
struct seg {
    uint8_t flags = 0;
    uint32_t seq = 0;
    uint32_t ack = 0;
    uint16_t win = 0;
    bytes data;
    tcp_options opts;
};

struct emitted {
    tcp_repr hdr;
    bytes data;
};

inline std::string flag_string(uint8_t f) {
    std::string s;
    const char *names[] = {"FIN", "SYN", "RST", "PSH", "ACK", "URG", "ECE", "CWR"};
    for (int i = 0; i < 8; ++i) {
        if ((f & (1u << i)) != 0) {
            s += s.empty() ? "" : "|";
            s += names[i];
        }
    }
    return s.empty() ? "none" : s;
}

inline std::string describe(const tcp_repr &h, std::size_t data_len) {
    std::ostringstream o;
    o << flag_string(h.flags) << " seq=" << h.seq.value() << " ack=" << h.ack.value()
      << " win=" << h.window << " len=" << data_len;
    return o.str();
}

// An mbuf chain holding `data`, in segments of at most `seg_size` bytes.
inline rte_mbuf *make_chain(const bytes &data, std::size_t seg_size = 1024) {
    rte_mbuf *head = nullptr;
    rte_mbuf *tail = nullptr;
    std::size_t off = 0;
    do {
        rte_mbuf *m = rte_pktmbuf_alloc(g_pool);
        if (m == nullptr) {
            rte_pktmbuf_free(head);
            return nullptr;
        }
        const std::size_t n = std::min(seg_size, data.size() - off);
        char *p = rte_pktmbuf_append(m, static_cast<uint16_t>(n));
        std::copy_n(data.data() + off, n, p);
        off += n;
        if (head == nullptr) {
            head = tail = m;
        } else {
            tail->next = m;
            tail = m;
            head->nb_segs++;
            head->pkt_len += static_cast<uint32_t>(n);
        }
    } while (off < data.size());
    return head;
}

// The bytes [off, off + len) of a chain.
inline bytes chain_bytes(const rte_mbuf *m, uint32_t off, uint32_t len) {
    bytes out;
    out.reserve(len);
    for (; m != nullptr && out.size() < len; m = m->next) {
        if (off >= m->data_len) {
            off -= m->data_len;
            continue;
        }
        const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
        const uint32_t take = std::min<uint32_t>(m->data_len - off, len - out.size());
        out.insert(out.end(), p + off, p + off + take);
        off = 0;
    }
    return out;
}

inline bytes pattern(std::size_t n, uint8_t start = 0) {
    bytes b(n);
    for (std::size_t i = 0; i < n; ++i) {
        b[i] = static_cast<uint8_t>(start + i);
    }
    return b;
}

class tcp_harness {
public:
    static constexpr uint32_t local_iss = 1000;
    static constexpr uint32_t peer_iss = 5000;
    static constexpr uint16_t local_port = 80;
    static constexpr uint16_t peer_port = 40000;

    tcp_harness() {
        cfg.mss = 1000;
        cfg.rcv_buf = 10000;
        cfg.snd_buf = 64 * 1024;
        cfg.window_scaling = false;
        cfg.timestamps = false;
        cfg.sack = false;
        cfg.delayed_ack = false;
        cfg.rtt.initial_rto_ns = 1 * sec;
        cfg.rtt.min_rto_ns = 200 * ms;
        cfg.time_wait_ns = 60 * sec;
        cfg.cc.algorithm = cc_algorithm::new_reno;
        cfg.cc.initial_window_segments = 10;
        tuple.local_addr = ipv4_addr::from_octets(10, 0, 0, 1);
        tuple.remote_addr = ipv4_addr::from_octets(10, 0, 0, 2);
        tuple.local_port = local_port;
        tuple.remote_port = peer_port;
    }
    ~tcp_harness() {
        conn.reset();
        EXPECT_TRUE(out.empty()) << out.size() << " emitted segment(s) not checked, first: "
                                 << (out.empty()
                                         ? ""
                                         : describe(out.front().hdr, out.front().data.size()));
    }

    tcp_counters ctr;
    tcp_conn_config cfg;
    tcp_tuple tuple;
    std::unique_ptr<tcp_conn> conn;
    std::deque<emitted> out;
    uint64_t now = 0;

    static void on_emit(void *ctx, const tcp_repr &h, const tcp_payload &p) {
        auto *self = static_cast<tcp_harness *>(ctx);
        emitted e{h, {}};
        for (const tcp_payload_ref &r : p.refs) {
            const uint8_t *d = rte_pktmbuf_mtod(r.m, const uint8_t *) + r.off;
            e.data.insert(e.data.end(), d, d + r.len);
        }
        EXPECT_EQ(e.data.size(), p.len);
        EXPECT_EQ(h.payload_len, p.len);
        self->out.push_back(std::move(e));
    }

    tcp_conn &create(uint32_t iss = local_iss) {
        conn = std::make_unique<tcp_conn>(cfg, tuple, seq_num(iss), &on_emit, this, ctr);
        return *conn;
    }

    // What the peer sends.
    void send_seg(const seg &s) {
        tcp_repr h;
        h.src_port = peer_port;
        h.dst_port = local_port;
        h.seq = seq_num(s.seq);
        h.ack = seq_num(s.ack);
        h.flags = s.flags;
        h.window = s.win;
        h.options = s.opts;
        h.payload_len = static_cast<uint32_t>(s.data.size());
        rte_mbuf *m = nullptr;
        if (!s.data.empty()) {
            m = make_chain(s.data, 700);
            ASSERT_NE(m, nullptr);
        }
        conn->input(h, m, 0, now);
    }

    std::optional<emitted> pop() {
        if (out.empty()) {
            return std::nullopt;
        }
        emitted e = std::move(out.front());
        out.pop_front();
        return e;
    }

    // The next emitted segment has exactly these fields (ack only when the
    // ACK flag is set), options and data.
    void expect_seg(const seg &s, int line = __builtin_LINE()) {
        SCOPED_TRACE("expect_seg at line " + std::to_string(line));
        std::optional<emitted> e = pop();
        ASSERT_TRUE(e.has_value()) << "nothing emitted";
        EXPECT_EQ(flag_string(e->hdr.flags), flag_string(s.flags))
            << describe(e->hdr, e->data.size());
        EXPECT_EQ(e->hdr.src_port, local_port);
        EXPECT_EQ(e->hdr.dst_port, peer_port);
        EXPECT_EQ(e->hdr.seq.value(), s.seq) << describe(e->hdr, e->data.size());
        if ((s.flags & tcp_flag::ack) != 0) {
            EXPECT_EQ(e->hdr.ack.value(), s.ack) << describe(e->hdr, e->data.size());
        }
        EXPECT_EQ(e->hdr.window, s.win) << describe(e->hdr, e->data.size());
        EXPECT_EQ(e->hdr.options, s.opts) << describe(e->hdr, e->data.size());
        EXPECT_EQ(e->data.size(), s.data.size()) << describe(e->hdr, e->data.size());
        EXPECT_EQ(e->data, s.data);
    }

    void expect_nothing(int line = __builtin_LINE()) {
        SCOPED_TRACE("expect_nothing at line " + std::to_string(line));
        if (!out.empty()) {
            ADD_FAILURE() << out.size() << " segment(s) emitted, first: "
                          << describe(out.front().hdr, out.front().data.size());
            out.clear();
        }
    }

    // Moves time to `t`, running every timer that falls due on the way at its
    // own deadline.
    void advance_to(uint64_t t) {
        for (int guard = 0; guard < 10000; ++guard) {
            const uint64_t d = conn->next_deadline();
            if (d > t) {
                break;
            }
            now = std::max(now, d);
            conn->on_timer(now);
        }
        now = t;
    }
    void advance(uint64_t dt) { advance_to(now + dt); }

    // Application side.
    uint32_t app_send(const bytes &data, std::size_t seg_size = 1024) {
        rte_mbuf *m = make_chain(data, seg_size);
        EXPECT_NE(m, nullptr);
        const uint32_t n = conn->send(m, now);
        if (n == 0) {
            rte_pktmbuf_free(m);
        }
        return n;
    }
    bytes app_recv() {
        bytes all;
        std::array<tcp_rx_piece, 16> pieces;
        for (;;) {
            const std::size_t n = conn->recv(pieces, now);
            if (n == 0) {
                return all;
            }
            for (std::size_t i = 0; i < n; ++i) {
                const bytes b = chain_bytes(pieces[i].m, pieces[i].off, pieces[i].len);
                all.insert(all.end(), b.begin(), b.end());
                rte_pktmbuf_free(pieces[i].m);
            }
        }
    }

    static tcp_options mss_opt(uint16_t mss) {
        tcp_options o;
        o.mss = mss;
        return o;
    }

    // Passive open to ESTABLISHED: SYN in, SYN-ACK out, ACK in.
    void establish_passive(uint16_t peer_win = 20000) {
        create();
        tcp_repr syn;
        syn.src_port = peer_port;
        syn.dst_port = local_port;
        syn.seq = seq_num(peer_iss);
        syn.flags = tcp_flag::syn;
        syn.window = peer_win;
        syn.options.mss = 1000;
        ASSERT_TRUE(conn->open_passive(syn, now));
        expect_seg(
            {tcp_flag::syn | tcp_flag::ack, local_iss, peer_iss + 1, 10000, {}, mss_opt(1000)});
        send_seg({tcp_flag::ack, peer_iss + 1, local_iss + 1, peer_win});
        ASSERT_EQ(conn->state(), tcp_state::established);
        (void)conn->take_events();
    }

    // Builds a connection in state `s` through the segments that lead there
    // (no data). The peer's window is 20000; every segment the connection
    // emits on the way is checked and consumed.
    void enter(tcp_state s) {
        using namespace tcp_flag;
        switch (s) {
            case tcp_state::closed:
            case tcp_state::listen:
                create();
                break;
            case tcp_state::syn_sent:
                create();
                ASSERT_TRUE(conn->open_active(now));
                expect_seg({syn, local_iss, 0, 10000, {}, mss_opt(1000)});
                break;
            case tcp_state::syn_received: {
                create();
                tcp_repr h;
                h.seq = seq_num(peer_iss);
                h.flags = syn;
                h.window = 20000;
                h.options.mss = 1000;
                ASSERT_TRUE(conn->open_passive(h, now));
                expect_seg({syn | ack, local_iss, peer_iss + 1, 10000, {}, mss_opt(1000)});
                break;
            }
            case tcp_state::established:
                establish_passive();
                break;
            case tcp_state::fin_wait_1:
                establish_passive();
                conn->close(now);
                expect_seg({fin | ack, local_iss + 1, peer_iss + 1, 10000});
                break;
            case tcp_state::fin_wait_2:
                enter(tcp_state::fin_wait_1);
                send_seg({ack, peer_iss + 1, local_iss + 2, 20000});
                break;
            case tcp_state::close_wait:
                establish_passive();
                send_seg({fin | ack, peer_iss + 1, local_iss + 1, 20000});
                expect_seg({ack, local_iss + 1, peer_iss + 2, 9999});
                break;
            case tcp_state::closing:
                enter(tcp_state::fin_wait_1);
                send_seg({fin | ack, peer_iss + 1, local_iss + 1, 20000});
                expect_seg({ack, local_iss + 2, peer_iss + 2, 9999});
                break;
            case tcp_state::last_ack:
                enter(tcp_state::close_wait);
                conn->close(now);
                expect_seg({fin | ack, local_iss + 1, peer_iss + 2, 9999});
                break;
            case tcp_state::time_wait:
                enter(tcp_state::fin_wait_2);
                send_seg({fin | ack, peer_iss + 1, local_iss + 2, 20000});
                expect_seg({ack, local_iss + 2, peer_iss + 2, 9999});
                break;
        }
        ASSERT_EQ(conn->state(), s) << name(conn->state());
        (void)conn->take_events();
    }
};

}  // namespace ferry::net::test
