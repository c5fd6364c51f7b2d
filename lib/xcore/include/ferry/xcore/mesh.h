// The process-wide set of cross-core rings (DESIGN.md, "Cross-core work"):
// one single-producer single-consumer rte_ring per ordered pair of workers
// (from != to), built once at start-up before any worker runs and freed after
// they all stopped. Worker w is the only producer of ring(w, *) (through its
// outbox) and the only consumer of ring(*, w) (through its inbox), so every
// ring is SPSC and needs no locked instruction on either side.
//
// Workers are dense indices 0..workers()-1 (the app maps them to lcore ids),
// so the ring table is a plain array and a lookup is one multiply-add.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "ferry/base/result.h"

struct rte_ring;

namespace ferry::xcore {

class mesh {
public:
    // RTE_MAX_LCORE of the Debian 22.11 build; one worker per lcore at most.
    static constexpr unsigned max_workers = 128;

    // Creates workers * (workers - 1) rings of exactly `ring_size` messages
    // (RING_F_EXACT_SZ: capacity == ring_size, any value >= 1) on NUMA
    // `socket` (SOCKET_ID_ANY allowed), named "<name>_<from>_<to>" (rte_ring
    // names are process-wide and at most 28 characters). Needs the EAL.
    // Errors (control path, so a message): workers 0 or > max_workers,
    // ring_size 0 or too large, a name too long, rte_ring_create_elem failed
    // (with rte_errno's text; already created rings are freed).
    static result<std::unique_ptr<mesh>, std::string> create(unsigned workers, unsigned ring_size,
                                                             int socket, std::string_view name);

    mesh(const mesh &) = delete;
    mesh &operator=(const mesh &) = delete;

    // Frees the rings. Call after every worker stopped: messages still in a
    // ring are released (their mbuf chains freed) first.
    ~mesh();

    // The ring `from` produces into and `to` consumes from; nullptr if
    // from == to or either is out of range.
    [[nodiscard]] rte_ring *ring(unsigned from, unsigned to) const noexcept {
        return from < workers_ && to < workers_ ? rings_[from * workers_ + to] : nullptr;
    }
    [[nodiscard]] unsigned workers() const noexcept { return workers_; }
    // Messages one ring holds at most.
    [[nodiscard]] unsigned ring_size() const noexcept { return ring_size_; }

private:
    mesh(unsigned workers, unsigned ring_size) noexcept;

    unsigned workers_;
    unsigned ring_size_;
    // workers_ * workers_ entries, row = producer; the diagonal stays null.
    std::unique_ptr<rte_ring *[]> rings_;
};

}  // namespace ferry::xcore
