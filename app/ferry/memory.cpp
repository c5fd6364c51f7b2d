// What ferry reserves at start-up, and its memory bound (memory.h).
#include "memory.h"

#include <rte_malloc.h>
#include <rte_memory.h>

#include "app.h"

namespace ferry::app {

uint64_t dpdk_heap_bytes() noexcept {
    uint64_t total = 0;
    for (unsigned i = 0; i < rte_socket_count(); ++i) {
        rte_malloc_socket_stats st{};
        if (rte_malloc_get_socket_stats(rte_socket_id_by_idx(i), &st) == 0)
            total += st.heap_allocsz_bytes;
    }
    return total;
}

telemetry::memory_plan plan_memory(const app_state &app, uint64_t base_rss,
                                   uint64_t dpdk_heap_at_base) noexcept {
    telemetry::memory_plan m;
    m.base_rss = base_rss;
    const uint64_t heap = dpdk_heap_bytes();
    m.dpdk_heap = heap > dpdk_heap_at_base ? heap - dpdk_heap_at_base : 0;
    for (const auto &p : app.ports)
        if (p.kernel) m.kernel_rings += p.kernel->bytes();
    for (const auto &w : app.workers) {
        for (const auto &l : w->tcp_layers) m.tcp_reserved += l->reserved_bytes();
        if (w->proxy) m.proxy_reserved += w->proxy->reserved_bytes();
    }
    // Not counted piece by piece: each worker's stacks, neighbour tables,
    // reactor and counters, the allocator's overhead on the large blocks,
    // the telemetry and log threads, the access log's write buffer.
    m.slack = telemetry::memory_plan::slack_fixed +
              uint64_t(app.workers.size()) * telemetry::memory_plan::slack_per_worker;
    m.bound = m.base_rss + m.dpdk_heap + m.tcp_reserved + m.proxy_reserved + m.kernel_rings +
              m.slack;
    return m;
}

}  // namespace ferry::app
