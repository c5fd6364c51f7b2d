// A fixed number of connection slots (TCP connections, proxy clients and
// upstream connections) whose state is made on first use.
//
// slot_array<T> reserves address space for `capacity` elements and a stack
// of free indices at construction (one mmap, MAP_NORESERVE) and touches
// none of it. take() hands out a freed slot, last-freed-first, or else
// constructs the next slot no one has used yet; give() takes one back
// (the element stays constructed; the user resets what it must). So only
// the slots ever in use at once are made and resident: a configuration
// with many slots costs address space, not memory, until traffic needs them.
//
// One thread uses an array: no locking. made() may be read from any thread
// (telemetry).
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>

#include "ferry/base/counter.h"

namespace ferry {

namespace detail {

// The untyped part: the mapping, the free stack and the counts.
class slot_space {
public:
    static constexpr uint32_t none = UINT32_MAX;

    [[nodiscard]] uint32_t capacity() const noexcept { return cap_; }
    // Slots ever handed out (constructed): [0, made()) are valid indices.
    [[nodiscard]] uint32_t made() const noexcept { return static_cast<uint32_t>(made_.get()); }
    [[nodiscard]] uint32_t in_use() const noexcept { return in_use_; }
    [[nodiscard]] uint32_t available() const noexcept { return cap_ - in_use_; }
    // The address space reserved (the most the array can make resident).
    [[nodiscard]] std::size_t reserved_bytes() const noexcept { return map_bytes_; }

protected:
    // Aborts, saying so on stderr, when the address space cannot be mapped
    // (as a failed allocation at start-up does anywhere else).
    slot_space(std::size_t elem_bytes, uint32_t capacity) { map(elem_bytes, capacity); }
    slot_space() = default;
    ~slot_space();
    void map(std::size_t elem_bytes, uint32_t capacity);
    slot_space(const slot_space &) = delete;
    slot_space &operator=(const slot_space &) = delete;

    std::byte *base_ = nullptr;
    uint32_t *free_ = nullptr;  // stack of given-back indices, after the elements
    std::size_t map_bytes_ = 0;
    uint32_t cap_ = 0;
    counter made_;  // written by the owner only
    uint32_t nfree_ = 0;
    uint32_t in_use_ = 0;
};

// What slot_array and side_array share: elements of T in a slot_space,
// [0, made()) constructed, destroyed with the array.
template <class T>
class slot_elements : public slot_space {
public:
    // Reserves `capacity` elements; once, on an array made with none.
    void reserve(uint32_t capacity) {
        if (base_ == nullptr) map(sizeof(T), capacity);
    }
    [[nodiscard]] bool reserved() const noexcept { return base_ != nullptr; }

    // Element i; i < made().
    T &operator[](uint32_t i) noexcept { return data()[i]; }
    const T &operator[](uint32_t i) const noexcept { return data()[i]; }
    T *data() noexcept { return std::launder(reinterpret_cast<T *>(base_)); }
    const T *data() const noexcept { return std::launder(reinterpret_cast<const T *>(base_)); }

protected:
    explicit slot_elements(uint32_t capacity) : slot_space(sizeof(T), capacity) {}
    slot_elements() = default;
    ~slot_elements() {
        for (uint32_t i = 0; i < made(); ++i) data()[i].~T();
    }
    // Value-initialises element i (i < capacity(), not made yet); the
    // caller then counts it in made_.
    T *make(uint32_t i) {
        return ::new (static_cast<void *>(base_ + std::size_t(i) * sizeof(T))) T();
    }
};

}  // namespace detail

template <class T>
class slot_array : public detail::slot_elements<T> {
    using space = detail::slot_elements<T>;
    using space::cap_, space::free_, space::in_use_, space::made_, space::nfree_;

public:
    using space::none;

    explicit slot_array(uint32_t capacity) : space(capacity) {}
    // No slots until reserve(): for an owner that learns the number later.
    slot_array() = default;

    // A free slot's index, or none when all are in use. A slot never used
    // before is value-initialised (T()) and then given to init(index, T&).
    template <class Init>
    [[nodiscard]] uint32_t take(Init &&init) {
        if (nfree_ != 0) {
            ++in_use_;
            return free_[--nfree_];
        }
        const uint32_t i = this->made();
        if (i == cap_) return none;
        init(i, *this->make(i));
        ++in_use_;
        made_.set(i + 1);
        return i;
    }
    [[nodiscard]] uint32_t take() {
        return take([](uint32_t, T &) {});
    }
    // Gives back slot i (handed out by take(), not given back since).
    void give(uint32_t i) noexcept {
        free_[nfree_++] = i;
        --in_use_;
    }

    [[nodiscard]] uint32_t index_of(const T &t) const noexcept {
        return static_cast<uint32_t>(&t - this->data());
    }
};

// Per-slot state beside a slot_array (the access record of a client slot):
// the same untouched reservation, its elements made in index order as the
// owner's slots are (grow(n) makes [made(), n)).
template <class T>
class side_array : public detail::slot_elements<T> {
public:
    side_array() = default;
    // Makes (value-initialises) elements up to n (at most the capacity).
    void grow(uint32_t n) {
        uint32_t i = this->made();
        for (; i < n && i < this->cap_; ++i) this->make(i);
        this->made_.set(i);
    }
};

}  // namespace ferry
