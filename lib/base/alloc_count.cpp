#include "ferry/base/alloc_count.h"

#include <cstdlib>
#include <bits/functexcept.h>  // std::__throw_bad_alloc (libstdc++)
#include <new>

namespace ferry {
namespace {
thread_local uint64_t allocations = 0;

void *allocate(std::size_t n) noexcept {
    ++allocations;
    return std::malloc(n != 0 ? n : 1);
}

// The throwing forms throw std::bad_alloc as the library's do: through
// libstdc++, since ferry is built without exceptions.
void *allocate_or_throw(std::size_t n) {
    void *p = allocate(n);
    if (p == nullptr) std::__throw_bad_alloc();
    return p;
}
}  // namespace

uint64_t thread_allocations() noexcept { return allocations; }

}  // namespace ferry

// The replaceable forms without alignment (C++20 [new.delete]); the aligned
// ones stay the library's. Every delete here frees what the news here took.
void *operator new(std::size_t n) { return ferry::allocate_or_throw(n); }
void *operator new[](std::size_t n) { return ferry::allocate_or_throw(n); }
void *operator new(std::size_t n, const std::nothrow_t &) noexcept { return ferry::allocate(n); }
void *operator new[](std::size_t n, const std::nothrow_t &) noexcept { return ferry::allocate(n); }
void operator delete(void *p) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
void operator delete[](void *p, std::size_t) noexcept { std::free(p); }
void operator delete(void *p, const std::nothrow_t &) noexcept { std::free(p); }
void operator delete[](void *p, const std::nothrow_t &) noexcept { std::free(p); }
