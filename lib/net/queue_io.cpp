#include "ferry/net/queue_io.h"

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <cstring>
#include <span>

#include "ferry/net/packet_io.h"
#include "ferry/net/stack.h"

namespace ferry::net {
namespace {

// Room for a burst, its duplicates and the frames the fault injector releases.
constexpr uint16_t rx_room = 2 * queue_io::burst + fault_injector::release_room;

}  // namespace

queue_io::queue_io(uint16_t port_id, uint16_t queue, stack &st, io_counters &io,
                   const fault_params *fault, rte_mempool *pool)
    : port_id_(port_id), queue_(queue), st_(st), io_(io), pool_(pool) {
    if (fault != nullptr) fault_ = std::make_unique<fault_injector>(*fault, pool, fault_ctr_);
    if (pool_ != nullptr) reserve_ = std::max<uint32_t>(64, pool_->size / 8);
}

void queue_io::sample_pressure() noexcept {
    if (pool_ == nullptr) return;
    if (!pressure_ && sample_in_ != 0) {
        --sample_in_;
        return;
    }
    sample_in_ = pressure_period;
    const bool on = rte_mempool_avail_count(pool_) < reserve_;
    if (on == pressure_) return;
    pressure_ = on;
    if (on) io_.mem_pressure.inc();
    st_.set_mem_pressure(on);
}

queue_io::~queue_io() {
    if (stash_n_ != 0) rte_pktmbuf_free_bulk(stash_, stash_n_);
}

uint32_t queue_io::poll(uint64_t now) noexcept {
    uint32_t work = 0;
    uint16_t n;
    rte_mbuf **pkts;
    rte_mbuf *fresh[rx_room];
    if (stash_n_ != 0) {  // frames the pre-sleep re-check received
        pkts = stash_;
        n = stash_n_;
        stash_n_ = 0;
        if (fault_) {
            std::memcpy(fresh, stash_, n * sizeof(rte_mbuf *));
            pkts = fresh;
        }
    } else {
        pkts = fresh;
        if (pkt_ != nullptr) (void)pkt_->receive(pool_);
        n = rte_eth_rx_burst(port_id_, queue_, fresh, burst);
    }
    if (fault_) n = fault_->rx(pkts, n, rx_room, now);
    if (n != 0) {
        sample_pressure();
        io_.rx_packets.inc(n);
        io_.rx_bursts.inc();
        st_.input_burst(std::span<rte_mbuf *const>(pkts, n), now);
        work += n;
    }
    if (st_.next_deadline() <= now) {
        st_.poll_timers(now);
        ++work;
    }
    return work;
}

bool queue_io::pending() noexcept {
    if (stash_n_ == 0) {
        if (pkt_ != nullptr) (void)pkt_->receive(pool_);
        stash_n_ = rte_eth_rx_burst(port_id_, queue_, stash_, burst);
    }
    // Frames the kernel refused a moment ago go out at the next flush, not
    // when a timer next wakes this lcore.
    return stash_n_ != 0 || (pkt_ != nullptr && pkt_->tx_held());
}

uint64_t queue_io::next_deadline() const noexcept {
    const uint64_t d = st_.next_deadline();
    return fault_ ? std::min(d, fault_->next_deadline()) : d;
}

void queue_io::arm() noexcept { (void)rte_eth_dev_rx_intr_enable(port_id_, queue_); }

void queue_io::disarm() noexcept { (void)rte_eth_dev_rx_intr_disable(port_id_, queue_); }

void queue_io::flush(uint64_t now) noexcept {
    if (fault_) {
        flush_faulty(now);
    } else {
        flush_plain();
    }
    // net_ferry_packet: what the ethdev queued leaves through the socket now.
    if (pkt_ != nullptr) (void)pkt_->transmit();
}

void queue_io::flush_plain() noexcept {
    auto tx = st_.tx_pending();
    if (tx.empty()) return;
    const uint16_t sent =
        rte_eth_tx_burst(port_id_, queue_, tx.data(), static_cast<uint16_t>(tx.size()));
    io_.tx_packets.inc(sent);
    st_.tx_consumed(sent);
    if (sent == tx.size()) {
        tx_stuck_ = 0;
        return;
    }
    io_.tx_short_bursts.inc();
    if (++tx_stuck_ >= tx_stuck_limit) {
        auto rest = st_.tx_pending();
        rte_pktmbuf_free_bulk(rest.data(), static_cast<unsigned>(rest.size()));
        io_.tx_drop_stuck.inc(rest.size());
        st_.tx_consumed(static_cast<uint16_t>(rest.size()));
        tx_stuck_ = 0;
    }
}

// flush() through the fault injector: the stack's batch is taken over into a
// local array (the injector reorders and duplicates in it); what the NIC
// refuses is freed and counted (a test mode: TCP recovers from it).
void queue_io::flush_faulty(uint64_t now) noexcept {
    constexpr uint16_t cap = 2 * burst + fault_injector::release_room;
    rte_mbuf *pkts[cap];
    for (;;) {
        auto tx = st_.tx_pending();
        const auto n = static_cast<uint16_t>(std::min<size_t>(tx.size(), burst));
        if (n == 0 && !(fault_->holding(fault_direction::tx) &&
                        fault_->next_deadline(fault_direction::tx) <= now))
            return;
        std::memcpy(pkts, tx.data(), n * sizeof(rte_mbuf *));
        st_.tx_consumed(n);
        const uint16_t m = fault_->tx(pkts, n, cap, now);
        uint16_t sent = 0;
        for (int tries = 0; sent < m && tries < 4; ++tries)
            sent = static_cast<uint16_t>(
                sent +
                rte_eth_tx_burst(port_id_, queue_, pkts + sent, static_cast<uint16_t>(m - sent)));
        io_.tx_packets.inc(sent);
        if (sent < m) {
            rte_pktmbuf_free_bulk(pkts + sent, m - sent);
            io_.tx_drop_stuck.inc(m - sent);
        }
        if (n == 0) return;
    }
}

}  // namespace ferry::net
