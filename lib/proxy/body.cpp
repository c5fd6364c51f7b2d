// The body pump: one loop moves a message body from its source endpoint to a
// sink (a local endpoint, or another worker over lib/xcore), in either
// direction; client.cpp and upstream.cpp map its result to their side's
// actions.
#include "internal.h"

#include <rte_mbuf.h>

#include <algorithm>

#include "ferry/net/mbuf_chain.h"

namespace ferry::proxy {

namespace {

// Feeds the piece's bytes to the framer segment by segment; returns the
// bytes that belong to the body and the framer's last result.
http::body_framer::feed_result feed_piece(http::body_framer &f, const net::tcp_rx_piece &p) noexcept {
    http::body_framer::feed_result total;
    uint32_t off = p.off, left = p.len;
    for (const rte_mbuf *s = p.m; s != nullptr && left > 0; s = s->next) {
        if (off >= s->data_len) {
            off -= s->data_len;
            continue;
        }
        const uint32_t k = std::min<uint32_t>(s->data_len - off, left);
        const auto r = f.feed({rte_pktmbuf_mtod_offset(s, const char *, off), k});
        total.consumed += r.consumed;
        total.done = r.done;
        total.error = r.error;
        total.err = r.err;
        if (r.done || r.error || r.consumed < k) break;
        left -= k;
        off = 0;
    }
    return total;
}

}  // namespace

//
// One pump moves a body from its source endpoint (the framer says where it
// ends) to a sink, in either direction and whether the other side is local
// (an endpoint: its non-empty out queue is backpressure) or on another
// worker (data messages batched up to xcore_batch, one per credit). Body
// chains are never copied: a piece is taken whole, or split off with a clone.
bool worker_proxy::sink_ready(body_sink &s, uint64_t now) noexcept {
    if (s.dst != nullptr) return flush(*s.dst, now);
    return s.acc != nullptr || *s.credit != 0;
}

bool worker_proxy::sink_put(body_sink &s, rte_mbuf *m, uint32_t len, uint64_t now) noexcept {
    if (s.dst != nullptr) return push(*s.dst, m, now);
    if (s.acc == nullptr) {
        s.acc = m;
        --*s.credit;  // the batch's credit
    } else if (!net::chain_append(s.acc, m)) {
        rte_pktmbuf_free(m);
        return false;
    }
    s.acc_len += len;
    if (s.acc_len >= xcore_batch) sink_flush(s);
    return true;
}

void worker_proxy::sink_flush(body_sink &s) noexcept {
    if (s.acc == nullptr) return;
    if (s.sent != nullptr) *s.sent = true;
    xsend(s.peer, s.op, s.handle, 0, 0, s.acc);
    s.acc = nullptr;
    s.acc_len = 0;
}

worker_proxy::pump_result worker_proxy::pump_body(endpoint &src, body_sink &sink,
                                                  uint64_t body_limit, uint64_t rearm_ns,
                                                  uint64_t now) noexcept {
    for (;;) {
        if (!sink_ready(sink, now)) return {pump_end::blocked};  // read nothing more
        if (src.in_n == 0 && pull(src, now) == 0) {
            sink_flush(sink);
            return {src.eof ? pump_end::eof : pump_end::blocked};
        }
        net::tcp_rx_piece &p = src.front();
        const auto fr = feed_piece(src.framer, p);
        if (fr.error) {
            sink_flush(sink);  // what came before is good: in order, then the end
            return {pump_end::bad_framing, fr.err};
        }
        if (body_limit != 0 && src.framer.payload_bytes() > body_limit) {
            sink_flush(sink);
            return {pump_end::too_large};
        }
        if (fr.consumed != 0) {
            bool whole = false;
            rte_mbuf *m = take_front(p, fr.consumed, src.port, whole);
            if (whole) src.pop();
            if (m == nullptr || !sink_put(sink, m, fr.consumed, now)) {
                ctr_.no_buffer.inc();
                sink_flush(sink);
                return {pump_end::no_buffer};
            }
            timers_.arm(src.timer, now + rearm_ns);
        }
        if (fr.done) {
            sink_flush(sink);
            return {pump_end::done};
        }
    }
}

}  // namespace ferry::proxy
