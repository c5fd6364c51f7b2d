// The consumer side of a worker's cross-core rings: a reactor poller over
// ring(from, self) for every other worker (DESIGN.md, "The reactor
// iteration", drain step).
//
// poll() takes at most `burst` messages from each peer's ring per call,
// starting at a different peer each time (round robin), so one busy peer can
// neither starve the others nor hold the lcore away from its rx queues for
// long. pending() is the pre-sleep re-check of the doorbell protocol: it looks
// at every inbound ring after the reactor's seq_cst fence and consumes
// nothing. The poller has no wake fd: producers wake a sleeping owner through
// its doorbell (reactor::notify after their enqueue).
//
// Single-threaded: every member is called on the owning worker's lcore only.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "ferry/reactor/reactor.h"
#include "ferry/xcore/mesh.h"
#include "ferry/xcore/message.h"

namespace ferry::xcore {

class inbox {
public:
    // Receives one batch from one peer, oldest first. The handler owns the
    // messages' mbuf chains; the span is valid only during the call (it points
    // into the inbox's burst buffer). `now` is the poll's time.
    using handler = void (*)(void *ctx, unsigned from, std::span<message> msgs, uint64_t now);

    // Counts msgs_in in `c`. `burst` >= 1 (0 is taken as 1). Allocates the
    // burst buffer and the peer table here, never afterwards.
    inbox(mesh &m, unsigned self, reactor::reactor_counters &c, handler h, void *ctx,
          unsigned burst = 32);
    inbox(const inbox &) = delete;
    inbox &operator=(const inbox &) = delete;

    // Dequeues up to `burst` messages from each peer's ring, one batch per
    // peer, and hands each non-empty batch to the handler. Returns the number
    // of messages handled (0: all rings were empty).
    uint32_t poll(uint64_t now) noexcept;

    // True if any inbound ring holds a message. Consumes nothing.
    [[nodiscard]] bool pending() const noexcept;

    // Registration with the owning lcore's reactor; wake_fd is
    // poller::no_wake_fd_needed (the doorbell wakes it).
    [[nodiscard]] reactor::poller as_poller() noexcept;

    [[nodiscard]] unsigned self() const noexcept { return self_; }
    [[nodiscard]] unsigned burst() const noexcept { return burst_; }

private:
    struct source {
        rte_ring *ring;
        unsigned from;
    };

    const unsigned self_;
    const unsigned burst_;
    unsigned nsources_ = 0;
    unsigned next_ = 0;  // first source of the next poll
    reactor::reactor_counters &c_;
    handler handler_;
    void *ctx_;
    std::unique_ptr<source[]> sources_;
    std::unique_ptr<message[]> buf_;
};

}  // namespace ferry::xcore
