// Helpers of the tests that feed a tcp_layer segments (tcp_layer_test,
// tcp_ipv6_test).
#pragma once

#include <rte_mbuf.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "ferry/net/ipv6.h"
#include "ferry/net/stack.h"
#include "ferry/net/tcp.h"
#include "test_util.h"

namespace ferry::net::test {

// A TCP header: ports, sequence numbers, flags, a full window.
inline tcp_repr tcp_seg(uint16_t sport, uint16_t dport, uint32_t seq, uint8_t flags,
                        uint32_t ack = 0) {
    tcp_repr h;
    h.src_port = sport;
    h.dst_port = dport;
    h.seq = seq_num(seq);
    h.ack = seq_num(ack);
    h.flags = flags;
    h.window = 65535;
    return h;
}

// Every frame `st` queued for tx as bytes (a chain flattened), oldest
// first; the mbufs are freed and the queue emptied.
inline std::vector<bytes> take_tx_frames(stack &st) {
    std::vector<bytes> out;
    for (rte_mbuf *m : st.tx_pending()) {
        bytes f;
        for (const rte_mbuf *s = m; s != nullptr; s = s->next) {
            const auto *p = rte_pktmbuf_mtod(s, const uint8_t *);
            f.insert(f.end(), p, p + s->data_len);
        }
        rte_pktmbuf_free(m);
        out.push_back(std::move(f));
    }
    st.tx_consumed(static_cast<uint16_t>(st.tx_pending().size()));
    return out;
}

// A frame ferry sent, its IPv6 parts taken apart (the fixed header checked:
// version 6, the payload length matching the frame).
struct frame_out {
    bytes eth_dst, eth_src;
    uint16_t ethertype = 0;
    uint8_t next_header = 0, hop_limit = 0;
    ipv6_addr src, dst;
    bytes l4;  // the upper-layer message (extension headers included, if any)
};

// Every free mbuf of a pool held from construction until give_back() or the
// end of scope: the pool is dry in between (the exhaustion tests).
class pool_dry {
public:
    explicit pool_dry(rte_mempool *pool) {
        while (rte_mbuf *m = rte_pktmbuf_alloc(pool)) held_.push_back(m);
    }
    ~pool_dry() { give_back(held_.size()); }
    pool_dry(const pool_dry &) = delete;
    pool_dry &operator=(const pool_dry &) = delete;
    // Returns `n` of the held mbufs to the pool (the next `n` allocations
    // succeed).
    void give_back(std::size_t n) {
        for (; n != 0 && !held_.empty(); --n) {
            rte_pktmbuf_free(held_.back());
            held_.pop_back();
        }
    }

private:
    std::vector<rte_mbuf *> held_;
};

inline frame_out parse_frame(const bytes &f) {
    frame_out o;
    o.eth_dst.assign(f.begin(), f.begin() + 6);
    o.eth_src.assign(f.begin() + 6, f.begin() + 12);
    o.ethertype = static_cast<uint16_t>(f[12] << 8 | f[13]);
    if (o.ethertype == 0x86dd && f.size() >= 54) {
        EXPECT_EQ(f[14] >> 4, 6);
        const std::size_t plen = f[18] << 8 | f[19];
        EXPECT_EQ(f.size(), 54 + plen) << "payload length";
        o.next_header = f[20];
        o.hop_limit = f[21];
        o.src = ipv6_addr::from_bytes(std::span<const uint8_t, 16>(f.data() + 22, 16));
        o.dst = ipv6_addr::from_bytes(std::span<const uint8_t, 16>(f.data() + 38, 16));
        o.l4.assign(f.begin() + 54, f.end());
    }
    return o;
}

}  // namespace ferry::net::test
