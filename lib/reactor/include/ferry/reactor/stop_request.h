#pragma once
// A stop request that a signal handler makes (SIGTERM, SIGINT) and a sleeping
// loop sees at once.
//
// Setting a flag is not enough: the loop that takes the signal may be between
// its last look at the flag (the re-check of the sleep protocol) and
// epoll_wait. A handler that runs there sets the flag, returns, and the loop
// then sleeps until its nearest deadline, or for ever with none (a SIGTERM
// that ferry ignored until the test harness's SIGKILL). So request() also
// rings the doorbell of every loop that watches: the eventfd write lands in
// the epoll set whether the loop is already waiting or about to.
//
// request() is async-signal-safe: lock-free atomics and write(2), and it keeps
// errno. watch() is called before the signals are unblocked or the loops run.
#include <atomic>
#include <cstddef>

#include "ferry/reactor/doorbell.h"

namespace ferry::reactor {

class stop_request {
   public:
    static constexpr size_t max_watched = 256;

    // The loop behind `bell` is rung by every later request(). False when
    // max_watched loops already watch.
    bool watch(const doorbell *bell) noexcept;
    // Async-signal-safe: sets the flag, then rings every watched doorbell.
    void request() noexcept;
    [[nodiscard]] const std::atomic<bool> &flag() const noexcept { return flag_; }
    [[nodiscard]] bool requested() const noexcept {
        return flag_.load(std::memory_order_relaxed);
    }

   private:
    std::atomic<bool> flag_{false};
    std::atomic<size_t> n_{0};
    std::atomic<const doorbell *> bells_[max_watched] = {};
};

static_assert(std::atomic<bool>::is_always_lock_free &&
                  std::atomic<size_t>::is_always_lock_free &&
                  std::atomic<const doorbell *>::is_always_lock_free,
              "request() runs in a signal handler: its atomics must not take locks");

}  // namespace ferry::reactor
