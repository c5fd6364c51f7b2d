// The writer threads' common part (the access log's and the event log's): one
// DPDK control thread, never a worker lcore, that calls tick(last) every
// tick_ms and whenever stop() wakes it, until stop(). The stop and reopen
// signals stay with the main thread (blocked in this one).
//
// last: the tick after stop() was seen. stop() is called once the producers are
// done (the workers stopped), so that tick drains everything they wrote.
#pragma once

#include <pthread.h>

#include <atomic>
#include <string>

namespace ferry::app {

class drain_thread {
public:
    using tick_fn = void (*)(void *ctx, bool last) noexcept;

    drain_thread() = default;
    ~drain_thread();  // stop(), and the eventfd closed
    drain_thread(const drain_thread &) = delete;
    drain_thread &operator=(const drain_thread &) = delete;

    // Makes the eventfd stop() wakes the thread with: "" or the errno text.
    std::string init();
    // Starts the thread `name` (15 characters at most). "" or the errno text.
    std::string start(const char *name, int tick_ms, tick_fn tick, void *ctx);
    // Wakes the thread, which ticks once more (last) and exits; joins it.
    // Idempotent.
    void stop() noexcept;
    // Wakes the thread for one tick now (not the last). Async-signal-safe
    // (a write(2)); nothing happens before start().
    void wake() noexcept;
    [[nodiscard]] bool running() const noexcept { return running_; }

private:
    static void *thread_main(void *self) noexcept;

    int wake_fd_ = -1;
    int tick_ms_ = 100;
    tick_fn tick_ = nullptr;
    void *ctx_ = nullptr;
    pthread_t thread_{};
    bool running_ = false;  // thread_ is joinable (control path only)
    std::atomic<bool> stopping_{false};
};

}  // namespace ferry::app
