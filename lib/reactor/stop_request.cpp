#include "ferry/reactor/stop_request.h"

#include <cerrno>

namespace ferry::reactor {

bool stop_request::watch(const doorbell *bell) noexcept {
    const size_t i = n_.load(std::memory_order_relaxed);
    if (i == max_watched || bell == nullptr) return false;
    bells_[i].store(bell, std::memory_order_relaxed);
    n_.store(i + 1, std::memory_order_release);  // the slot before the count
    return true;
}

void stop_request::request() noexcept {
    const int saved = errno;  // a handler must not change the interrupted code's errno
    flag_.store(true, std::memory_order_seq_cst);
    const size_t n = n_.load(std::memory_order_acquire);
    for (size_t i = 0; i < n; ++i)
        if (const doorbell *b = bells_[i].load(std::memory_order_relaxed); b != nullptr)
            (void)ring(*b);
    errno = saved;
}

}  // namespace ferry::reactor
