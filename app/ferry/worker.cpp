// Each worker runs a reactor (lib/reactor) whose pollers are its rx queues,
// one per port, and whose flusher transmits what the stacks queued.
#include <rte_ethdev.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>

#include "app.h"

namespace ferry::app {
namespace {

// The reactor's poller for a worker's queue of one port (port_queue): the
// queue's rx and stack timers, then the port's [tcp_test] services.
uint32_t queue_poll(void *ctx, uint64_t now) {
    auto &q = *static_cast<port_queue *>(ctx);
    uint32_t work = q.io->poll(now);
    if (q.app != nullptr) work += q.app->run(now);
    return work;
}
bool queue_pending(void *ctx) { return static_cast<port_queue *>(ctx)->io->pending(); }
uint64_t queue_deadline(void *ctx) { return static_cast<port_queue *>(ctx)->io->next_deadline(); }
uint32_t queue_before_sleep(void *ctx, uint64_t now) {
    net::tcp_layer *l = static_cast<port_queue *>(ctx)->tcp;
    return l != nullptr ? l->ack_before_sleep(now) : 0;
}
void queue_arm(void *ctx) { static_cast<port_queue *>(ctx)->io->arm(); }
void queue_disarm(void *ctx) { static_cast<port_queue *>(ctx)->io->disarm(); }

void flush_tx(void *ctx, uint64_t now) {
    auto &w = *static_cast<worker *>(ctx);
    // What the iteration queued on TCP connections first (defer_output), then
    // the tx bursts.
    for (auto &l : w.tcp_layers)
        if (l) l->flush(now);
    for (auto &q : w.queues) q->io->flush(now);
}

// The inbox handler: messages other workers sent this one.
void on_messages(void *ctx, unsigned from, std::span<xcore::message> msgs, uint64_t now) {
    auto &w = *static_cast<worker *>(ctx);
    for (xcore::message &m : msgs) {
        if (m.opcode >= proxy::op_first && w.proxy) {  // the proxy's range (shared pools)
            w.proxy->on_message(from, m, now);
            continue;
        }
        switch (m.opcode) {
            case op_rx_frame:
                if (m.flags < w.stacks.size()) {
                    w.stacks[m.flags]->input_handoff(m.mbuf, now);
                    continue;
                }
                break;
            case op_neighbor:
                if (m.flags < w.stacks.size()) {
                    uint8_t b[6];
                    for (int i = 0; i < 6; ++i) b[i] = static_cast<uint8_t>(m.handle >> (40 - 8 * i));
                    net::ip_addr ip = net::ipv4_addr(m.arg);
                    if (m.mbuf != nullptr) {
                        std::array<uint8_t, 16> a;
                        std::memcpy(a.data(), rte_pktmbuf_mtod(m.mbuf, const uint8_t *), 16);
                        ip = net::ipv6_addr(a);
                        rte_pktmbuf_free(m.mbuf);
                    }
                    w.stacks[m.flags]->learn_shared(ip, net::mac_addr::from_bytes(b), now);
                    continue;
                }
                break;
            case op_router:
                if (m.flags < w.stacks.size() && m.mbuf != nullptr) {
                    std::array<uint8_t, 16> a;
                    std::memcpy(a.data(), rte_pktmbuf_mtod(m.mbuf, const uint8_t *), 16);
                    rte_pktmbuf_free(m.mbuf);
                    w.stacks[m.flags]->learn_router_shared(net::ipv6_addr(a),
                                                           static_cast<uint16_t>(m.arg), now);
                    continue;
                }
                break;
            default:
                break;
        }
        // Unknown opcode or port: cannot happen between workers of one
        // process; release what came with it.
        if (m.mbuf != nullptr) rte_pktmbuf_free(m.mbuf);
    }
}

}  // namespace

bool handoff_frame(void *ctx, uint16_t owner, rte_mbuf *m) noexcept {
    auto &l = *static_cast<port_link *>(ctx);
    if (!l.w->out || owner == l.w->index || the_app == nullptr ||
        owner >= the_app->workers.size())
        return false;
    xcore::message msg;
    msg.mbuf = m;
    msg.opcode = op_rx_frame;
    msg.flags = l.port;
    return l.w->out->send(owner, msg);
}

namespace {

// Sends `msg` to every other worker, with `addr` (an IPv6 address: sixteen
// bytes do not fit the message) in an mbuf of the port's pool when given.
// What cannot go (no mbuf, an outbox full) is counted (neigh_share_dropped),
// never waited for: the peer learns the binding by its own resolution.
void send_to_peers(port_link &l, const xcore::message &msg, const net::ipv6_addr *addr) noexcept {
    const std::span<const uint8_t> payload =
        addr != nullptr ? std::span<const uint8_t>(addr->bytes().data(), 16)
                        : std::span<const uint8_t>();
    const unsigned missed = l.w->out->broadcast(msg, l.pool, payload);
    if (missed != 0 && l.port < l.w->net_counters.size())
        l.w->net_counters[l.port]->neigh_share_dropped.inc(missed);
}

}  // namespace

void share_neighbor(void *ctx, const net::ip_addr &ip, net::mac_addr mac) noexcept {
    auto &l = *static_cast<port_link *>(ctx);
    if (!l.w->out || the_app == nullptr) return;
    xcore::message msg;
    for (int i = 0; i < 6; ++i) msg.handle = msg.handle << 8 | mac.bytes()[i];
    msg.opcode = op_neighbor;
    msg.flags = l.port;
    if (ip.is_v4()) {
        msg.arg = ip.v4().value();
        send_to_peers(l, msg, nullptr);
    } else {
        const net::ipv6_addr a6 = ip.v6();
        send_to_peers(l, msg, &a6);
    }
}

void share_router(void *ctx, const net::ipv6_addr &router, uint16_t lifetime_s) noexcept {
    auto &l = *static_cast<port_link *>(ctx);
    if (!l.w->out || the_app == nullptr) return;
    xcore::message msg;
    msg.opcode = op_router;
    msg.flags = l.port;
    msg.arg = lifetime_s;
    send_to_peers(l, msg, &router);
}

std::string create_mesh(app_state &app, unsigned workers) {
    if (workers < 2) return "";
    // 4096 messages per pair: a full rx burst of every queue many times over.
    auto m = xcore::mesh::create(workers, 4096, SOCKET_ID_ANY, "fx");
    if (!m) return "cross-core rings: " + m.error();
    app.mesh = std::move(m.value());
    return "";
}

std::string setup_outboxes(app_state &app) {
    if (!app.mesh) return "";
    const auto n = static_cast<unsigned>(app.workers.size());
    std::vector<reactor::doorbell *> bells(n);
    for (unsigned i = 0; i < n; ++i) bells[i] = &app.workers[i]->loop->bell();
    for (auto &wp : app.workers) {
        worker &w = *wp;
        w.out = std::make_unique<xcore::outbox>(*app.mesh, w.index, w.rc, bells.data(),
                                                app.settings);
        // After the tx flusher (setup_worker): frames first, then messages.
        if (!w.loop->add_flusher(w.out->as_flusher()))
            return "lcore " + std::to_string(w.lcore) + ": cannot register the outbox";
    }
    return "";
}

std::string setup_worker(app_state &app, worker &w) {
    w.loop = std::make_unique<reactor::reactor>(app.settings, w.rc, reactor::reactor::now_ns());
    if (!w.loop->ok()) return "lcore " + std::to_string(w.lcore) + ": epoll/eventfd creation failed";
    if (app.mesh) {
        // The inbox is polled first in every iteration: what other lcores
        // sent (segments handed over, neighbor bindings) is older than what
        // the rx queues hold now, and a binding must be known before the
        // SYN-ACKs it addresses are built.
        w.in = std::make_unique<xcore::inbox>(*app.mesh, w.index, w.rc, on_messages, &w);
        if (!w.loop->add_poller(w.in->as_poller()))
            return "lcore " + std::to_string(w.lcore) + ": cannot register the inbox";
    }
    for (size_t i = 0; i < app.ports.size(); ++i) {
        const net::port &p = app.ports[i];
        auto q = std::make_unique<port_queue>();
        net::fault_params fp;
        if (p.spec.fault.enabled())
            fp = net::fault_params_of(p.spec.fault, static_cast<uint32_t>(i), w.lcore);
        q->io = std::make_unique<net::queue_io>(p.id, w.index, *w.stacks[i], w.io,
                                                p.spec.fault.enabled() ? &fp : nullptr, p.pool);
        if (w.index < p.packet_queues.size()) q->io->attach(p.packet_queues[w.index].get());
        q->app = i < w.tcp_apps.size() ? w.tcp_apps[i].get() : nullptr;
        q->tcp = i < w.tcp_layers.size() ? w.tcp_layers[i].get() : nullptr;
        reactor::poller pl;
        pl.poll = queue_poll;
        pl.pending = queue_pending;
        pl.deadline = queue_deadline;
        pl.before_sleep = queue_before_sleep;
        pl.ctx = q.get();
        // The queue's rx interrupt fd, or (af_packet) its socket; without
        // either this queue must be polled: the reactor then never sleeps
        // (adaptive may nap), and /ferry/lcores says so.
        pl.wake_fd = net::rx_wake_fd(p, w.index);
        if (pl.wake_fd >= 0 && p.caps.rx_interrupts) {
            pl.arm = queue_arm;
            pl.disarm = queue_disarm;
        }
        if (!w.loop->add_poller(pl))
            return "lcore " + std::to_string(w.lcore) + ": cannot register rx queue " +
                   std::to_string(w.index) + " of port " + p.spec.name;
        w.queues.push_back(std::move(q));
    }
    if (app.proxy_shared) {
        // After the rx queues: what they received is answered in the same iteration.
        std::vector<proxy::port_ref> refs;
        for (size_t i = 0; i < app.ports.size(); ++i) {
            const net::port &p = app.ports[i];
            refs.push_back({w.tcp_layers[i].get(), p.pool, p.spec.address, p.spec.prefix_len,
                            p.spec.gateway.has_value(), p.spec.address6, p.spec.prefix6_len,
                            p.spec.gateway6.has_value() || (p.spec.address6 && p.spec.router_discovery)});
        }
        // Test knob of the integration test (test_http): every n-th
        // cross-core send of the proxy counts as refused (its backlog path).
        proxy::proxy_options popts;
        if (const char *e = std::getenv("FERRY_XCORE_REFUSE_EVERY"); e != nullptr)
            popts.xcore_refuse_every = static_cast<uint32_t>(std::strtoul(e, nullptr, 10));
        w.proxy = std::make_unique<proxy::worker_proxy>(app.cfg, refs, w.index, *app.proxy_shared,
                                                        w.loop->timers(),
                                                        reactor::reactor::now_ns(), popts);
        if (app.mesh) {
            // Shared upstream pools hand requests to the owning worker.
            w.proxy->set_xcore(
                app.mesh->workers(),
                [](void *ctx, unsigned peer, const xcore::message &m) noexcept {
                    auto &wk = *static_cast<worker *>(ctx);
                    return wk.out != nullptr && wk.out->send(peer, m);
                },
                &w);
        }
        if (std::string err = w.proxy->listen(reactor::reactor::now_ns()); !err.empty())
            return err;
        reactor::poller pp;
        pp.poll = [](void *ctx, uint64_t now) -> uint32_t {
            auto &wk = *static_cast<worker *>(ctx);
            // A reload's safe point (reload.h): between two iterations, the
            // generation read first, then the configuration it published.
            if (const uint64_t g = the_app->reload.generation(); g != wk.config_generation) {
                std::shared_ptr<const config::ferry_config> next = the_app->reload.snapshot();
                // The proxy keeps it (and the ones before, while requests that
                // started under them are in flight).
                wk.proxy->reconfigure(next, now);
                wk.config = std::move(next);
                wk.config_generation = g;
            }
            return wk.proxy->poll(now);
        };
        pp.pending = [](void *ctx) -> bool {
            return static_cast<worker *>(ctx)->proxy->pending();
        };
        pp.expecting = [](void *ctx) -> bool {
            return static_cast<worker *>(ctx)->proxy->exchanges_in_flight();
        };
        pp.ctx = &w;
        pp.wake_fd = reactor::poller::no_wake_fd_needed;
        if (!w.loop->add_poller(pp)) return "cannot register the HTTP proxy";
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
    w->loop->run(stop_requested.flag());
    // Whoever stops first wakes the others: a sleeping worker would not see
    // the stop flag until its next timer otherwise.
    wake_all_workers();
    if (w->proxy) {
        uint64_t now = reactor::reactor::now_ns();
        the_app->proxy_shared->draining.store(true, std::memory_order_relaxed);
        if (const uint32_t grace = the_app->reload.snapshot()->http.drain_grace_ms; grace != 0) {
            // The grace: readiness (/healthz) answers 503 from the stop request
            // on, and ferry goes on serving, new connections too, while a
            // balancer in front notices. The loop runs as before (it may
            // sleep) until the grace timer ends it.
            w->proxy->begin_grace();
            std::atomic<bool> over{false};
            reactor::timer t;
            t.set_callback(
                [](void *ctx, uint64_t) {
                    static_cast<std::atomic<bool> *>(ctx)->store(true, std::memory_order_relaxed);
                },
                &over);
            w->loop->timers().arm(t, now + uint64_t(grace) * 1'000'000u);
            w->loop->run(over);
            w->loop->timers().cancel(t);
            now = reactor::reactor::now_ns();
        }
        // Graceful shutdown: no new connections, in-flight requests finish
        // (their clients are closed after the response), up to drain_timeout.
        w->proxy->begin_drain(now);
        const uint64_t deadline =
            now + uint64_t(the_app->reload.snapshot()->http.drain_timeout_ms) * 1'000'000u;
        while (w->proxy->open_connections() != 0 && now < deadline) {
            w->loop->run_once(now);
            now = reactor::reactor::now_ns();
        }
        if (w->proxy->open_connections() != 0) {
            w->proxy->abort_all(now);
            for (int i = 0; i < 4; ++i) w->loop->run_once(reactor::reactor::now_ns());
        }
    }
    return 0;
}

}  // namespace ferry::app
