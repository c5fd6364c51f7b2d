// A minimal expected-like result for control-path code (config, start-up).
// The data path returns [[nodiscard]] enums or counts instead (CONVENTIONS.md).
#pragma once

#include <utility>
#include <variant>

namespace ferry {

template <class E>
struct unexpected {
    E error;
};
template <class E>
unexpected(E) -> unexpected<E>;

template <class T, class E>
class [[nodiscard]] result {
public:
    result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
    result(unexpected<E> e) : v_(std::in_place_index<1>, std::move(e.error)) {}

    [[nodiscard]] bool ok() const noexcept { return v_.index() == 0; }
    explicit operator bool() const noexcept { return ok(); }

    T &value() & { return std::get<0>(v_); }
    const T &value() const & { return std::get<0>(v_); }
    T &&value() && { return std::get<0>(std::move(v_)); }
    T *operator->() { return &std::get<0>(v_); }
    const T *operator->() const { return &std::get<0>(v_); }
    T &operator*() & { return std::get<0>(v_); }
    const T &operator*() const & { return std::get<0>(v_); }

    const E &error() const & { return std::get<1>(v_); }

private:
    std::variant<T, E> v_;
};

}  // namespace ferry
