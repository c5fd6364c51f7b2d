#include "ferry/xcore/inbox.h"

#include <rte_ring.h>
#include <rte_ring_elem.h>

#include <cassert>

namespace ferry::xcore {

inbox::inbox(mesh &m, unsigned self, reactor::reactor_counters &c, handler h, void *ctx,
             unsigned burst)
    : self_(self),
      burst_(burst != 0 ? burst : 1),
      c_(c),
      handler_(h),
      ctx_(ctx),
      sources_(new source[m.workers()]),
      buf_(new message[burst_]) {
    assert(self < m.workers() && h != nullptr);
    for (unsigned from = 0; from < m.workers(); ++from)
        if (from != self)
            sources_[nsources_++] = {m.ring(from, self), from};
}

uint32_t inbox::poll(uint64_t now) noexcept {
    if (nsources_ == 0)
        return 0;
    uint32_t total = 0;
    unsigned s = next_;
    for (unsigned k = 0; k < nsources_; ++k) {
        const source &src = sources_[s];
        if (++s == nsources_)
            s = 0;
        // Reads the producer tail, then the messages (rte_smp_rmb between, a
        // compiler barrier on x86), then publishes our consumer tail: the
        // producer may reuse the slots only after that.
        const unsigned n =
            rte_ring_sc_dequeue_burst_elem(src.ring, buf_.get(), message_size, burst_, nullptr);
        if (n == 0)
            continue;
        c_.msgs_in.inc(n);
        total += n;
        handler_(ctx_, src.from, std::span<message>(buf_.get(), n), now);
    }
    next_ = next_ + 1 == nsources_ ? 0 : next_ + 1;
    return total;
}

bool inbox::pending() const noexcept {
    // Called by the reactor after F1 (sleeping = 1; seq_cst fence): these are
    // the loads L1 of doorbell.h. rte_ring_empty reads the producer tail (a
    // volatile load, so neither the compiler nor, after the fence, the CPU
    // hoists it above the flag store).
    for (unsigned k = 0; k < nsources_; ++k)
        if (!rte_ring_empty(sources_[k].ring))
            return true;
    return false;
}

reactor::poller inbox::as_poller() noexcept {
    reactor::poller p;
    p.poll = [](void *ctx, uint64_t now) { return static_cast<inbox *>(ctx)->poll(now); };
    p.pending = [](void *ctx) { return static_cast<const inbox *>(ctx)->pending(); };
    p.ctx = this;
    p.wake_fd = reactor::poller::no_wake_fd_needed;
    return p;
}

}  // namespace ferry::xcore
