#include "ferry/xcore/mesh.h"

#include <rte_errno.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include <cstdio>

#include "ferry/xcore/message.h"

namespace ferry::xcore {

mesh::mesh(unsigned workers, unsigned ring_size) noexcept
    : workers_(workers),
      ring_size_(ring_size),
      rings_(new rte_ring *[static_cast<size_t>(workers) * workers]()) {}

result<std::unique_ptr<mesh>, std::string> mesh::create(unsigned workers, unsigned ring_size,
                                                        int socket, std::string_view name) {
    if (workers == 0 || workers > max_workers)
        return unexpected{"xcore mesh: workers must be 1.." + std::to_string(max_workers) +
                          ", got " + std::to_string(workers)};
    if (ring_size == 0 || ring_size > RTE_RING_SZ_MASK)
        return unexpected{"xcore mesh: ring_size must be 1.." + std::to_string(RTE_RING_SZ_MASK) +
                          ", got " + std::to_string(ring_size)};
    // The longest ring name is "<name>_<w-1>_<w-1>".
    const std::string longest =
        std::string(name) + "_" + std::to_string(workers - 1) + "_" + std::to_string(workers - 1);
    if (longest.size() >= RTE_RING_NAMESIZE)
        return unexpected{"xcore mesh: ring name '" + longest + "' longer than " +
                          std::to_string(RTE_RING_NAMESIZE - 1) + " characters"};

    std::unique_ptr<mesh> m(new mesh(workers, ring_size));
    for (unsigned from = 0; from < workers; ++from) {
        for (unsigned to = 0; to < workers; ++to) {
            if (from == to)
                continue;
            const std::string rname =
                std::string(name) + "_" + std::to_string(from) + "_" + std::to_string(to);
            // SP/SC: the outbox of `from` is the only producer, the inbox of
            // `to` the only consumer (no CAS on the heads). EXACT_SZ: the
            // capacity is what was asked for, not the power of two below it.
            rte_ring *r = rte_ring_create_elem(rname.c_str(), message_size, ring_size, socket,
                                               RING_F_SP_ENQ | RING_F_SC_DEQ | RING_F_EXACT_SZ);
            if (r == nullptr)
                // ~mesh frees the rings created so far.
                return unexpected{"xcore mesh: rte_ring_create_elem(" + rname +
                                  "): " + rte_strerror(rte_errno)};
            m->rings_[from * workers + to] = r;
        }
    }
    return m;
}

mesh::~mesh() {
    for (unsigned i = 0; i < workers_ * workers_; ++i) {
        rte_ring *r = rings_[i];
        if (r == nullptr)
            continue;
        // Workers have stopped (contract): draining from this thread is the
        // single consumer now. Messages still in flight own mbuf chains.
        message buf[32];
        unsigned n;
        while ((n = rte_ring_sc_dequeue_burst_elem(r, buf, message_size, 32, nullptr)) != 0)
            for (unsigned k = 0; k < n; ++k)
                release(buf[k]);
        rte_ring_free(r);
    }
}

}  // namespace ferry::xcore
