// A single-producer/single-consumer ring of fixed-size records, allocated once:
// how a worker lcore hands what it wants written (access-log records, event-log
// events) to the one control thread that writes them, without a lock, an
// allocation or a system call, and without ever waiting: reserve() answers
// nullptr when the ring is full and the caller counts the record as dropped.
//
// producer: reserve() -> fill the slot -> commit()
// consumer: consume(max, f) calls f(const T &) in order, then frees the slots.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace ferry {

template <class T>
class record_ring {
public:
    // `capacity` is rounded up to a power of two (at least 2).
    explicit record_ring(uint32_t capacity)
        : cap_(round_up(capacity)), mask_(cap_ - 1), slots_(std::make_unique<T[]>(cap_)) {}
    record_ring(const record_ring &) = delete;
    record_ring &operator=(const record_ring &) = delete;

    [[nodiscard]] uint32_t capacity() const noexcept { return cap_; }

    // Producer: the next free slot to fill, or nullptr when the ring is full.
    // A non-null slot becomes visible to the consumer only at commit().
    T *reserve() noexcept {
        const uint64_t t = tail_.load(std::memory_order_relaxed);
        if (t - head_cache_ == cap_) {
            // Pairs with the consumer's release store of head_: every read it
            // made of the slots it released happened before we overwrite them.
            head_cache_ = head_.load(std::memory_order_acquire);
            if (t - head_cache_ == cap_) return nullptr;
        }
        return &slots_[t & mask_];
    }
    // Producer: publishes the slot reserve() returned.
    void commit() noexcept {
        // Release: the record's bytes are written before the consumer can see
        // the new tail (its acquire load below).
        tail_.store(tail_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    }

    // Consumer: calls f(const T &) for up to `max` records in order, then
    // frees their slots. Returns how many.
    template <class F>
    uint32_t consume(uint32_t max, F &&f) {
        const uint64_t h = head_.load(std::memory_order_relaxed);
        // Acquire: pairs with commit()'s release; the records up to t are complete.
        const uint64_t t = tail_.load(std::memory_order_acquire);
        const uint64_t n = t - h < max ? t - h : max;
        for (uint64_t i = 0; i < n; ++i) f(static_cast<const T &>(slots_[(h + i) & mask_]));
        // Release: our reads of these slots are done before the producer may
        // reuse them (its acquire load in reserve()).
        head_.store(h + n, std::memory_order_release);
        return static_cast<uint32_t>(n);
    }
    // Any thread: records waiting (approximate while the producer runs).
    [[nodiscard]] uint64_t depth() const noexcept {
        return tail_.load(std::memory_order_acquire) - head_.load(std::memory_order_acquire);
    }

private:
    static uint32_t round_up(uint32_t n) noexcept {
        uint32_t c = 2;
        while (c < n && c < (1u << 30)) c <<= 1;
        return c;
    }

    const uint32_t cap_, mask_;
    std::unique_ptr<T[]> slots_;
    // The producer's line: its position and its last view of the consumer's.
    alignas(64) std::atomic<uint64_t> tail_{0};
    uint64_t head_cache_ = 0;
    // The consumer's line.
    alignas(64) std::atomic<uint64_t> head_{0};
};

}  // namespace ferry
