// Each worker runs a reactor (lib/reactor) whose pollers are its rx queues,
// one per port, and whose flusher transmits what the stacks queued.
#include <rte_ethdev.h>

#include "app.h"

namespace ferry::app {
namespace {

// A tx batch the NIC refuses this many flushes in a row is freed (and
// counted) so a wedged queue cannot hold the pool's mbufs forever.
constexpr uint32_t tx_stuck_limit = 100000;

uint32_t queue_poll(void *ctx, uint64_t now) {
    auto &q = *static_cast<queue_io *>(ctx);
    uint32_t work = 0;
    uint16_t n;
    rte_mbuf **pkts;
    rte_mbuf *fresh[queue_io::burst];
    if (q.stash_n != 0) {  // frames the pre-sleep re-check received
        pkts = q.stash;
        n = q.stash_n;
        q.stash_n = 0;
    } else {
        pkts = fresh;
        n = rte_eth_rx_burst(q.port_id, q.queue, fresh, queue_io::burst);
    }
    if (n != 0) {
        q.io->rx_packets.inc(n);
        q.io->rx_bursts.inc();
        q.stack->input_burst(std::span<rte_mbuf *const>(pkts, n), now);
        work += n;
    }
    if (q.stack->next_deadline() <= now) {
        q.stack->poll_timers(now);
        ++work;
    }
    if (q.app != nullptr)
        work += q.app->run(now);
    return work;
}

bool queue_pending(void *ctx) {
    auto &q = *static_cast<queue_io *>(ctx);
    if (q.stash_n == 0) q.stash_n = rte_eth_rx_burst(q.port_id, q.queue, q.stash, queue_io::burst);
    return q.stash_n != 0;
}

uint64_t queue_deadline(void *ctx) { return static_cast<queue_io *>(ctx)->stack->next_deadline(); }

// Real NICs need the interrupt armed while asleep; net_tap answers -ENOTSUP
// but its queue fd fires anyway (TESTBED.md), so the result is not checked.
void queue_arm(void *ctx) {
    auto &q = *static_cast<queue_io *>(ctx);
    (void)rte_eth_dev_rx_intr_enable(q.port_id, q.queue);
}
void queue_disarm(void *ctx) {
    auto &q = *static_cast<queue_io *>(ctx);
    (void)rte_eth_dev_rx_intr_disable(q.port_id, q.queue);
}

void flush_tx(void *ctx, uint64_t) {
    auto &w = *static_cast<worker *>(ctx);
    for (auto &qp : w.queues) {
        queue_io &q = *qp;
        auto tx = q.stack->tx_pending();
        if (tx.empty()) continue;
        const uint16_t sent =
            rte_eth_tx_burst(q.port_id, q.queue, tx.data(), static_cast<uint16_t>(tx.size()));
        q.io->tx_packets.inc(sent);
        q.stack->tx_consumed(sent);
        if (sent == tx.size()) {
            q.tx_stuck = 0;
            continue;
        }
        q.io->tx_short_bursts.inc();
        if (++q.tx_stuck >= tx_stuck_limit) {
            auto rest = q.stack->tx_pending();
            rte_pktmbuf_free_bulk(rest.data(), static_cast<unsigned>(rest.size()));
            q.io->tx_drop_stuck.inc(rest.size());
            q.stack->tx_consumed(static_cast<uint16_t>(rest.size()));
            q.tx_stuck = 0;
        }
    }
}

}  // namespace

std::string setup_worker(app_state &app, worker &w) {
    w.loop = std::make_unique<reactor::reactor>(app.settings, w.rc, reactor::reactor::now_ns());
    if (!w.loop->ok()) return "lcore " + std::to_string(w.lcore) + ": epoll/eventfd creation failed";
    for (size_t i = 0; i < app.ports.size(); ++i) {
        const net::port &p = app.ports[i];
        auto q = std::make_unique<queue_io>();
        q->port_id = p.id;
        q->queue = w.index;
        q->stack = w.stacks[i].get();
        q->app = i < w.tcp_apps.size() ? w.tcp_apps[i].get() : nullptr;
        q->io = &w.io;
        reactor::poller pl;
        pl.poll = queue_poll;
        pl.pending = queue_pending;
        pl.deadline = queue_deadline;
        pl.ctx = q.get();
        // Without an rx interrupt fd this queue must be polled: the reactor
        // then never sleeps (af_packet), and /ferry/lcores says so.
        pl.wake_fd = p.caps.rx_interrupts ? rte_eth_dev_rx_intr_ctl_q_get_fd(p.id, w.index) : -1;
        if (pl.wake_fd >= 0) {
            pl.arm = queue_arm;
            pl.disarm = queue_disarm;
        }
        if (!w.loop->add_poller(pl))
            return "lcore " + std::to_string(w.lcore) + ": cannot register rx queue " +
                   std::to_string(w.index) + " of port " + p.cfg.name;
        w.queues.push_back(std::move(q));
    }
    if (!w.loop->add_flusher({flush_tx, &w})) return "cannot register the tx flusher";
    return "";
}

void wake_all_workers() noexcept {
    if (the_app == nullptr) return;
    for (const auto &w : the_app->workers)
        if (w->loop) (void)reactor::ring(w->loop->bell());
}

int worker_main(void *) {
    worker *w = the_app->by_lcore[rte_lcore_id()];
    if (w == nullptr) return 0;  // an EAL lcore beyond `workers`: nothing to do
    w->loop->run(stop_requested);
    // Whoever stops first wakes the others: a sleeping worker would not see
    // the stop flag until its next timer otherwise.
    wake_all_workers();
    return 0;
}

}  // namespace ferry::app
