#include "ferry/xcore/outbox.h"

#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include <cassert>
#include <cstring>

namespace ferry::xcore {

outbox::outbox(mesh &m, unsigned self, reactor::reactor_counters &c,
               reactor::doorbell *const *peer_bells, const reactor::settings &s,
               unsigned queue_size)
    : self_(self),
      workers_(m.workers()),
      queue_size_(queue_size != 0 ? queue_size : m.ring_size()),
      capacity_(m.ring_size()),
      c_(c),
      settings_(s),
      lanes_(new lane[m.workers()]),
      storage_(new message[static_cast<size_t>(m.workers()) * queue_size_]),
      dirty_(new uint16_t[m.workers()]),
      notify_(new uint16_t[m.workers()]) {
    assert(self < workers_);
    for (unsigned p = 0; p < workers_; ++p) {
        if (p == self)
            continue;
        lanes_[p].q = &storage_[static_cast<size_t>(p) * queue_size_];
        lanes_[p].ring = m.ring(self, p);
        lanes_[p].bell = peer_bells[p];
    }
}

outbox::~outbox() {
    for (unsigned p = 0; p < workers_; ++p)
        for (uint32_t i = 0; i < lanes_[p].count; ++i)
            release(lanes_[p].q[i]);
}

void outbox::flush(uint64_t) noexcept {
    if (ndirty_ == 0)
        return;
    const reactor::wakeup_mode mode = settings_.mode.load(std::memory_order_relaxed);

    // Pass 1: one enqueue burst per peer with queued messages. Peers whose
    // ring did not take everything stay listed (compacted in place).
    unsigned keep = 0, nnotify = 0;
    for (unsigned i = 0; i < ndirty_; ++i) {
        const unsigned p = dirty_[i];
        lane &l = lanes_[p];
        assert(l.count != 0 && l.ring != nullptr);
        // The ring copies the messages and then publishes its producer tail
        // (rte_smp_wmb, then the tail store): a consumer that sees the tail
        // sees the messages. This burst is S2 of doorbell.h.
        unsigned free_space = 0;
        const unsigned n =
            rte_ring_sp_enqueue_burst_elem(l.ring, l.q, message_size, l.count, &free_space);
        c_.enqueue_bursts.inc();
        // The high-water mark from what the burst already computed (free
        // entries as of its read of the consumer's tail, minus what it
        // added; valid when it added nothing too): no extra access to the
        // ring's shared lines, unlike an rte_ring_count() here.
        const uint64_t depth = capacity_ - free_space;
        if (depth > l.high_water.get())
            l.high_water.set(depth);
        if (n != 0) {
            c_.msgs_out.inc(n);
            notify_[nnotify++] = static_cast<uint16_t>(p);
        }
        if (n == l.count) {
            l.count = 0;
            l.listed = false;
        } else {
            // Backpressure: keep the rest, oldest first. Partial bursts happen
            // only while the peer falls behind, so the move is off the common
            // path, and it keeps every flush at exactly one burst per peer
            // (a circular queue would need two at the wrap).
            c_.ring_full.inc();
            l.ring_full.inc();
            l.count -= n;
            if (n != 0)
                std::memmove(l.q, l.q + n, l.count * sizeof(message));
            dirty_[keep++] = static_cast<uint16_t>(p);
        }
    }
    ndirty_ = keep;

    // Pass 2: the doorbell check per peer that received something, after all
    // bursts, so every ring's tail store precedes the first fence. notify()
    // holds F2 (seq_cst fence between our tail stores and the load of the
    // peer's sleeping flag) and the exchange that elects one ringer per sleep;
    // the Dekker argument is in doorbell.h. Only the first fence of a flush
    // drains the store buffer; the others find it (nearly) empty.
    for (unsigned i = 0; i < nnotify; ++i) {
        reactor::doorbell *bell = lanes_[notify_[i]].bell;
        assert(bell != nullptr);
        switch (reactor::notify(*bell, mode)) {
            case reactor::ring_result::rung:
                c_.doorbells_rung.inc();
                break;
            case reactor::ring_result::suppressed:
                c_.doorbells_suppressed.inc();
                break;
            case reactor::ring_result::failed:
                c_.doorbell_errors.inc();
                break;
        }
    }
}

reactor::flusher outbox::as_flusher() noexcept {
    reactor::flusher f;
    f.flush = [](void *ctx, uint64_t now) { static_cast<outbox *>(ctx)->flush(now); };
    f.ctx = this;
    return f;
}

unsigned outbox::broadcast(message m, rte_mempool *pool,
                           std::span<const uint8_t> payload) noexcept {
    unsigned missed = 0;
    for (unsigned peer = 0; peer < workers_; ++peer) {
        if (peer == self_)
            continue;
        if (room(peer) == 0) {
            ++missed;
            continue;
        }
        m.mbuf = nullptr;
        if (!payload.empty()) {
            m.mbuf = pool != nullptr ? rte_pktmbuf_alloc(pool) : nullptr;
            char *d = m.mbuf != nullptr
                          ? rte_pktmbuf_append(m.mbuf, static_cast<uint16_t>(payload.size()))
                          : nullptr;
            if (d == nullptr) {
                if (m.mbuf != nullptr)
                    rte_pktmbuf_free(m.mbuf);
                ++missed;
                continue;
            }
            std::memcpy(d, payload.data(), payload.size());
        }
        const bool sent = send(peer, m);  // room() said yes
        assert(sent);
        (void)sent;
    }
    return missed;
}

}  // namespace ferry::xcore
