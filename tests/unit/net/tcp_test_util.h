// Helpers of the tests that feed a tcp_layer segments (tcp_layer_test,
// tcp_ipv6_test).
#pragma once

#include <rte_mbuf.h>

#include <cstdint>

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

}  // namespace ferry::net::test
