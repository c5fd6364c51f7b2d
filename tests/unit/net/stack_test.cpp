// The stack on real mbufs: crafted frames in, exact frames and counters out.
// Every test also checks that each mbuf came back to the pool exactly once.
#include "ferry/net/stack.h"

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fixtures.h"
#include "stack_test_env.h"
#include "test_util.h"

namespace ferry::net {
namespace {

using test::PrintTo;

using namespace test;

constexpr uint64_t sec = 1'000'000'000;

const ipv4_addr our_ip = ipv4_addr::from_octets(10, 0, 0, 1);
const ipv4_addr peer_ip = ipv4_addr::from_octets(10, 0, 0, 2);
const ipv4_addr remote_ip = ipv4_addr::from_octets(192, 0, 2, 7);
const mac_addr peer = mac_addr({0x02, 0, 0, 0, 0, 0x02});

iface_config default_config() {
    iface_config c;
    c.mac = mac_addr({0x02, 0, 0, 0, 0, 0x01});
    c.addr = our_ip;
    c.prefix_len = 24;
    c.gateway = ipv4_addr::from_octets(10, 0, 0, 254);
    return c;
}

uint64_t counter_value(const net_counters &c, std::string_view name) {
    for (const auto &f : net_counter_fields) {
        if (name == f.name) {
            return (c.*f.member).get();
        }
    }
    ADD_FAILURE() << "no counter " << name;
    return 0;
}

bool is_drop_counter(std::string_view name) {
    return name.find("_drop") != std::string_view::npos || name == "arp_conflict" ||
           name == "tx_alloc_fail" || name == "neigh_table_full";
}

// Builds an mbuf chain holding `data`, cut into segments at `cuts`.
rte_mbuf *make_mbuf(const bytes &data, const std::vector<std::size_t> &cuts = {}) {
    rte_mbuf *head = nullptr;
    std::size_t from = 0;
    std::vector<std::size_t> ends = cuts;
    ends.push_back(data.size());
    for (std::size_t to : ends) {
        rte_mbuf *seg = rte_pktmbuf_alloc(g_pool);
        if (seg == nullptr) {
            ADD_FAILURE() << "pool empty";
            return head;
        }
        char *p = rte_pktmbuf_append(seg, static_cast<uint16_t>(to - from));
        if (p == nullptr) {
            ADD_FAILURE() << "segment too long";
            rte_pktmbuf_free(seg);
            return head;
        }
        std::memcpy(p, data.data() + from, to - from);
        if (head == nullptr) {
            head = seg;
        } else if (rte_pktmbuf_chain(head, seg) != 0) {
            ADD_FAILURE() << "chain";
        }
        from = to;
    }
    return head;
}

bytes mbuf_bytes(const rte_mbuf *m) {
    bytes out;
    for (const rte_mbuf *s = m; s != nullptr; s = s->next) {
        const auto *p = rte_pktmbuf_mtod(s, const uint8_t *);
        out.insert(out.end(), p, p + s->data_len);
    }
    return out;
}

class StackTest : public testing::Test {
protected:
    void SetUp() override { start(default_config()); }

    void start(const iface_config &cfg) {
        ASSERT_NE(g_pool, nullptr) << "EAL or mbuf pool unavailable";
        st_.reset();
        if (!avail0_) {
            avail0_ = rte_mempool_avail_count(g_pool);
        }
        st_.emplace(cfg, g_pool, ctr_);
    }

    void TearDown() override {
        st_.reset();  // frees whatever is still queued or waiting for ARP
        if (g_pool != nullptr && avail0_) {
            EXPECT_EQ(rte_mempool_avail_count(g_pool), *avail0_) << "mbuf leak or double free";
        }
    }

    void input(const bytes &frame, uint64_t now = 0, const std::vector<std::size_t> &cuts = {}) {
        rte_mbuf *m = make_mbuf(frame, cuts);
        ASSERT_NE(m, nullptr);
        rte_mbuf *burst[] = {m};
        st_->input_burst(burst, now);
    }

    // Takes every frame queued for tx: checks the chain, copies it, frees it.
    std::vector<bytes> take_tx() {
        std::vector<bytes> out;
        const auto pending = st_->tx_pending();
        for (rte_mbuf *m : pending) {
            const char *reason = nullptr;
            EXPECT_EQ(rte_mbuf_check(m, 1, &reason), 0) << (reason ? reason : "");
            out.push_back(mbuf_bytes(m));
            EXPECT_EQ(out.back().size(), rte_pktmbuf_pkt_len(m));
            rte_pktmbuf_free(m);
        }
        st_->tx_consumed(static_cast<uint16_t>(pending.size()));
        return out;
    }

    uint64_t count(std::string_view name) const { return counter_value(ctr_, name); }

    // Exactly one drop counter moved, by one, and it is `name`.
    void expect_only_drop(std::string_view name) {
        for (const auto &f : net_counter_fields) {
            if (is_drop_counter(f.name)) {
                EXPECT_EQ((ctr_.*f.member).get(), name == f.name ? 1u : 0u) << f.name;
            }
        }
    }

    net_counters ctr_;
    std::optional<stack> st_;
    std::optional<unsigned> avail0_;
};

// ---------------------------------------------------------------- ARP

TEST_F(StackTest, AnswersArpRequestInPlace) {
    input(to_bytes(fixtures::arp_request_for_us), 5);
    const auto tx = take_tx();
    ASSERT_EQ(tx.size(), 1u);
    EXPECT_EQ(hex(tx[0]), hex(to_bytes(fixtures::arp_reply_to_peer)));
    EXPECT_EQ(count("arp_rx"), 1u);
    EXPECT_EQ(count("arp_requests_answered"), 1u);
    EXPECT_EQ(count("neigh_learned"), 1u);  // RFC 826: we are the target, so add the sender
    EXPECT_EQ(count("tx_frames"), 1u);
    EXPECT_EQ(st_->neighbors().lookup(peer_ip, 5), peer);
    EXPECT_EQ(st_->next_deadline(), 5 + 60 * sec);
    expect_only_drop("none");
}

TEST_F(StackTest, AnswersArpProbeWithoutLearning) {
    // RFC 5227 probe: sender IP 0.0.0.0. Answer (as Linux does), bind nothing.
    input(to_bytes(fixtures::arp_probe_for_us));
    const auto tx = take_tx();
    ASSERT_EQ(tx.size(), 1u);
    EXPECT_EQ(hex(tx[0]), hex(to_bytes(fixtures::arp_reply_to_probe)));
    EXPECT_EQ(st_->neighbors().size(), 0u);
    EXPECT_EQ(count("neigh_learned"), 0u);
}

TEST_F(StackTest, UnsolicitedArpReplyForUsIsLearned) {
    input(to_bytes(fixtures::arp_reply_from_peer), 1);
    EXPECT_TRUE(take_tx().empty());
    EXPECT_EQ(count("arp_replies_rx"), 1u);
    EXPECT_EQ(count("neigh_learned"), 1u);
    EXPECT_EQ(st_->neighbors().lookup(peer_ip, 1), peer);
    expect_only_drop("none");
}

TEST_F(StackTest, GratuitousArpUpdatesOnlyKnownEntries) {
    arp_spec g;  // 10.0.0.2 announces itself with a new MAC
    g.sha = {0x02, 0, 0, 0, 0, 0x22};
    g.tpa = g.spa;
    const bytes frame = concat({eth_header(bcast_mac, g.sha, 0x0806), build_arp(g)});
    input(frame, 1);  // unknown: RFC 826 adds nothing when we are not the target
    EXPECT_EQ(st_->neighbors().size(), 0u);
    input(to_bytes(fixtures::arp_reply_from_peer), 2);
    ASSERT_EQ(st_->neighbors().lookup(peer_ip, 2), peer);
    input(frame, 3);  // known: merged
    EXPECT_EQ(st_->neighbors().lookup(peer_ip, 3), mac_addr({0x02, 0, 0, 0, 0, 0x22}));
    EXPECT_EQ(count("neigh_updated"), 1u);
    EXPECT_EQ(count("arp_drop_not_ours"), 2u);
    EXPECT_TRUE(take_tx().empty());
}

// Issue 13, bug 3: every ARP packet re-shared its (unchanged) binding with
// every other lcore. Only real changes go out at once (a new binding, a new
// MAC, at most one per 100 ms per address); a binding that did not change is
// re-shared at most once per half a neighbour timeout, to keep the other
// lcores' entries fresh. What is held back is counted.
TEST_F(StackTest, OnlyChangedBindingsAreSharedWithOtherLcores) {
    struct shared_log {
        std::vector<std::pair<ip_addr, mac_addr>> got;
        static void hook(void *ctx, const ip_addr &ip, mac_addr mac) noexcept {
            static_cast<shared_log *>(ctx)->got.emplace_back(ip, mac);
        }
    } log;
    st_->set_neighbor_hook(&shared_log::hook, &log);
    const bytes req = to_bytes(fixtures::arp_request_for_us);
    for (int i = 0; i < 100; ++i) input(req, 1 + uint64_t(i) * 1'000'000);  // 100 in 100 ms
    take_tx();
    ASSERT_EQ(log.got.size(), 1u) << "an unchanged binding was re-shared";
    EXPECT_EQ(log.got[0].first, peer_ip);
    EXPECT_EQ(log.got[0].second, peer);
    EXPECT_EQ(count("neigh_learned"), 1u);
    EXPECT_EQ(count("neigh_refreshed"), 99u);
    EXPECT_EQ(count("neigh_updated"), 0u);
    EXPECT_EQ(count("neigh_share_suppressed"), 99u);
    // Half a neighbour timeout (30 s) later the unchanged binding goes out
    // once more, so the other lcores' entries do not expire.
    input(req, 31 * sec);
    take_tx();
    EXPECT_EQ(log.got.size(), 2u);
    // A new MAC is a change: shared at once.
    arp_spec a;
    a.sha = {0x02, 0, 0, 0, 0, 0x33};
    const bytes moved = concat({eth_header(our_mac, a.sha, 0x0806), build_arp(a)});
    input(moved, 32 * sec);
    take_tx();
    ASSERT_EQ(log.got.size(), 3u);
    EXPECT_EQ(log.got[2].second, mac_addr({0x02, 0, 0, 0, 0, 0x33}));
    EXPECT_EQ(count("neigh_updated"), 1u);
    // A MAC flapping faster than once per 100 ms is not re-shared each time.
    input(req, 32 * sec + 1'000'000);
    input(moved, 32 * sec + 2'000'000);
    take_tx();
    EXPECT_EQ(log.got.size(), 3u);
    EXPECT_EQ(count("neigh_share_suppressed"), 101u);
}

TEST_F(StackTest, Announce) {
    st_->announce(0);
    const auto tx = take_tx();
    ASSERT_EQ(tx.size(), 1u);
    EXPECT_EQ(hex(tx[0]), hex(to_bytes(fixtures::arp_announce)));
    EXPECT_EQ(count("arp_gratuitous_sent"), 1u);
}

// ---------------------------------------------------------------- ICMP

struct echo_case {
    const char *name;
    bytes request;
    bytes reply;
};

class StackEcho : public StackTest, public testing::WithParamInterface<echo_case> {};

TEST_P(StackEcho, RepliesInPlace) {
    input(GetParam().request);
    const auto tx = take_tx();
    ASSERT_EQ(tx.size(), 1u);
    EXPECT_EQ(hex(tx[0]), hex(GetParam().reply));
    EXPECT_EQ(count("ipv4_rx"), 1u);
    EXPECT_EQ(count("icmp_rx"), 1u);
    EXPECT_EQ(count("icmp_echo_replied"), 1u);
    expect_only_drop("none");
    // The reply goes back to the sender's MAC; nothing was resolved or learned.
    EXPECT_EQ(st_->neighbors().size(), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, StackEcho,
    testing::Values(
        echo_case{"ping", to_bytes(fixtures::echo_request), to_bytes(fixtures::echo_reply)},
        // The reply carries no options (Record Route is not updated).
        echo_case{"with_options", to_bytes(fixtures::echo_request_options),
                  to_bytes(fixtures::echo_reply)},
        // Ethernet padding of the request is not echoed back.
        echo_case{"padded", to_bytes(fixtures::echo_request_small_padded),
                  to_bytes(fixtures::echo_reply_small)},
        echo_case{"odd_length", to_bytes(fixtures::echo_request_odd),
                  to_bytes(fixtures::echo_reply_odd)},
        echo_case{"big", to_bytes(fixtures::echo_request_big), to_bytes(fixtures::echo_reply_big)},
        // All-zero reply: checksum must be 0xffff.
        echo_case{"all_zero_reply", to_bytes(fixtures::echo_request_zero),
                  to_bytes(fixtures::echo_reply_zero)}),
    [](const auto &info) { return std::string(info.param.name); });

TEST_F(StackTest, EchoAcrossSegmentsAtEveryCut) {
    const bytes req = to_bytes(fixtures::echo_request_big);
    const bytes rep = to_bytes(fixtures::echo_reply_big);
    // The first segment must hold the headers (max_header_bytes); every cut
    // after that, including odd ones in the middle of a checksum word.
    for (std::size_t cut = stack::max_header_bytes; cut < req.size(); ++cut) {
        input(req, 0, {cut});
        const auto tx = take_tx();
        ASSERT_EQ(tx.size(), 1u) << "cut " << cut;
        ASSERT_EQ(tx[0], rep) << "cut " << cut;
    }
    // Three segments, with padding spilling into the last one.
    bytes padded = concat({req, bytes(7, 0)});
    input(padded, 0, {301, padded.size() - 3});
    auto tx = take_tx();
    ASSERT_EQ(tx.size(), 1u);
    EXPECT_EQ(tx[0], rep);
    // Padding alone in the last segment: that segment is freed.
    input(padded, 0, {200, req.size()});
    tx = take_tx();
    ASSERT_EQ(tx.size(), 1u);
    EXPECT_EQ(tx[0], rep);
    EXPECT_EQ(count("icmp_echo_replied"), req.size() - stack::max_header_bytes + 2);
}

TEST_F(StackTest, EchoBadChecksumInLaterSegment) {
    bytes req = to_bytes(fixtures::echo_request_big);
    req[900] ^= 0x40;
    input(req, 0, {500});
    EXPECT_TRUE(take_tx().empty());
    expect_only_drop("icmp_drop_bad_checksum");
}

TEST_F(StackTest, SharedMbufIsCopiedNotModified) {
    const bytes req = to_bytes(fixtures::echo_request);
    rte_mbuf *m = make_mbuf(req);
    ASSERT_NE(m, nullptr);
    rte_mbuf_refcnt_update(m, 1);  // someone else (a capture tap) holds it too
    rte_mbuf *burst[] = {m};
    st_->input_burst(burst, 0);
    const auto tx = take_tx();
    ASSERT_EQ(tx.size(), 1u);
    EXPECT_EQ(hex(tx[0]), hex(to_bytes(fixtures::echo_reply)));
    EXPECT_EQ(mbuf_bytes(m), req);  // the other holder's view is intact
    EXPECT_EQ(rte_mbuf_refcnt_read(m), 1);
    rte_pktmbuf_free(m);
}

// ---------------------------------------------------------------- drops

bytes eth_ip(const ipv4_spec &ip, const bytes &dst_mac = our_mac) {
    return concat({eth_header(dst_mac, peer_mac, 0x0800), build_ipv4(ip)});
}

ipv4_spec icmp_ip(void (*f)(ipv4_spec &) = nullptr) {
    ipv4_spec s;
    s.payload = build_icmp({});
    if (f != nullptr) {
        f(s);
    }
    return s;
}

bytes eth_arp(void (*f)(arp_spec &)) {
    arp_spec s;
    f(s);
    return concat({eth_header(bcast_mac, peer_mac, 0x0806), build_arp(s)});
}

struct drop_case {
    const char *name;
    bytes frame;
    const char *counter;
    std::vector<std::size_t> cuts = {};
};

class StackDrop : public StackTest, public testing::WithParamInterface<drop_case> {};

TEST_P(StackDrop, DropsAndCounts) {
    input(GetParam().frame, 0, GetParam().cuts);
    EXPECT_TRUE(take_tx().empty());
    EXPECT_EQ(count("eth_rx"), 1u);
    expect_only_drop(GetParam().counter);
    EXPECT_EQ(st_->neighbors().size(), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Table, StackDrop,
    testing::Values(
        // Ethernet
        drop_case{"runt", bytes(10, 0), "eth_drop_runt"},
        drop_case{"other_mac", eth_ip(icmp_ip(), {0x02, 0, 0, 0, 0, 0x03}), "eth_drop_not_ours"},
        drop_case{"multicast_mac", eth_ip(icmp_ip(), {0x01, 0x00, 0x5e, 0, 0, 1}),
                  "eth_drop_multicast"},
        drop_case{
            "multicast_src",
            concat({eth_header(our_mac, {0x03, 0, 0, 0, 0, 2}, 0x0800), build_ipv4(icmp_ip())}),
            "eth_drop_bad_src"},
        drop_case{"vlan", concat({eth_header(our_mac, peer_mac, 0x8100), bytes(46, 0)}),
                  "eth_drop_vlan"},
        drop_case{"ipv6", concat({eth_header(our_mac, peer_mac, 0x86dd), bytes(46, 0)}),
                  "eth_drop_unknown_ethertype"},
        drop_case{"header_split", to_bytes(fixtures::echo_request), "eth_drop_header_split", {20}},
        // ARP
        drop_case{"arp_truncated",
                  concat({eth_header(bcast_mac, peer_mac, 0x0806), bytes{0, 1, 8, 0, 6, 4, 0, 1}}),
                  "arp_drop_malformed"},
        drop_case{"arp_hln_8", eth_arp([](arp_spec &s) {
                      s.hlen = 8;
                      s.tpa.resize(8);
                  }),
                  "arp_drop_malformed"},
        drop_case{"arp_ieee802", eth_arp([](arp_spec &s) { s.htype = 6; }), "arp_drop_unsupported"},
        drop_case{"arp_rarp", eth_arp([](arp_spec &s) { s.op = 3; }), "arp_drop_unsupported"},
        drop_case{"arp_multicast_sender", eth_arp([](arp_spec &s) { s.sha[0] = 0x01; }),
                  "arp_drop_bad_sender"},
        drop_case{"arp_broadcast_sender_ip", eth_arp([](arp_spec &s) {
                      s.spa = {255, 255, 255, 255};
                  }),
                  "arp_drop_bad_sender"},
        drop_case{"arp_not_for_us", eth_arp([](arp_spec &s) {
                      s.tpa = {10, 0, 0, 3};
                  }),
                  "arp_drop_not_ours"},
        drop_case{"arp_conflict", eth_arp([](arp_spec &s) {
                      s.spa = {10, 0, 0, 1};
                  }),
                  "arp_conflict"},
        // IPv4 header
        drop_case{"ip_truncated_header",
                  concat({eth_header(our_mac, peer_mac, 0x0800), bytes{0x45, 0, 0, 28, 0, 0}}),
                  "ipv4_drop_truncated"},
        drop_case{"ip_truncated_total", eth_ip(icmp_ip([](ipv4_spec &s) { s.total_len = 100; })),
                  "ipv4_drop_truncated"},
        drop_case{"ip_version_6", eth_ip(icmp_ip([](ipv4_spec &s) { s.ver_ihl = 0x65; })),
                  "ipv4_drop_bad_version"},
        drop_case{"ip_ihl_4", eth_ip(icmp_ip([](ipv4_spec &s) { s.ver_ihl = 0x44; })),
                  "ipv4_drop_bad_ihl"},
        drop_case{"ip_total_below_ihl", eth_ip(icmp_ip([](ipv4_spec &s) { s.total_len = 16; })),
                  "ipv4_drop_bad_length"},
        drop_case{"ip_bad_checksum", eth_ip(icmp_ip([](ipv4_spec &s) { s.checksum = 0xbad; })),
                  "ipv4_drop_bad_checksum"},
        // IPv4 policy
        drop_case{"ip_other_host", eth_ip(icmp_ip([](ipv4_spec &s) {
                      s.dst = {10, 0, 0, 9};
                  })),
                  "ipv4_drop_not_ours"},
        drop_case{"ip_limited_broadcast",
                  eth_ip(icmp_ip([](ipv4_spec &s) {
                             s.dst = {255, 255, 255, 255};
                         }),
                         bcast_mac),
                  "ipv4_drop_broadcast"},
        drop_case{"ip_subnet_broadcast",
                  eth_ip(icmp_ip([](ipv4_spec &s) {
                             s.dst = {10, 0, 0, 255};
                         }),
                         bcast_mac),
                  "ipv4_drop_broadcast"},
        drop_case{"ip_multicast", eth_ip(icmp_ip([](ipv4_spec &s) {
                      s.dst = {224, 0, 0, 1};
                  })),
                  "ipv4_drop_broadcast"},
        drop_case{"ip_unicast_in_link_broadcast", eth_ip(icmp_ip(), bcast_mac),
                  "ipv4_drop_link_broadcast"},
        drop_case{"src_zero", eth_ip(icmp_ip([](ipv4_spec &s) {
                      s.src = {0, 0, 0, 0};
                  })),
                  "ipv4_drop_bad_src"},
        drop_case{"src_loopback", eth_ip(icmp_ip([](ipv4_spec &s) {
                      s.src = {127, 0, 0, 1};
                  })),
                  "ipv4_drop_bad_src"},
        drop_case{"src_multicast", eth_ip(icmp_ip([](ipv4_spec &s) {
                      s.src = {224, 0, 0, 5};
                  })),
                  "ipv4_drop_bad_src"},
        drop_case{"src_class_e", eth_ip(icmp_ip([](ipv4_spec &s) {
                      s.src = {240, 0, 0, 1};
                  })),
                  "ipv4_drop_bad_src"},
        drop_case{"src_broadcast", eth_ip(icmp_ip([](ipv4_spec &s) {
                      s.src = {255, 255, 255, 255};
                  })),
                  "ipv4_drop_bad_src"},
        drop_case{"src_subnet_broadcast", eth_ip(icmp_ip([](ipv4_spec &s) {
                      s.src = {10, 0, 0, 255};
                  })),
                  "ipv4_drop_bad_src"},
        drop_case{"src_ours", eth_ip(icmp_ip([](ipv4_spec &s) {
                      s.src = {10, 0, 0, 1};
                  })),
                  "ipv4_drop_bad_src"},
        // A first fragment of 8 bytes cannot hold a transport header (RFC 1858).
        drop_case{"fragment_tiny_first", eth_ip(icmp_ip([](ipv4_spec &s) {
                      s.flags_frag = 0x2000;
                      s.payload = bytes(8, 0xaa);
                  })),
                  "ipv4_frag_drop_tiny"},
        // A fragment but the last whose payload is not a multiple of 8.
        drop_case{"fragment_odd_length", eth_ip(icmp_ip([](ipv4_spec &s) {
                      s.flags_frag = 0x2010;
                      s.payload = bytes(12, 0xaa);
                  })),
                  "ipv4_frag_drop_bad"},
        // Ending past 65535 bytes of datagram.
        drop_case{"fragment_past_65535", eth_ip(icmp_ip([](ipv4_spec &s) { s.flags_frag = 0x1fff; })),
                  "ipv4_frag_drop_bad"},
        drop_case{"udp", eth_ip(icmp_ip([](ipv4_spec &s) { s.protocol = 17; })),
                  "ipv4_drop_unknown_protocol"},
        drop_case{"tcp", eth_ip(icmp_ip([](ipv4_spec &s) { s.protocol = 6; })),
                  "tcp_drop_unimplemented"},
        // ICMP
        drop_case{"icmp_bad_checksum", eth_ip(icmp_ip([](ipv4_spec &s) { s.payload[9] ^= 0xff; })),
                  "icmp_drop_bad_checksum"},
        drop_case{"icmp_truncated", eth_ip(icmp_ip([](ipv4_spec &s) {
                      s.payload = {8, 0, 0xf7, 0xff};
                  })),
                  "icmp_drop_truncated"},
        drop_case{"icmp_echo_reply", eth_ip(icmp_ip([](ipv4_spec &s) {
                      icmp_spec i;
                      i.type = 0;
                      s.payload = build_icmp(i);
                  })),
                  "icmp_drop_unsupported"},
        drop_case{"icmp_timestamp", eth_ip(icmp_ip([](ipv4_spec &s) {
                      icmp_spec i;
                      i.type = 13;
                      s.payload = build_icmp(i);
                  })),
                  "icmp_drop_unsupported"},
        drop_case{"icmp_echo_code_1", eth_ip(icmp_ip([](ipv4_spec &s) {
                      icmp_spec i;
                      i.code = 1;
                      s.payload = build_icmp(i);
                  })),
                  "icmp_drop_unsupported"},
        drop_case{"icmp_oversize", eth_ip(icmp_ip([](ipv4_spec &s) {
                      icmp_spec i;
                      i.data = bytes(1500 - 20 - 8 + 1, 0x33);
                      s.payload = build_icmp(i);
                  })),
                  "icmp_drop_oversize"}),
    [](const auto &info) { return std::string(info.param.name); });

// RFC 1122 §3.2.1.7: a host "MUST NOT discard a datagram just because it
// was received with TTL less than 2". TTL 0 was dropped before
// (ipv4_drop_ttl_zero); now both are answered and counted.
TEST_F(StackTest, DatagramsWithTtlBelowTwoAreDelivered) {
    input(eth_ip(icmp_ip([](ipv4_spec &s) { s.ttl = 0; })));
    EXPECT_EQ(take_tx().size(), 1u);
    input(eth_ip(icmp_ip([](ipv4_spec &s) { s.ttl = 1; })));
    EXPECT_EQ(take_tx().size(), 1u);
    EXPECT_EQ(count("icmp_echo_replied"), 2u);
    EXPECT_EQ(count("ipv4_rx_ttl_below_2"), 2u);
    expect_only_drop("none");
}

// RFC 1122 §3.3.2: a host MUST reassemble. An echo request of 200 bytes in
// three fragments, sent out of order and with a duplicate, is answered as
// one; ferry dropped every fragment before (ipv4_drop_fragment).
TEST_F(StackTest, FragmentedEchoIsReassembledAndAnswered) {
    icmp_spec is;
    is.data = bytes(192, 0);
    for (size_t i = 0; i < is.data.size(); ++i) is.data[i] = static_cast<uint8_t>(i);
    const bytes icmp = build_icmp(is);  // an echo request of 8 + 192 bytes
    auto frag = [&](size_t off, size_t len, bool mf) {
        ipv4_spec s;
        s.ident = 0x4242;
        s.flags_frag = static_cast<uint16_t>((mf ? 0x2000 : 0) | (off / 8));
        s.payload = bytes(icmp.begin() + off, icmp.begin() + off + len);
        return eth_ip(s);
    };
    input(frag(128, 72, false));
    input(frag(0, 64, true));
    input(frag(0, 64, true));  // an exact duplicate
    EXPECT_TRUE(take_tx().empty());
    input(frag(64, 64, true));
    const auto tx = take_tx();
    ASSERT_EQ(tx.size(), 1u);
    EXPECT_EQ(count("ipv4_frag_rx"), 4u);
    EXPECT_EQ(count("ipv4_frag_reassembled"), 1u);
    EXPECT_EQ(count("ipv4_frag_drop_duplicate"), 1u);
    EXPECT_EQ(count("icmp_echo_replied"), 1u);
    // The reply: one datagram of 20 + 200 bytes carrying the same data.
    ASSERT_EQ(tx[0].size(), 14u + 20 + 200);
    EXPECT_EQ(tx[0][14 + 20], 0);  // echo reply
    EXPECT_EQ(bytes(tx[0].begin() + 14 + 20 + 8, tx[0].end()),
              bytes(icmp.begin() + 8, icmp.end()));
}

// RFC 5722: an overlapping fragment discards the whole datagram; a lone
// fragment is freed when its time runs out (poll_timers).
TEST_F(StackTest, OverlapDropsTheDatagramAndIncompleteOnesExpire) {
    auto frag = [&](uint16_t ident, size_t off, size_t len, bool mf) {
        ipv4_spec s;
        s.ident = ident;
        s.flags_frag = static_cast<uint16_t>((mf ? 0x2000 : 0) | (off / 8));
        s.payload = bytes(len, 0x5a);
        return eth_ip(s);
    };
    input(frag(1, 0, 64, true));
    input(frag(1, 56, 64, true));  // overlaps 56..63
    EXPECT_EQ(count("ipv4_frag_drop_overlap"), 1u);
    input(frag(1, 64, 8, false));  // the datagram is gone: a new one starts, held
    input(frag(2, 0, 64, true));
    EXPECT_TRUE(take_tx().empty());
    st_->poll_timers(31'000'000'000ull);
    EXPECT_EQ(count("ipv4_frag_drop_timeout"), 2u);
    EXPECT_EQ(count("ipv4_frag_reassembled"), 0u);
}

TEST_F(StackTest, EchoAtExactlyTheMtu) {
    icmp_spec i;
    i.data = bytes(1500 - 20 - 8, 0x33);
    ipv4_spec s;
    s.payload = build_icmp(i);
    input(eth_ip(s));
    const auto tx = take_tx();
    ASSERT_EQ(tx.size(), 1u);
    EXPECT_EQ(tx[0].size(), 1514u);
}

// ---------------------------------------------------------------- output and ARP resolution

TEST_F(StackTest, OutputResolvesThenSendsHeldPacket) {
    st_->output_ipv4(make_mbuf(to_bytes(fixtures::out_to_peer_unaddressed)), peer_ip, 0);
    auto tx = take_tx();
    ASSERT_EQ(tx.size(), 1u);
    EXPECT_EQ(hex(tx[0]), hex(to_bytes(fixtures::arp_request_for_peer)));
    EXPECT_EQ(count("arp_requests_sent"), 1u);
    EXPECT_EQ(st_->neighbors().state(peer_ip), neighbor_state::incomplete);
    EXPECT_EQ(st_->next_deadline(), 1 * sec);

    input(to_bytes(fixtures::arp_reply_from_peer), 100);
    tx = take_tx();
    ASSERT_EQ(tx.size(), 1u);
    EXPECT_EQ(hex(tx[0]), hex(to_bytes(fixtures::out_to_peer)));
    EXPECT_EQ(count("neigh_learned"), 1u);
    EXPECT_EQ(count("arp_replies_rx"), 1u);
    EXPECT_EQ(count("ipv4_tx"), 1u);

    // Now resolved: the next datagram goes straight out.
    st_->output_ipv4(make_mbuf(to_bytes(fixtures::out_to_peer_unaddressed)), peer_ip, 200);
    tx = take_tx();
    ASSERT_EQ(tx.size(), 1u);
    EXPECT_EQ(hex(tx[0]), hex(to_bytes(fixtures::out_to_peer)));
    EXPECT_EQ(count("arp_requests_sent"), 1u);
    expect_only_drop("none");
}

TEST_F(StackTest, OutputOffLinkResolvesTheGateway) {
    st_->output_ipv4(make_mbuf(to_bytes(fixtures::out_to_remote_unaddressed)), remote_ip, 0);
    const auto tx = take_tx();
    ASSERT_EQ(tx.size(), 1u);
    EXPECT_EQ(hex(tx[0]), hex(to_bytes(fixtures::arp_request_for_gw)));
    EXPECT_EQ(st_->neighbors().pending_count(ipv4_addr::from_octets(10, 0, 0, 254)), 1u);
}

TEST_F(StackTest, OutputOffLinkWithoutGatewayIsDropped) {
    iface_config c = default_config();
    c.gateway.reset();
    start(c);
    st_->output_ipv4(make_mbuf(to_bytes(fixtures::out_to_remote_unaddressed)), remote_ip, 0);
    EXPECT_TRUE(take_tx().empty());
    expect_only_drop("ipv4_drop_no_route");
}

TEST_F(StackTest, OutputBroadcastNeedsNoResolution) {
    st_->output_ipv4(make_mbuf(to_bytes(fixtures::out_to_peer_unaddressed)),
                     ipv4_addr::from_octets(10, 0, 0, 255), 0);
    const auto tx = take_tx();
    ASSERT_EQ(tx.size(), 1u);
    EXPECT_EQ(bytes(tx[0].begin(), tx[0].begin() + 6), bcast_mac);
    EXPECT_EQ(count("arp_requests_sent"), 0u);
}

TEST_F(StackTest, ArpRetriesThenGivesUpAndFrees) {
    st_->output_ipv4(make_mbuf(to_bytes(fixtures::out_to_peer_unaddressed)), peer_ip, 0);
    st_->output_ipv4(make_mbuf(to_bytes(fixtures::out_to_peer_unaddressed)), peer_ip, 10);
    EXPECT_EQ(take_tx().size(), 1u);  // one request for both
    st_->poll_timers(1 * sec - 1);
    EXPECT_TRUE(take_tx().empty());
    st_->poll_timers(1 * sec);
    auto tx = take_tx();
    ASSERT_EQ(tx.size(), 1u);
    EXPECT_EQ(hex(tx[0]), hex(to_bytes(fixtures::arp_request_for_peer)));
    EXPECT_EQ(st_->next_deadline(), 2 * sec);
    st_->poll_timers(2 * sec);
    EXPECT_EQ(take_tx().size(), 1u);
    EXPECT_EQ(count("arp_requests_sent"), 3u);
    st_->poll_timers(3 * sec);  // arp_max_tries = 3: give up
    EXPECT_TRUE(take_tx().empty());
    EXPECT_EQ(count("neigh_resolve_failed"), 1u);
    EXPECT_EQ(count("neigh_resolve_failed_drop"), 2u);
    EXPECT_EQ(st_->neighbors().size(), 0u);
    EXPECT_EQ(st_->next_deadline(), UINT64_MAX);
    // (TearDown checks both held mbufs went back to the pool.)
}

TEST_F(StackTest, HeldPacketsOverflowKeepsTheLatest) {
    for (std::size_t i = 0; i <= neighbor_table::max_pending; ++i) {
        bytes b = to_bytes(fixtures::out_to_peer_unaddressed);
        b[14 + 4] = static_cast<uint8_t>(i);  // IPv4 ID tags the datagram
        st_->output_ipv4(make_mbuf(b), peer_ip, 0);
    }
    EXPECT_EQ(count("neigh_pending_full_drop"), 1u);
    EXPECT_EQ(take_tx().size(), 1u);  // the ARP request
    input(to_bytes(fixtures::arp_reply_from_peer), 1);
    const auto tx = take_tx();
    ASSERT_EQ(tx.size(), neighbor_table::max_pending);
    for (std::size_t k = 0; k < tx.size(); ++k) {
        EXPECT_EQ(tx[k][14 + 4], k + 1) << "in order, the oldest (0) dropped";
    }
}

TEST_F(StackTest, NeighborExpiresThroughPollTimers) {
    input(to_bytes(fixtures::arp_reply_from_peer), 5);
    ASSERT_EQ(st_->next_deadline(), 5 + 60 * sec);
    st_->poll_timers(5 + 60 * sec - 1);
    EXPECT_EQ(count("neigh_expired"), 0u);
    st_->poll_timers(5 + 60 * sec);
    EXPECT_EQ(count("neigh_expired"), 1u);
    EXPECT_EQ(st_->neighbors().size(), 0u);
    EXPECT_EQ(st_->next_deadline(), UINT64_MAX);
}

// ---------------------------------------------------------------- tx queue

TEST_F(StackTest, TxQueueFullDropsNewFramesAndKeepsOrder) {
    for (uint16_t seq = 0; seq <= stack::tx_capacity; ++seq) {
        icmp_spec i;
        i.seq = seq;
        ipv4_spec s;
        s.payload = build_icmp(i);
        input(eth_ip(s));
    }
    EXPECT_EQ(st_->tx_pending().size(), stack::tx_capacity);
    EXPECT_EQ(count("tx_drop_full"), 1u);
    EXPECT_EQ(count("icmp_echo_replied"), stack::tx_capacity + 1);

    // The port took the first 1000: the rest keep their order.
    auto pending = st_->tx_pending();
    for (std::size_t k = 0; k < 1000; ++k) {
        rte_pktmbuf_free(pending[k]);
    }
    st_->tx_consumed(1000);
    EXPECT_EQ(count("tx_frames"), 1000u);
    pending = st_->tx_pending();
    ASSERT_EQ(pending.size(), stack::tx_capacity - 1000);
    // ICMP sequence number at 14 + 20 + 6.
    EXPECT_EQ(mbuf_bytes(pending[0])[41], 1000 & 0xff);
    // Room again; a new frame lands behind the survivors (after compaction).
    input(eth_ip(icmp_ip()));
    pending = st_->tx_pending();
    ASSERT_EQ(pending.size(), stack::tx_capacity - 1000 + 1);
    EXPECT_EQ(mbuf_bytes(pending.back())[41], 1);
    const auto tx = take_tx();
    EXPECT_EQ(tx.size(), stack::tx_capacity - 1000 + 1);
}

TEST_F(StackTest, TxConsumedMoreThanPendingIsClamped) {
    st_->announce(0);
    EXPECT_EQ(st_->tx_pending().size(), 1u);
    rte_pktmbuf_free(st_->tx_pending()[0]);
    st_->tx_consumed(5);
    EXPECT_TRUE(st_->tx_pending().empty());
    EXPECT_EQ(count("tx_frames"), 1u);
}

TEST_F(StackTest, BurstOfMixedFrames) {
    rte_mbuf *burst[] = {
        make_mbuf(to_bytes(fixtures::arp_request_for_us)),
        make_mbuf(bytes(10, 0)),
        make_mbuf(to_bytes(fixtures::echo_request)),
        make_mbuf(eth_ip(icmp_ip([](ipv4_spec &s) { s.checksum = 1; }))),
    };
    st_->input_burst(burst, 0);
    const auto tx = take_tx();
    ASSERT_EQ(tx.size(), 2u);
    EXPECT_EQ(hex(tx[0]), hex(to_bytes(fixtures::arp_reply_to_peer)));
    EXPECT_EQ(hex(tx[1]), hex(to_bytes(fixtures::echo_reply)));
    EXPECT_EQ(count("eth_rx"), 4u);
    EXPECT_EQ(count("eth_drop_runt"), 1u);
    EXPECT_EQ(count("ipv4_drop_bad_checksum"), 1u);
}

TEST(NetCounters, NamesAreUniqueAndDocumented) {
    std::vector<std::string> names;
    for (const auto &f : net_counter_fields) {
        EXPECT_NE(std::string(f.help), "") << f.name;
        for (const auto &n : names) {
            EXPECT_NE(n, f.name);
        }
        names.emplace_back(f.name);
    }
    // Plain counters only, padded to whole cache lines.
    EXPECT_GE(sizeof(net_counters), names.size() * sizeof(ferry::counter));
    EXPECT_LT(sizeof(net_counters), names.size() * sizeof(ferry::counter) + 64);
    EXPECT_EQ(alignof(net_counters), 64u);
}

// ---------------------------------------------------------------- IPv6
// Neighbour discovery and echo for a port with an IPv6 address; expected
// frames from an independent Python sum (RFC 8200 §8.1 pseudo-header).

bytes from_hex(std::string_view h) {
    bytes out;
    for (std::size_t i = 0; i + 1 < h.size(); i += 2)
        out.push_back(static_cast<uint8_t>(std::stoi(std::string(h.substr(i, 2)), nullptr, 16)));
    return out;
}

// fe80::2 (02:..:02) asks ff02::1:ff00:1 for fd00::1; our advertisement;
// fd00::2 pings fd00::1 (id 0x1234, seq 1, "pingdata"); our reply.
constexpr std::string_view ns6 =
    "3333ff00000102000000000286dd6000000000203afffe800000000000000000000000000002ff0200000000"
    "000000000001ff00000187007c1700000000fd0000000000000000000000000000010101020000000002";
constexpr std::string_view na6 =
    "02000000000202000000000186dd6000000000203afffd000000000000000000000000000001fe8000000000"
    "0000000000000000000288001b1c60000000fd0000000000000000000000000000010201020000000001";
constexpr std::string_view echo6 =
    "02000000000102000000000286dd6000000000103a40fd000000000000000000000000000002fd0000000000"
    "000000000000000000018000bbe71234000170696e6764617461";
constexpr std::string_view reply6 =
    "02000000000202000000000186dd6000000000103a40fd000000000000000000000000000001fd0000000000"
    "000000000000000000028100bae71234000170696e6764617461";

iface_config with_ipv6() {
    iface_config c = default_config();
    c.addr6 = ipv6_addr::parse("fd00::1");
    return c;
}

TEST_F(StackTest, WithoutAnIpv6AddressIpv6IsAnUnknownEthertype) {
    input(from_hex(echo6));
    EXPECT_TRUE(take_tx().empty());
    expect_only_drop("eth_drop_unknown_ethertype");
    input(from_hex(ns6));  // and its multicast group is no group of ours
    EXPECT_EQ(count("eth_drop_multicast"), 1u);
}

TEST_F(StackTest, AnswersANeighborSolicitationForItsIpv6Address) {
    start(with_ipv6());
    input(from_hex(ns6));
    const auto tx = take_tx();
    ASSERT_EQ(tx.size(), 1u);
    EXPECT_EQ(tx[0], from_hex(na6));
    EXPECT_EQ(count("nd_rx"), 1u);
    EXPECT_EQ(count("nd_advertised"), 1u);
    // For another target: valid, ignored. Not from the link: invalid.
    bytes other = from_hex(ns6);
    other[14 + 40 + 8 + 15] = 2;  // target fd00::2
    other[14 + 40 + 2] = 0x7c;    // its checksum, one less in the last word
    other[14 + 40 + 3] = 0x16;
    input(other);
    EXPECT_TRUE(take_tx().empty());
    EXPECT_EQ(count("nd_ignored"), 1u);
    bytes far = from_hex(ns6);
    far[14 + 7] = 64;  // hop limit
    input(far);
    EXPECT_TRUE(take_tx().empty());
    EXPECT_EQ(count("nd_drop_invalid"), 1u);
}

TEST_F(StackTest, AnswersAnIpv6EchoRequest) {
    start(with_ipv6());
    bytes req = from_hex(echo6);
    req.insert(req.end(), 6, 0);  // Ethernet padding is not echoed
    input(req);
    const auto tx = take_tx();
    ASSERT_EQ(tx.size(), 1u);
    EXPECT_EQ(tx[0], from_hex(reply6));
    EXPECT_EQ(count("icmpv6_echo_replied"), 1u);
    bytes bad = from_hex(echo6);
    bad.back() ^= 1;
    input(bad);
    EXPECT_TRUE(take_tx().empty());
    expect_only_drop("icmpv6_drop_bad_checksum");
    bytes other = from_hex(echo6);
    other[14 + 24 + 15] = 9;  // to fd00::9
    input(other);
    EXPECT_EQ(count("ipv6_drop_not_ours"), 1u);
    bytes unknown_type = from_hex(echo6);
    unknown_type[14 + 40] = 200;  // an ICMPv6 informational type we do not know
    input(unknown_type);
    EXPECT_EQ(count("ipv6_drop_unsupported"), 1u);
    EXPECT_TRUE(take_tx().empty());
    bytes udp = from_hex(echo6);
    udp[14 + 6] = 17;  // next header UDP: ferry has none (ipv6_ext_test.cpp has the details)
    input(udp);
    EXPECT_EQ(count("ipv6_drop_unknown_next"), 1u);
    EXPECT_EQ(count("icmpv6_param_problem_sent"), 1u);
    EXPECT_EQ(take_tx().size(), 1u);
    bytes frag = from_hex(echo6);
    frag[14 + 6] = 44;  // a fragment header: to reassembly (ipv6_frag_test.cpp has the details)
    input(frag);
    EXPECT_EQ(count("ipv6_frag_rx"), 1u);
    EXPECT_TRUE(take_tx().empty());
}

}  // namespace
}  // namespace ferry::net
