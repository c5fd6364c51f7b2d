// Short names by slot, for threads that learn a slot's name after they
// started: the upstreams' names for the access and event log writers, which
// format records of upstreams a reload added (config.h ferry_config::upstreams
// is by slot, and a slot's name never changes for ferry's life).
//
// The table is sized once (every slot a reload may use) and never moves. A
// slot is named once, by one writer thread (the reloader, before it publishes
// the configuration that first names the slot); any thread may read: the
// length is stored last (release) and read first (acquire), so a reader sees
// either nothing or the whole name.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

namespace ferry {

class name_table {
public:
    static constexpr size_t max_len = 63;  // longer names are cut (config names are <= 32)

    explicit name_table(size_t capacity);

    // Names `slot` if it has no name yet and is below capacity(); false
    // otherwise (a named slot keeps its name). One writer thread.
    bool name(size_t slot, std::string_view text) noexcept;
    // The slot's name, "" when it has none or is past capacity(). Any thread.
    [[nodiscard]] std::string_view operator[](size_t slot) const noexcept;
    [[nodiscard]] size_t capacity() const noexcept { return cap_; }

private:
    struct entry {
        std::atomic<uint8_t> len{0};
        char text[max_len];
    };
    size_t cap_;
    std::unique_ptr<entry[]> entries_;
};

}  // namespace ferry
