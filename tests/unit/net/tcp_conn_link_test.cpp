// Two tcp_conns back to back through an in-memory link that loses, delays,
// reorders and duplicates segments: every byte must arrive once, in order,
// both ways, and both ends must close cleanly.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "ferry/net/tcp_conn.h"
#include "tcp_conn_harness.h"

namespace ferry::net {
namespace {

using namespace test;

struct link_case {
    const char *name;
    uint64_t seed;
    double loss;
    double dup;
    uint64_t delay_ns;
    uint64_t jitter_ns;  // uniform extra delay: reorders segments sent close together
    bool options;        // window scaling, timestamps, SACK
    cc_algorithm cc;
    uint32_t bytes;  // each way
};

void PrintTo(const link_case &c, std::ostream *os) {
    *os << c.name;
}

// The data byte at stream offset i, per direction.
uint8_t stream_byte(int dir, uint64_t i) {
    uint64_t x = i * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(dir) * 0x632be59bd9b4e019ull;
    x ^= x >> 29;
    return static_cast<uint8_t>(x);
}

struct in_flight {
    uint64_t at;
    uint64_t order;  // tie-break, for determinism
    int to;
    tcp_repr hdr;
    bytes data;
};

struct sim {
    std::mt19937_64 rng;
    link_case c;
    uint64_t now = 0;
    uint64_t order = 0;
    std::vector<in_flight> wire;
    tcp_counters ctr;
    std::unique_ptr<tcp_conn> ep[2];
    uint64_t sent[2] = {0, 0};      // bytes the application at ep[i] handed to send()
    uint64_t received[2] = {0, 0};  // bytes the application at ep[i] read
    bool eof[2] = {false, false};
    uint64_t lost = 0, duplicated = 0, delivered = 0;

    struct emit_ctx {
        sim *s;
        int from;
    } ctx[2] = {{this, 0}, {this, 1}};

    double uniform() { return std::uniform_real_distribution<double>(0, 1)(rng); }

    static void on_emit(void *p, const tcp_repr &h, const tcp_payload &pl) {
        auto *e = static_cast<emit_ctx *>(p);
        sim &s = *e->s;
        bytes data;
        data.reserve(pl.len);
        for (const tcp_payload_ref &r : pl.refs) {
            const uint8_t *d = rte_pktmbuf_mtod(r.m, const uint8_t *) + r.off;
            data.insert(data.end(), d, d + r.len);
        }
        if (getenv("TCP_LINK_TRACE") != nullptr) {
            fprintf(stderr, "%9.3f %d->%d %s\n", s.now / 1e6, e->from, 1 - e->from,
                    describe(h, pl.len).c_str());
        }
        if (s.uniform() < s.c.loss) {
            ++s.lost;
            return;
        }
        const int copies = s.uniform() < s.c.dup ? 2 : 1;
        s.duplicated += copies - 1;
        for (int i = 0; i < copies; ++i) {
            const uint64_t jitter = s.c.jitter_ns == 0 ? 0
                                                       : std::uniform_int_distribution<uint64_t>(
                                                             0, s.c.jitter_ns)(s.rng);
            s.wire.push_back(
                in_flight{s.now + s.c.delay_ns + jitter, s.order++, 1 - e->from, h, data});
        }
    }

    tcp_conn_config config() const {
        tcp_conn_config cfg;
        cfg.mss = 1460;
        cfg.rcv_buf = 64 * 1024;
        cfg.snd_buf = 64 * 1024;
        cfg.window_scaling = c.options;
        cfg.timestamps = c.options;
        cfg.sack = c.options;
        cfg.delayed_ack = true;
        cfg.time_wait_ns =
            60 * sec;  // 2*MSL: long enough to outlast the peer's FIN retransmissions
        cfg.cc.algorithm = c.cc;
        cfg.cc.initial_window_segments = 10;
        cfg.max_retransmits = 30;
        return cfg;
    }

    void deliver(in_flight &f) {
        ++delivered;
        tcp_conn &dst = *ep[f.to];
        if (f.to == 1 && dst.state() == tcp_state::closed &&
            dst.close_reason() == tcp_close_reason::none) {
            // The listener: a SYN opens the passive side.
            if (f.hdr.has(tcp_flag::syn) && !f.hdr.has(tcp_flag::ack)) {
                ASSERT_TRUE(dst.open_passive(f.hdr, now));
            }
            return;
        }
        rte_mbuf *m = nullptr;
        if (!f.data.empty()) {
            m = make_chain(f.data, 1500);
            ASSERT_NE(m, nullptr);
        }
        dst.input(f.hdr, m, 0, now);
    }

    void app(int i) {
        tcp_conn &c = *ep[i];
        const uint8_t ev = c.take_events();
        (void)ev;
        // Read and check.
        std::array<tcp_rx_piece, 32> pieces;
        for (;;) {
            const std::size_t n = c.recv(pieces, now);
            if (n == 0) {
                break;
            }
            for (std::size_t k = 0; k < n; ++k) {
                const bytes b = chain_bytes(pieces[k].m, pieces[k].off, pieces[k].len);
                ASSERT_EQ(b.size(), pieces[k].len);
                for (uint8_t v : b) {
                    ASSERT_EQ(v, stream_byte(1 - i, received[i])) << "offset " << received[i];
                    ++received[i];
                }
                rte_pktmbuf_free(pieces[k].m);
            }
        }
        ASSERT_LE(received[i], c_bytes());
        // Write.
        const tcp_state s = c.state();
        if (s != tcp_state::established && s != tcp_state::close_wait) {
            return;
        }
        while (sent[i] < c_bytes() && c.send_space() > 0) {
            const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(4000, c_bytes() - sent[i]));
            bytes chunk(n);
            for (uint32_t k = 0; k < n; ++k) {
                chunk[k] = stream_byte(i, sent[i] + k);
            }
            rte_mbuf *m = make_chain(chunk, 1400);
            ASSERT_NE(m, nullptr);
            const uint32_t took = c.send(m, now);
            if (took == 0) {
                rte_pktmbuf_free(m);
                break;
            }
            ASSERT_EQ(took, n);
            sent[i] += n;
        }
        // Close once everything is sent and everything expected has arrived.
        if (sent[i] == c_bytes() && received[i] == c_bytes()) {
            c.close(now);
        }
    }

    uint64_t c_bytes() const { return c.bytes; }
};

class TcpConnLink : public testing::TestWithParam<link_case> {};

void run_link(const link_case &param) {
    ASSERT_NE(g_pool, nullptr);
    const unsigned pool_before = rte_mempool_avail_count(g_pool);
    sim s;
    s.c = param;
    s.rng.seed(s.c.seed);
    tcp_tuple ta{ipv4_addr::from_octets(10, 0, 0, 1), ipv4_addr::from_octets(10, 0, 0, 2), 40000,
                 80};
    tcp_tuple tb{ta.remote_addr, ta.local_addr, 80, 40000};
    const tcp_conn_config cfg = s.config();
    s.ep[0] =
        std::make_unique<tcp_conn>(cfg, ta, seq_num(0xfffff000u), &sim::on_emit, &s.ctx[0], s.ctr);
    s.ep[1] =
        std::make_unique<tcp_conn>(cfg, tb, seq_num(0x7ffffff0u), &sim::on_emit, &s.ctx[1], s.ctr);
    ASSERT_TRUE(s.ep[0]->open_active(0));

    const uint64_t limit = 3600 * sec;
    uint64_t steps = 0;
    for (;;) {
        ASSERT_LT(++steps, 20'000'000u);
        for (int i = 0; i < 2; ++i) {
            s.app(i);
            if (testing::Test::HasFatalFailure()) {
                return;
            }
        }
        const bool done =
            s.ep[0]->state() == tcp_state::closed && s.ep[1]->state() == tcp_state::closed;
        if (done) {
            break;
        }
        // The next event: a delivery or a timer.
        uint64_t next = tcp_conn::never;
        std::size_t which = s.wire.size();
        for (std::size_t k = 0; k < s.wire.size(); ++k) {
            if (s.wire[k].at < next ||
                (s.wire[k].at == next && s.wire[k].order < s.wire[which].order)) {
                next = s.wire[k].at;
                which = k;
            }
        }
        const uint64_t d0 = s.ep[0]->next_deadline();
        const uint64_t d1 = s.ep[1]->next_deadline();
        const uint64_t t = std::min({next, d0, d1});
        ASSERT_NE(t, tcp_conn::never)
            << "stalled: sent " << s.sent[0] << "/" << s.sent[1] << " received " << s.received[0]
            << "/" << s.received[1] << " states " << name(s.ep[0]->state()) << "/"
            << name(s.ep[1]->state());
        ASSERT_LT(t, limit) << "received " << s.received[0] << "/" << s.received[1];
        s.now = std::max(s.now, t);
        if (which < s.wire.size() && next == t) {
            in_flight f = std::move(s.wire[which]);
            s.wire.erase(s.wire.begin() + static_cast<std::ptrdiff_t>(which));
            s.deliver(f);
            if (testing::Test::HasFatalFailure()) {
                return;
            }
        } else {
            if (d0 <= s.now) {
                s.ep[0]->on_timer(s.now);
            }
            if (d1 <= s.now) {
                s.ep[1]->on_timer(s.now);
            }
        }
    }
    if (getenv("TCP_LINK_STATS") != nullptr) {
        fprintf(stderr,
                "%s: %.3f s simulated, %lu delivered, %lu lost, %lu duplicated, %lu retransmits, "
                "%lu fast, %lu rto, %lu ooo\n",
                s.c.name, s.now / 1e9, s.delivered, s.lost, s.duplicated, s.ctr.retransmits.get(),
                s.ctr.fast_retransmits.get(), s.ctr.rto_fired.get(), s.ctr.ooo_segments.get());
    }
    EXPECT_EQ(s.received[0], s.c.bytes);
    EXPECT_EQ(s.received[1], s.c.bytes);
    EXPECT_EQ(s.ep[0]->close_reason(), tcp_close_reason::normal);
    EXPECT_EQ(s.ep[1]->close_reason(), tcp_close_reason::normal);
    if (s.c.loss >= 0.01 && s.c.bytes >= 1024 * 1024) {
        // The 1 MiB cases: the impairment was real and recovered from.
        EXPECT_GT(s.lost, 0u);
        EXPECT_GT(s.ctr.retransmits.get(), 0u);
    }
    // Every mbuf went back to the pool: nothing leaked in the queues.
    s.ep[0].reset();
    s.ep[1].reset();
    EXPECT_EQ(rte_mempool_avail_count(g_pool), pool_before);
}

TEST_P(TcpConnLink, EveryByteOnceInOrderBothWays) {
    run_link(GetParam());
}

constexpr uint32_t MiB = 1024 * 1024;

// Many seeds, smaller transfers, the impairments drawn at random.
TEST(TcpConnLinkSeeds, RandomImpairments) {
    // TCP_LINK_SEEDS=n runs n seeds instead of 60 (a longer soak by hand),
    // from TCP_LINK_FIRST (default 100).
    const char *env = getenv("TCP_LINK_SEEDS");
    const uint64_t seeds = env != nullptr ? std::strtoull(env, nullptr, 10) : 60;
    const char *first_env = getenv("TCP_LINK_FIRST");
    const uint64_t first = first_env != nullptr ? std::strtoull(first_env, nullptr, 10) : 100;
    for (uint64_t seed = first; seed < first + seeds; ++seed) {
        std::mt19937_64 r(seed * 7919);
        link_case c{"random",
                    seed,
                    std::uniform_real_distribution<double>(0, 0.12)(r),
                    std::uniform_real_distribution<double>(0, 0.08)(r),
                    std::uniform_int_distribution<uint64_t>(0, 20)(r) * ms,
                    std::uniform_int_distribution<uint64_t>(0, 15)(r) * ms,
                    (seed & 1) != 0,
                    seed % 3 == 0 ? cc_algorithm::bbr : (seed & 2) != 0 ? cc_algorithm::cubic : cc_algorithm::new_reno,
                    128 * 1024};
        SCOPED_TRACE("seed " + std::to_string(seed) + " loss " + std::to_string(c.loss) + " dup " +
                     std::to_string(c.dup) + " delay " + std::to_string(c.delay_ns) + " jitter " +
                     std::to_string(c.jitter_ns));
        run_link(c);
        if (HasFailure()) {
            return;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, TcpConnLink,
    testing::Values(link_case{"clean", 1, 0.0, 0.0, 5 * ms, 0, true, cc_algorithm::cubic, MiB},
                    link_case{"loss2", 2, 0.02, 0.0, 5 * ms, 0, true, cc_algorithm::cubic, MiB},
                    link_case{"loss2_dup_reorder", 3, 0.02, 0.02, 5 * ms, 3 * ms, true,
                              cc_algorithm::cubic, MiB},
                    link_case{"loss5_dup_reorder_reno_noopts", 4, 0.05, 0.02, 5 * ms, 3 * ms, false,
                              cc_algorithm::new_reno, MiB},
                    link_case{"heavy_reorder", 5, 0.01, 0.05, 2 * ms, 10 * ms, true,
                              cc_algorithm::new_reno, MiB}),
    [](const testing::TestParamInfo<link_case> &i) { return std::string(i.param.name); });

}  // namespace
}  // namespace ferry::net
