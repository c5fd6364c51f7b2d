#include "drain_thread.h"

#include <poll.h>
#include <rte_lcore.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace ferry::app {

drain_thread::~drain_thread() {
    stop();
    if (wake_fd_ >= 0) close(wake_fd_);
}

std::string drain_thread::init() {
    if (wake_fd_ < 0) wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return wake_fd_ < 0 ? std::string(std::strerror(errno)) : std::string();
}

std::string drain_thread::start(const char *name, int tick_ms, tick_fn tick, void *ctx) {
    if (std::string e = init(); !e.empty()) return "eventfd: " + e;
    tick_ms_ = tick_ms;
    tick_ = tick;
    ctx_ = ctx;
    // The signals stay with the main thread (main.cpp's stop and reopen).
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    const int rc = rte_ctrl_thread_create(&thread_, name, nullptr, &drain_thread::thread_main, this);
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    if (rc != 0) return std::strerror(-rc);
    running_ = true;
    return "";
}

void drain_thread::stop() noexcept {
    if (!running_) return;
    stopping_.store(true, std::memory_order_release);
    const uint64_t one = 1;
    while (write(wake_fd_, &one, sizeof one) < 0 && errno == EINTR) {
    }
    pthread_join(thread_, nullptr);
    running_ = false;
}

void drain_thread::wake() noexcept {
    if (wake_fd_ < 0) return;
    const uint64_t one = 1;
    while (write(wake_fd_, &one, sizeof one) < 0 && errno == EINTR) {
    }
}

void *drain_thread::thread_main(void *self) noexcept {
    auto &t = *static_cast<drain_thread *>(self);
    for (;;) {
        // Read before the tick: once stop() is seen the producers are done,
        // so this last tick takes everything they wrote.
        const bool last = t.stopping_.load(std::memory_order_acquire);
        t.tick_(t.ctx_, last);
        if (last) return nullptr;
        pollfd p{t.wake_fd_, POLLIN, 0};
        if (poll(&p, 1, t.tick_ms_) > 0) {
            uint64_t v;
            (void)!read(t.wake_fd_, &v, sizeof v);
        }
    }
}

}  // namespace ferry::app
