// Deterministic tests of lib/xcore, driven by hand from one thread: the mesh's
// construction contract, outbox batching (one burst and one doorbell check per
// peer per flush) and backpressure (nothing dropped, order kept), the doorbell
// decision per wakeup mode, the inbox's bounded round-robin batches and its
// non-consuming pending(), the stale-handle check, and mbuf ownership at
// shutdown. The multi-threaded protocol is in stress_test.cpp.
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "env.h"
#include "ferry/reactor/reactor.h"
#include "ferry/xcore/handle.h"
#include "ferry/xcore/inbox.h"
#include "ferry/xcore/mesh.h"
#include "ferry/xcore/message.h"
#include "ferry/xcore/outbox.h"

namespace ferry::xcore {
namespace {

using reactor::doorbell;
using reactor::reactor_counters;
using reactor::settings;
using reactor::wakeup_mode;

std::unique_ptr<mesh> make_mesh(unsigned workers, unsigned ring_size, const char *name) {
    auto m = mesh::create(workers, ring_size, SOCKET_ID_ANY, name);
    EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error());
    return m.ok() ? std::move(m.value()) : nullptr;
}

message msg(uint32_t seq, uint16_t opcode = 1) {
    message m;
    m.handle = conn_handle{0, 1, seq}.pack();
    m.opcode = opcode;
    m.arg = seq;
    return m;
}

// A doorbell with a real eventfd, so ring() works and can be observed.
struct test_bell {
    doorbell bell;
    test_bell() { bell.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }
    ~test_bell() {
        if (bell.fd >= 0)
            close(bell.fd);
    }
    // The eventfd's counter (reads reset it): how many times it was rung.
    uint64_t rings() {
        uint64_t v = 0;
        return read(bell.fd, &v, sizeof v) == sizeof v ? v : 0;
    }
};

// Collects what an inbox delivers.
struct sink {
    std::vector<std::pair<unsigned, uint32_t>> got;  // (from, arg)
    std::vector<unsigned> batch_sizes;
    static void on(void *ctx, unsigned from, std::span<message> msgs, uint64_t) {
        auto *s = static_cast<sink *>(ctx);
        s->batch_sizes.push_back(static_cast<unsigned>(msgs.size()));
        for (message &m : msgs) {
            s->got.emplace_back(from, m.arg);
            release(m);
        }
    }
};

TEST(Mesh, CreatesOneRingPerOrderedPair) {
    auto m = make_mesh(3, 100, "t_pairs");
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->workers(), 3u);
    EXPECT_EQ(m->ring_size(), 100u);
    std::vector<rte_ring *> seen;
    for (unsigned f = 0; f < 3; ++f) {
        for (unsigned t = 0; t < 3; ++t) {
            if (f == t) {
                EXPECT_EQ(m->ring(f, t), nullptr);
                continue;
            }
            rte_ring *r = m->ring(f, t);
            ASSERT_NE(r, nullptr);
            // Exact capacity (not 127 or 63), single producer and consumer.
            EXPECT_EQ(rte_ring_get_capacity(r), 100u);
            EXPECT_EQ(rte_ring_get_prod_sync_type(r), RTE_RING_SYNC_ST);
            EXPECT_EQ(rte_ring_get_cons_sync_type(r), RTE_RING_SYNC_ST);
            for (rte_ring *o : seen)
                EXPECT_NE(o, r);
            seen.push_back(r);
        }
    }
    EXPECT_EQ(seen.size(), 6u);
    EXPECT_EQ(m->ring(3, 0), nullptr);
    EXPECT_EQ(m->ring(0, 3), nullptr);
}

TEST(Mesh, RejectsBadArguments) {
    struct bad {
        unsigned workers, ring_size;
        const char *name;
        const char *expect_in_error;
    };
    for (const bad &b :
         {bad{0, 64, "t_bad", "workers"}, bad{mesh::max_workers + 1, 64, "t_bad", "workers"},
          bad{2, 0, "t_bad", "ring_size"},
          bad{2, 64, "a_name_that_is_far_too_long_x", "longer than"}}) {
        auto m = mesh::create(b.workers, b.ring_size, SOCKET_ID_ANY, b.name);
        ASSERT_FALSE(m.ok()) << b.workers << " " << b.ring_size << " " << b.name;
        EXPECT_NE(m.error().find(b.expect_in_error), std::string::npos) << m.error();
    }
    // A duplicate name is an rte_ring error, reported with rte_errno's text,
    // and the rings created before the failure are freed (the name is reusable).
    auto a = make_mesh(2, 8, "t_dup");
    ASSERT_NE(a, nullptr);
    auto b = mesh::create(2, 8, SOCKET_ID_ANY, "t_dup");
    ASSERT_FALSE(b.ok());
    EXPECT_NE(b.error().find("rte_ring_create_elem"), std::string::npos) << b.error();
    a.reset();
    EXPECT_NE(make_mesh(2, 8, "t_dup"), nullptr);
}

// The backpressure contract: send() fills the local queue and then says no;
// flush() moves what the ring takes in one burst and keeps the rest queued in
// order (ring_full); nothing is dropped or reordered when the consumer drains.
TEST(Outbox, BackpressureKeepsEverythingInOrder) {
    auto m = make_mesh(2, 8, "t_bp");
    ASSERT_NE(m, nullptr);
    settings s;
    test_bell bell1;
    doorbell *bells[2] = {nullptr, &bell1.bell};
    reactor_counters pc, cc;
    outbox out(*m, 0, pc, bells, s, 16);
    sink got;
    inbox in(*m, 1, cc, &sink::on, &got, 32);

    EXPECT_EQ(out.room(1), 16u);
    uint32_t next = 0;
    while (out.send(1, msg(next)))
        ++next;
    EXPECT_EQ(next, 16u) << "the local queue holds exactly queue_size";
    EXPECT_EQ(out.room(1), 0u);
    EXPECT_EQ(out.queued(1), 16u);
    EXPECT_EQ(pc.msgs_out.get(), 0u) << "send() must not touch the ring";
    EXPECT_EQ(rte_ring_count(m->ring(0, 1)), 0u);

    out.flush(0);
    EXPECT_EQ(rte_ring_count(m->ring(0, 1)), 8u);
    EXPECT_EQ(pc.enqueue_bursts.get(), 1u);
    EXPECT_EQ(pc.msgs_out.get(), 8u);
    EXPECT_EQ(pc.ring_full.get(), 1u);
    EXPECT_EQ(pc.doorbells_suppressed.get(), 1u) << "the peer was awake";
    EXPECT_EQ(pc.doorbells_rung.get(), 0u);
    EXPECT_EQ(out.queued(1), 8u);
    EXPECT_EQ(out.room(1), 8u);

    // Refill; the ring is full, so this flush enqueues nothing and, since the
    // peer already has work it was told about, checks no doorbell.
    while (out.send(1, msg(next)))
        ++next;
    EXPECT_EQ(next, 24u);
    out.flush(0);
    EXPECT_EQ(pc.enqueue_bursts.get(), 2u);
    EXPECT_EQ(pc.msgs_out.get(), 8u);
    EXPECT_EQ(pc.ring_full.get(), 2u);
    EXPECT_EQ(pc.doorbells_suppressed.get() + pc.doorbells_rung.get(), 1u);

    // The consumer drains; flushes move the rest.
    for (int round = 0; round < 10 && got.got.size() < next; ++round) {
        (void)in.poll(0);
        out.flush(0);
    }
    ASSERT_EQ(got.got.size(), 24u);
    for (uint32_t i = 0; i < 24; ++i) {
        EXPECT_EQ(got.got[i].first, 0u);
        EXPECT_EQ(got.got[i].second, i) << "order must survive partial bursts";
    }
    EXPECT_EQ(pc.msgs_out.get(), 24u);
    EXPECT_EQ(cc.msgs_in.get(), 24u);
    EXPECT_EQ(out.queued(1), 0u);
    EXPECT_EQ(out.room(1), 16u);
    EXPECT_EQ(pc.doorbell_errors.get(), 0u);
    EXPECT_EQ(bell1.rings(), 0u);
}

// lane_stats: the high-water mark is the ring's depth right after a burst
// (never above the capacity, never lowered by draining) and ring_full counts
// this peer's partial bursts only; other peers and invalid indices read 0.
TEST(Outbox, LaneStatsTrackHighWaterAndRingFull) {
    auto m = make_mesh(3, 8, "t_stats");
    ASSERT_NE(m, nullptr);
    settings s;
    test_bell b1, b2;
    doorbell *bells[3] = {nullptr, &b1.bell, &b2.bell};
    reactor_counters pc;
    outbox out(*m, 0, pc, bells, s, 16);
    auto hw = [&](unsigned p) { return out.stats(p).high_water; };
    auto full = [&](unsigned p) { return out.stats(p).ring_full; };
    EXPECT_EQ(hw(1), 0u);
    EXPECT_EQ(full(1), 0u);
    EXPECT_EQ(hw(0), 0u) << "self has no lane";
    EXPECT_EQ(hw(3), 0u) << "out of range reads zero";

    uint32_t seq = 0;
    for (int i = 0; i < 5; ++i)
        ASSERT_TRUE(out.send(1, msg(seq++)));
    out.flush(0);
    EXPECT_EQ(hw(1), 5u);
    EXPECT_EQ(full(1), 0u);
    EXPECT_EQ(hw(2), 0u) << "an idle peer's lane is untouched";

    // The consumer takes 3 (depth 2); 2 more make it 4: the mark stays at 5.
    message drop[8];
    ASSERT_EQ(rte_ring_sc_dequeue_burst_elem(m->ring(0, 1), drop, message_size, 3, nullptr), 3u);
    ASSERT_TRUE(out.send(1, msg(seq++)));
    ASSERT_TRUE(out.send(1, msg(seq++)));
    out.flush(0);
    EXPECT_EQ(rte_ring_count(m->ring(0, 1)), 4u);
    EXPECT_EQ(hw(1), 5u) << "a lower depth never lowers the mark";

    // 16 queued, room for 4: the ring fills (mark = capacity) and the burst is partial.
    while (out.send(1, msg(seq++))) {
    }
    out.flush(0);
    EXPECT_EQ(hw(1), 8u);
    EXPECT_EQ(full(1), 1u);
    // A burst the full ring refuses entirely still counts, and the mark stays at capacity.
    out.flush(0);
    EXPECT_EQ(hw(1), 8u);
    EXPECT_EQ(full(1), 2u);
    EXPECT_EQ(pc.ring_full.get(), 2u) << "the lcore counter is the sum over lanes";

    ASSERT_TRUE(out.send(2, msg(seq++)));
    out.flush(0);
    EXPECT_EQ(hw(2), 1u);
    EXPECT_EQ(full(2), 0u);
    EXPECT_EQ(full(1), 3u) << "peer 1's leftovers were retried in the same flush";
    EXPECT_EQ(pc.ring_full.get(), 3u);
}

TEST(Outbox, OneBurstPerPeerPerFlush) {
    auto m = make_mesh(4, 64, "t_burst");
    ASSERT_NE(m, nullptr);
    settings s;
    test_bell b1, b2, b3;
    doorbell *bells[4] = {nullptr, &b1.bell, &b2.bell, &b3.bell};
    reactor_counters pc;
    outbox out(*m, 0, pc, bells, s);
    EXPECT_EQ(out.queue_size(), 64u) << "0 means the ring size";
    out.flush(0);
    EXPECT_EQ(pc.enqueue_bursts.get(), 0u) << "nothing queued, nothing to do";

    for (uint32_t i = 0; i < 10; ++i)
        ASSERT_TRUE(out.send(1 + i % 2, msg(i)));
    out.flush(0);
    EXPECT_EQ(pc.enqueue_bursts.get(), 2u) << "peer 3 had nothing queued";
    EXPECT_EQ(pc.msgs_out.get(), 10u);
    EXPECT_EQ(pc.doorbells_suppressed.get(), 2u);
    EXPECT_EQ(rte_ring_count(m->ring(0, 1)), 5u);
    EXPECT_EQ(rte_ring_count(m->ring(0, 2)), 5u);
    EXPECT_EQ(rte_ring_count(m->ring(0, 3)), 0u);
    out.flush(0);
    EXPECT_EQ(pc.enqueue_bursts.get(), 2u);
}

// conditional: ring only a peer whose sleeping flag is set, and take the flag
// (exchange) so the next flush, or another producer, does not ring again.
TEST(Outbox, ConditionalRingsOnlyASleepingPeerOncePerSleep) {
    auto m = make_mesh(3, 64, "t_cond");
    ASSERT_NE(m, nullptr);
    settings s;
    s.mode = wakeup_mode::conditional;
    test_bell consumer;
    doorbell *bells[3] = {nullptr, nullptr, &consumer.bell};
    reactor_counters p0, p1;
    outbox out0(*m, 0, p0, bells, s), out1(*m, 1, p1, bells, s);

    consumer.bell.sleeping.store(1);
    ASSERT_TRUE(out0.send(2, msg(0)));
    ASSERT_TRUE(out1.send(2, msg(0)));
    out0.flush(0);
    out1.flush(0);
    EXPECT_EQ(p0.doorbells_rung.get(), 1u);
    EXPECT_EQ(p1.doorbells_rung.get(), 0u) << "the other producer already woke it";
    EXPECT_EQ(p1.doorbells_suppressed.get(), 1u);
    EXPECT_EQ(consumer.bell.sleeping.load(), 0u);
    EXPECT_EQ(consumer.rings(), 1u);

    ASSERT_TRUE(out0.send(2, msg(1)));
    out0.flush(0);
    EXPECT_EQ(p0.doorbells_rung.get(), 1u);
    EXPECT_EQ(p0.doorbells_suppressed.get(), 1u);
    EXPECT_EQ(consumer.rings(), 0u);
}

TEST(Outbox, AlwaysRingsEveryFlushThatEnqueuedPollNever) {
    auto m = make_mesh(2, 4, "t_always");
    ASSERT_NE(m, nullptr);
    settings s;
    s.mode = wakeup_mode::always;
    test_bell consumer;
    doorbell *bells[2] = {nullptr, &consumer.bell};
    reactor_counters pc;
    outbox out(*m, 0, pc, bells, s);
    for (uint32_t i = 0; i < 3; ++i) {
        ASSERT_TRUE(out.send(1, msg(i)));
        out.flush(0);
    }
    EXPECT_EQ(pc.doorbells_rung.get(), 3u) << "awake peer, rung anyway: the baseline";
    EXPECT_EQ(consumer.rings(), 3u);
    // Ring now holds 3 of 4; two more: one goes in (ring), one stays; then a
    // flush that enqueues nothing must not ring.
    ASSERT_TRUE(out.send(1, msg(3)));
    ASSERT_TRUE(out.send(1, msg(4)));
    out.flush(0);
    EXPECT_EQ(pc.doorbells_rung.get(), 4u);
    out.flush(0);
    EXPECT_EQ(pc.doorbells_rung.get(), 4u);
    EXPECT_EQ(pc.ring_full.get(), 2u);

    // A runtime switch to poll takes effect at the next flush: never ring.
    s.mode = wakeup_mode::poll;
    consumer.bell.sleeping.store(1);
    message drop[4];
    ASSERT_EQ(rte_ring_sc_dequeue_burst_elem(m->ring(0, 1), drop, message_size, 4, nullptr), 4u);
    out.flush(0);
    EXPECT_EQ(pc.doorbells_rung.get(), 4u);
    EXPECT_EQ(consumer.rings(), 1u);
    EXPECT_EQ(consumer.bell.sleeping.load(), 1u) << "poll mode leaves the flag alone";
}

TEST(Outbox, FailedDoorbellIsCounted) {
    auto m = make_mesh(2, 4, "t_fail");
    ASSERT_NE(m, nullptr);
    settings s;
    s.mode = wakeup_mode::always;
    doorbell broken;  // fd -1: write() fails with EBADF
    doorbell *bells[2] = {nullptr, &broken};
    reactor_counters pc;
    outbox out(*m, 0, pc, bells, s);
    ASSERT_TRUE(out.send(1, msg(0)));
    out.flush(0);
    EXPECT_EQ(pc.doorbell_errors.get(), 1u);
    EXPECT_EQ(pc.doorbells_rung.get(), 0u);
}

// pending() is the pre-sleep re-check: it must see a message in any inbound
// ring and must not consume it.
TEST(Inbox, PendingDoesNotConsume) {
    auto m = make_mesh(3, 16, "t_pend");
    ASSERT_NE(m, nullptr);
    settings s;
    doorbell *bells[3] = {nullptr, nullptr, nullptr};
    test_bell b2;
    bells[2] = &b2.bell;
    reactor_counters pc, cc;
    outbox out(*m, 1, pc, bells, s);
    sink got;
    inbox in(*m, 2, cc, &sink::on, &got);

    EXPECT_FALSE(in.pending());
    ASSERT_TRUE(out.send(2, msg(7)));
    EXPECT_FALSE(in.pending()) << "queued locally, not yet in the ring";
    out.flush(0);
    for (int i = 0; i < 3; ++i)
        EXPECT_TRUE(in.pending());
    EXPECT_EQ(rte_ring_count(m->ring(1, 2)), 1u);
    EXPECT_EQ(cc.msgs_in.get(), 0u);
    EXPECT_EQ(in.poll(0), 1u);
    EXPECT_FALSE(in.pending());
    ASSERT_EQ(got.got.size(), 1u);
    EXPECT_EQ(got.got[0], std::make_pair(1u, 7u));
    EXPECT_EQ(in.poll(0), 0u);
}

// Bounded batches, one per peer per poll, and a rotating first peer.
TEST(Inbox, BoundedRoundRobinBatches) {
    auto m = make_mesh(3, 64, "t_rr");
    ASSERT_NE(m, nullptr);
    settings s;
    test_bell b2;
    doorbell *bells[3] = {nullptr, nullptr, &b2.bell};
    reactor_counters p0, p1, cc;
    outbox out0(*m, 0, p0, bells, s), out1(*m, 1, p1, bells, s);
    sink got;
    inbox in(*m, 2, cc, &sink::on, &got, 4);
    for (uint32_t i = 0; i < 10; ++i) {
        ASSERT_TRUE(out0.send(2, msg(i)));
        ASSERT_TRUE(out1.send(2, msg(100 + i)));
    }
    out0.flush(0);
    out1.flush(0);

    EXPECT_EQ(in.poll(0), 8u) << "at most burst (4) per peer";
    ASSERT_EQ(got.batch_sizes, (std::vector<unsigned>{4, 4}));
    EXPECT_EQ(got.got[0].first, 0u) << "first poll starts at the first peer";
    EXPECT_EQ(got.got[4].first, 1u);
    EXPECT_EQ(in.poll(0), 8u);
    EXPECT_EQ(got.got[8].first, 1u) << "the next poll starts at the next peer";
    EXPECT_EQ(in.poll(0), 4u);
    EXPECT_EQ(in.poll(0), 0u);
    ASSERT_EQ(got.got.size(), 20u);
    uint32_t next0 = 0, next1 = 100;
    for (auto [from, arg] : got.got)
        EXPECT_EQ(arg, from == 0 ? next0++ : next1++);
    EXPECT_EQ(cc.msgs_in.get(), 20u);
}

// The reactor glue: as_poller() / as_flusher() through run_once.
TEST(Inbox, RunsInsideReactors) {
    auto m = make_mesh(2, 64, "t_glue");
    ASSERT_NE(m, nullptr);
    settings s;
    reactor_counters pc, cc;
    reactor::reactor prod(s, pc, 0), cons(s, cc, 0);
    ASSERT_TRUE(prod.ok() && cons.ok());
    doorbell *bells[2] = {&prod.bell(), &cons.bell()};
    outbox out(*m, 0, pc, bells, s);
    sink got;
    inbox in(*m, 1, cc, &sink::on, &got);
    const reactor::poller p = in.as_poller();
    EXPECT_EQ(p.wake_fd, reactor::poller::no_wake_fd_needed);
    ASSERT_TRUE(cons.add_poller(p));
    EXPECT_TRUE(cons.can_sleep()) << "an inbox must not keep its lcore from sleeping";
    ASSERT_TRUE(prod.add_flusher(out.as_flusher()));

    ASSERT_TRUE(out.send(1, msg(5)));
    EXPECT_EQ(prod.run_once(1), 0u);
    EXPECT_EQ(pc.msgs_out.get(), 1u);
    EXPECT_EQ(cons.run_once(2), 1u);
    ASSERT_EQ(got.got.size(), 1u);
    EXPECT_EQ(got.got[0].second, 5u);
}

// The receiver's handle check: deliver only to the slot generation the sender
// saw; a reused slot (stale), another lcore's handle and a corrupt index are
// all caught, and release() frees the chain such a message carries.
TEST(Handle, StaleHandleIsDetectedAndReleased) {
    const uint32_t gens[4] = {0, 5, 65535, 2};
    const std::span<const uint32_t> g(gens);
    EXPECT_EQ(check_handle(conn_handle{3, 5, 1}.pack(), 3, g), handle_status::current);
    EXPECT_EQ(check_handle(conn_handle{3, 4, 1}.pack(), 3, g), handle_status::stale);
    EXPECT_EQ(check_handle(conn_handle{3, 65535, 2}.pack(), 3, g), handle_status::current);
    EXPECT_EQ(check_handle(conn_handle{3, 0, 2}.pack(), 3, g), handle_status::stale)
        << "generation wrapped once: stale";
    EXPECT_EQ(check_handle(conn_handle{2, 5, 1}.pack(), 3, g), handle_status::foreign);
    EXPECT_EQ(check_handle(conn_handle{}.pack(), 3, g), handle_status::foreign);
    EXPECT_EQ(check_handle(conn_handle{3, 0, 4}.pack(), 3, g), handle_status::out_of_range);
    EXPECT_STREQ(name(handle_status::stale), "stale");
    static_assert(check_handle(conn_handle{1, 2, 0}.pack(), 1, std::span<const uint32_t>()) ==
                  handle_status::out_of_range);

    ASSERT_NE(test::g_pool, nullptr);
    const unsigned before = rte_mempool_avail_count(test::g_pool);
    rte_mbuf *head = rte_pktmbuf_alloc(test::g_pool);
    rte_mbuf *tail = rte_pktmbuf_alloc(test::g_pool);
    ASSERT_NE(head, nullptr);
    ASSERT_NE(tail, nullptr);
    ASSERT_EQ(rte_pktmbuf_chain(head, tail), 0);
    message m = msg(0);
    m.mbuf = head;
    m.handle = conn_handle{3, 4, 1}.pack();
    if (check_handle(m.handle, 3, g) != handle_status::current)
        release(m);
    EXPECT_EQ(m.mbuf, nullptr);
    EXPECT_EQ(rte_mempool_avail_count(test::g_pool), before) << "the whole chain is freed";
    release(m);  // null: no-op
}

// Bug 5 (issue 13): with 16-bit generations a slot reused 65,536 times while
// a message was in flight made the message's stale handle look current.
TEST(Handle, GenerationsDoNotWrapWithinThirtyTwoBits) {
    for (uint32_t reuses : {1u << 16, 1u << 17, 3u << 16, 1u << 24}) {
        const uint32_t gens[2] = {0, 5 + reuses};
        EXPECT_EQ(check_handle(conn_handle{7, 5, 1}.pack(), 7, gens), handle_status::stale)
            << "a slot reused " << reuses << " times";
    }
    // Every field survives the round trip at its limits.
    const conn_handle big{conn_handle::max_lcores - 1, 0xfffffffeu, conn_handle::index_limit - 1};
    EXPECT_EQ(conn_handle::unpack(big.pack()), big);
    EXPECT_TRUE(big.valid());
    EXPECT_FALSE(conn_handle{}.valid());
}

// Ownership at shutdown: mbufs in a local queue or in a ring are freed by the
// outbox's and the mesh's destructors, not leaked.
// broadcast(): a copy for every peer, each with its own mbuf holding the
// payload; a peer whose local queue is full, or for whom the pool has no mbuf
// left, is skipped and counted in the return value, and nothing is left
// allocated for it. Without a payload no mbuf is taken, pool dry or not.
TEST(Outbox, BroadcastReachesEveryPeerItCanAndCountsTheOthers) {
    ASSERT_NE(test::g_pool, nullptr);
    const unsigned before = rte_mempool_avail_count(test::g_pool);
    {
        auto m = make_mesh(3, 8, "t_bcast");
        ASSERT_NE(m, nullptr);
        settings s;
        test_bell b1, b2;
        doorbell *bells[3] = {&b1.bell, nullptr, &b2.bell};
        reactor_counters pc;
        outbox out(*m, 1, pc, bells, s, 2);  // worker 1 sends to 0 and 2
        const uint8_t addr[16] = {0xfd, 0, 0, 0x77, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x09};

        EXPECT_EQ(out.broadcast(msg(1, 7), test::g_pool, addr), 0u);
        EXPECT_EQ(out.queued(0), 1u);
        EXPECT_EQ(out.queued(1), 0u) << "never to itself";
        EXPECT_EQ(out.queued(2), 1u);
        EXPECT_EQ(rte_mempool_avail_count(test::g_pool), before - 2) << "one mbuf per peer";

        // Peer 2's queue full (2 of 2): skipped, counted, nothing allocated for it.
        ASSERT_TRUE(out.send(2, msg(2)));
        EXPECT_EQ(out.broadcast(msg(3, 7), test::g_pool, addr), 1u);
        EXPECT_EQ(out.queued(0), 2u);
        EXPECT_EQ(out.queued(2), 2u);
        EXPECT_EQ(rte_mempool_avail_count(test::g_pool), before - 3);

        // The pool dry, the queues flushed (room for both): only the pool fails.
        out.flush(0);
        EXPECT_EQ(out.queued(0), 0u);
        std::vector<rte_mbuf *> hoard;
        while (rte_mbuf *x = rte_pktmbuf_alloc(test::g_pool))
            hoard.push_back(x);
        EXPECT_EQ(out.broadcast(msg(4, 7), test::g_pool, addr), 2u);
        EXPECT_EQ(out.queued(0), 0u);
        EXPECT_EQ(out.queued(2), 0u);
        // Without a payload the dry pool does not matter.
        EXPECT_EQ(out.broadcast(msg(5, 8), test::g_pool, {}), 0u);
        EXPECT_EQ(out.queued(0), 1u);
        EXPECT_EQ(out.queued(2), 1u);
        for (rte_mbuf *x : hoard)
            rte_pktmbuf_free(x);
        out.flush(0);

        // What peer 0 received, in order: the address in each copy's mbuf.
        std::vector<message> got;
        message buf[8];
        const unsigned n = rte_ring_dequeue_burst_elem(m->ring(1, 0), buf, message_size, 8,
                                                       nullptr);
        ASSERT_EQ(n, 3u);
        const uint32_t want_arg[3] = {1, 3, 5};
        for (unsigned i = 0; i < n; ++i) {
            EXPECT_EQ(buf[i].arg, want_arg[i]);
            if (buf[i].arg == 5) {
                EXPECT_EQ(buf[i].mbuf, nullptr);
                continue;
            }
            ASSERT_NE(buf[i].mbuf, nullptr);
            ASSERT_EQ(rte_pktmbuf_pkt_len(buf[i].mbuf), 16u);
            EXPECT_EQ(std::memcmp(rte_pktmbuf_mtod(buf[i].mbuf, const uint8_t *), addr, 16), 0);
            rte_pktmbuf_free(buf[i].mbuf);
        }
    }  // ~outbox, then ~mesh: what peer 2's ring holds is released
    EXPECT_EQ(rte_mempool_avail_count(test::g_pool), before) << "no mbuf leaked";
}

TEST(Ownership, ShutdownReleasesQueuedAndInFlightMbufs) {
    ASSERT_NE(test::g_pool, nullptr);
    const unsigned before = rte_mempool_avail_count(test::g_pool);
    {
        auto m = make_mesh(2, 4, "t_own");
        ASSERT_NE(m, nullptr);
        settings s;
        test_bell b1;
        doorbell *bells[2] = {nullptr, &b1.bell};
        reactor_counters pc;
        outbox out(*m, 0, pc, bells, s, 8);
        for (uint32_t i = 0; i < 8; ++i) {
            message x = msg(i);
            x.mbuf = rte_pktmbuf_alloc(test::g_pool);
            ASSERT_NE(x.mbuf, nullptr);
            ASSERT_TRUE(out.send(1, x));
        }
        out.flush(0);
        EXPECT_EQ(rte_ring_count(m->ring(0, 1)), 4u);
        EXPECT_EQ(out.queued(1), 4u);
        EXPECT_EQ(rte_mempool_avail_count(test::g_pool), before - 8);
    }  // ~outbox, then ~mesh
    EXPECT_EQ(rte_mempool_avail_count(test::g_pool), before);
}

}  // namespace
}  // namespace ferry::xcore
