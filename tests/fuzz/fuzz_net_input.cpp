// Fuzz target: arbitrary bytes as a received Ethernet frame, through every
// wire view and through the whole per-lcore stack (Ethernet -> ARP / IPv4 ->
// ICMP), as one segment or split into a two-segment mbuf chain.
//
// Oracles besides the sanitizers: every frame the stack transmits in answer
// parses as Ethernet and, if IPv4, has a valid header checksum; and no mbuf
// is lost (the pool's free count returns to where it was once the answers are
// freed): "bad input is counted and loses nothing else".
//
// Built two ways: with clang's -fsanitize=fuzzer for real fuzzing, and with
// smoke_main.cpp for the fuzz-smoke suite (a bounded deterministic mutation run).
#include <rte_mbuf.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "ferry/net/arp.h"
#include "ferry/net/counters.h"
#include "ferry/net/ethernet.h"
#include "ferry/net/icmp.h"
#include "ferry/net/ipv4.h"
#include "ferry/net/stack.h"
#include "fuzz_target.h"
#include "test_eal.h"

namespace {

using namespace ferry::net;

struct harness {
    rte_mempool *pool = nullptr;
    net_counters counters;
    stack *st = nullptr;
    uint64_t now = 1'000'000'000;
};

harness *make_harness() {
    if (!ferry::test::eal_start("fuzz", "ferry-fuzz", 64)) std::abort();
    auto *h = new harness;
    h->pool =
        rte_pktmbuf_pool_create("fuzz", 2047, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
    if (h->pool == nullptr) std::abort();
    iface_config cfg;
    cfg.mac = *mac_addr::parse("02:00:00:00:00:01");
    cfg.addr = *ipv4_addr::parse("10.0.0.1");
    cfg.prefix_len = 24;
    h->st = new stack(cfg, h->pool, h->counters);
    // Leave no /var/run/dpdk/<prefix> behind.
    std::atexit([] { ferry::test::eal_stop(); });
    return h;
}

// Lives for the whole process (the fuzzer calls the target until it exits).
harness &get() {
    static harness *h = make_harness();
    return *h;
}

void check_reply(rte_mbuf *m) {
    const uint32_t len = rte_pktmbuf_pkt_len(m);
    if (m->nb_segs != 1) return;  // replies are built in place; chains stay chains
    std::span<uint8_t> data(rte_pktmbuf_mtod(m, uint8_t *), rte_pktmbuf_data_len(m));
    auto eth = ethernet_frame::new_checked(data);
    if (!eth) {
        std::fprintf(stderr, "fuzz: stack sent a frame that is not Ethernet (%u bytes)\n", len);
        std::abort();
    }
    if (eth->type() == ether_type::ipv4) {
        auto ip = ipv4_packet::new_checked(eth->payload());
        if (!ip || !ip->verify_checksum()) {
            std::fprintf(stderr, "fuzz: stack sent an IPv4 packet with a bad header\n");
            std::abort();
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    harness &h = get();
    // The wire views alone, on the raw bytes (const copy: views may write).
    {
        std::basic_string<uint8_t> copy(data, size);
        std::span<uint8_t> s(copy.data(), copy.size());
        if (auto e = ethernet_frame::new_checked(s)) {
            (void)arp_packet::new_checked(e->payload());
            if (auto ip = ipv4_packet::new_checked(e->payload()))
                (void)icmpv4_packet::new_checked(ip->payload());
        }
        (void)ipv4_packet::new_checked(s);
        (void)arp_packet::new_checked(s);
        (void)icmpv4_packet::new_checked(s);
    }

    // Fragments are held for reassembly between inputs (and combine across
    // them): the pool's free count plus what reassembly holds is what must
    // come back.
    const unsigned before = rte_mempool_avail_count(h.pool) + h.st->fragments_held();
    const uint16_t room = static_cast<uint16_t>(RTE_MBUF_DEFAULT_DATAROOM);
    if (size > 2u * room) size = 2u * room;
    // The first byte picks a split point: exercise multi-segment input too.
    const size_t split = size > 1 && (data[0] & 1) ? (data[0] % size) : size;
    rte_mbuf *head = rte_pktmbuf_alloc(h.pool);
    if (head == nullptr) std::abort();
    const size_t first = split < size ? split : (size < room ? size : room);
    std::memcpy(rte_pktmbuf_append(head, static_cast<uint16_t>(first)), data, first);
    if (first < size) {
        rte_mbuf *tail = rte_pktmbuf_alloc(h.pool);
        if (tail == nullptr) std::abort();
        const size_t rest = size - first;
        std::memcpy(rte_pktmbuf_append(tail, static_cast<uint16_t>(rest)), data + first, rest);
        if (rte_pktmbuf_chain(head, tail) != 0) std::abort();
    }
    rte_mbuf *pkts[1] = {head};
    h.now += 1'000'000;
    h.st->input_burst(std::span<rte_mbuf *const>(pkts, 1), h.now);
    h.st->poll_timers(h.now);
    auto tx = h.st->tx_pending();
    for (rte_mbuf *m : tx) check_reply(m);
    rte_pktmbuf_free_bulk(tx.data(), static_cast<unsigned>(tx.size()));
    h.st->tx_consumed(static_cast<uint16_t>(tx.size()));
    const unsigned after = rte_mempool_avail_count(h.pool) + h.st->fragments_held();
    if (after != before) {
        std::fprintf(stderr, "fuzz: mbufs lost: %u before, %u after (free + held for reassembly)\n",
                     before, after);
        std::abort();
    }
    return 0;
}

// Called by the smoke driver after its run: prints the stack's counters that
// moved and fails if the run never reached the deep paths (then the mutants
// no longer resemble frames for us and the smoke run proves nothing).
extern "C" int fuzz_report() {
    harness &h = get();
    for (const auto &f : net_counter_fields)
        if (const uint64_t v = (h.counters.*(f.member)).get(); v != 0)
            std::printf("  %-28s %llu\n", f.name, static_cast<unsigned long long>(v));
    const bool deep = h.counters.icmp_echo_replied.get() > 0 &&
                      h.counters.arp_requests_answered.get() > 0 &&
                      h.counters.ipv4_drop_bad_checksum.get() > 0;
    if (!deep)
        std::fprintf(stderr,
                     "fuzz: the run never reached an ICMP reply, an ARP reply and a bad IPv4 "
                     "checksum drop: too few iterations, or the harness no longer reaches them\n");
    return deep ? 0 : 1;
}
