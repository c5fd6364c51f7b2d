// The per-lcore poll loop. The reactor (lib/reactor) replaces this loop with
// one that also drains cross-core rings and sleeps when idle; until then a
// worker polls its queues, feeds the stack and flushes its tx batch.
#include <rte_cycles.h>
#include <rte_ethdev.h>

#include "app.h"

namespace ferry::app {
namespace {

constexpr uint16_t rx_burst = 32;
// A tx batch the NIC refuses this many iterations in a row is freed (and
// counted) so a wedged queue cannot hold the pool's mbufs forever.
constexpr uint32_t tx_stuck_limit = 100000;

inline uint64_t tsc_to_ns(uint64_t tsc, uint64_t hz) {
    // 128-bit intermediate: tsc * 1e9 overflows 64 bits after ~6 s at 3 GHz.
    return static_cast<uint64_t>(static_cast<unsigned __int128>(tsc) * 1'000'000'000u / hz);
}

}  // namespace

int worker_main(void *) {
    app_state &app = *the_app;
    worker *w = app.by_lcore[rte_lcore_id()];
    if (w == nullptr) return 0;  // an EAL lcore beyond `workers`: nothing to do
    lcore_counters &c = w->counters;
    const size_t nports = app.ports.size();
    std::vector<uint32_t> tx_stuck(nports, 0);  // before the loop: no allocation inside it
    rte_mbuf *pkts[rx_burst];

    while (!stop_requested.load(std::memory_order_relaxed)) {
        c.polls.inc();
        const uint64_t now = tsc_to_ns(rte_get_tsc_cycles(), app.tsc_hz);
        bool busy = false;
        for (size_t i = 0; i < nports; ++i) {
            const uint16_t port_id = app.ports[i].id;
            net::stack &st = *w->stacks[i];
            const uint16_t n = rte_eth_rx_burst(port_id, w->index, pkts, rx_burst);
            if (n > 0) {
                busy = true;
                c.rx_packets.inc(n);
                st.input_burst(std::span<rte_mbuf *const>(pkts, n), now);
            }
            if (st.next_deadline() <= now) {
                busy = true;
                st.poll_timers(now);
            }
            auto tx = st.tx_pending();
            if (!tx.empty()) {
                const uint16_t sent = rte_eth_tx_burst(port_id, w->index, tx.data(),
                                                       static_cast<uint16_t>(tx.size()));
                c.tx_packets.inc(sent);
                st.tx_consumed(sent);
                if (sent < tx.size()) {
                    c.tx_short_bursts.inc();
                    if (++tx_stuck[i] >= tx_stuck_limit) {
                        auto rest = st.tx_pending();
                        rte_pktmbuf_free_bulk(rest.data(), static_cast<unsigned>(rest.size()));
                        c.tx_drop_stuck.inc(rest.size());
                        st.tx_consumed(static_cast<uint16_t>(rest.size()));
                        tx_stuck[i] = 0;
                    }
                } else {
                    tx_stuck[i] = 0;
                }
            }
        }
        if (busy) c.busy_polls.inc();
    }
    return 0;
}

}  // namespace ferry::app
