// The body pump: one loop moves a message body from its source endpoint to a
// sink (a local endpoint, or another worker over lib/xcore), in either
// direction; client.cpp and upstream.cpp map its result to their side's
// actions.
#include "internal.h"

#include <rte_mbuf.h>

#include <algorithm>
#include <cstring>

#include "ferry/net/mbuf_chain.h"

namespace ferry::proxy {

namespace {

// Feeds the piece's bytes to the framer segment by segment, one run at most
// (http::body_framer::feed_run): payload bytes, or framing bytes with the
// canonical framing to send instead. Returns the run's bytes and the
// framer's last result.
http::body_framer::feed_result feed_piece(http::body_framer &f, const net::tcp_rx_piece &p) noexcept {
    http::body_framer::feed_result total;
    uint32_t off = p.off, left = p.len;
    bool first = true;
    for (const rte_mbuf *s = p.m; s != nullptr && left > 0; s = s->next) {
        if (off >= s->data_len) {
            off -= s->data_len;
            continue;
        }
        const uint32_t k = std::min<uint32_t>(s->data_len - off, left);
        const auto r = f.feed_run({rte_pktmbuf_mtod_offset(s, const char *, off), k});
        if (first) total.data = r.data;
        first = false;
        total.consumed += r.consumed;
        total.done = r.done;
        total.error = r.error;
        total.err = r.err;
        if (!r.out.empty()) total.out = r.out;
        // The run ends inside this segment, or where the next one is of the
        // other kind (payload after framing, or framing after payload).
        const bool at_payload = f.current_state() == http::body_framer::state::data;
        if (r.done || r.error || r.consumed < k || at_payload != total.data) break;
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

worker_proxy::buf_body worker_proxy::body_from_buf(endpoint &src, uint16_t port,
                                                   bool framing) noexcept {
    // The payload and canonical framing are at most 2 bytes longer than
    // what they replace (a chunk's CRLF owed from an earlier call), and a
    // head buffer holds at most max_header_bytes (<= 64 KiB < scratch_size).
    buf_body b;
    char *out = scratch_.get();
    uint32_t n = 0, at = 0;
    while (at < src.buf_len) {
        const auto r = src.framer.feed_run({src.buf + at, src.buf_len - at});
        if (framing && !r.out.empty()) {
            std::memcpy(out + n, r.out.data(), r.out.size());
            n += static_cast<uint32_t>(r.out.size());
        }
        if (r.data && r.consumed != 0) {
            std::memcpy(out + n, src.buf + at, r.consumed);
            n += r.consumed;
        }
        at += r.consumed;
        b.fr = r;
        if (r.done || r.error || r.consumed == 0) break;
    }
    b.fr.consumed = at;
    if (b.fr.done) note_body_end(src.framer, framing);
    if (n != 0 && !b.fr.error) {
        b.m = chain_of(out, n, port);
        b.no_buffer = b.m == nullptr;
    }
    return b;
}

void worker_proxy::note_body_end(const http::body_framer &f, bool framing) noexcept {
    if (f.kind() != http::body_kind::chunked) return;
    if (framing)
        ctr_.chunked_reframed.inc();
    else
        ctr_.chunked_dechunked.inc();
    if (f.trailer_fields() != 0) ctr_.trailers_dropped.inc(f.trailer_fields());
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

void worker_proxy::sink_flush(body_sink &s, bool at_end) noexcept {
    if (s.acc == nullptr) return;
    if (s.sent != nullptr) *s.sent = true;
    const uint16_t flags = at_end ? s.end_flag : 0;
    if (flags != 0) s.end_sent = true;
    xsend(s.peer, s.op, s.handle, flags, 0, s.acc);
    s.acc = nullptr;
    s.acc_len = 0;
}

worker_proxy::pump_result worker_proxy::pump_body(endpoint &src, body_sink &sink,
                                                  uint64_t body_limit, uint64_t rearm_ns,
                                                  uint64_t not_after, uint64_t now) noexcept {
    for (;;) {
        if (!sink_ready(sink, now)) return {pump_end::blocked};  // read nothing more
        if (src.in_n == 0 && pull(src, now) == 0) {
            sink_flush(sink);
            if (src.eof) return {pump_end::eof};
            want_more(src, now);  // the rest of the body
            return {pump_end::blocked};
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
        auto no_buffer = [&] {
            ctr_.no_buffer.inc();
            sink_flush(sink);
            return pump_result{pump_end::no_buffer};
        };
        if (fr.consumed != 0) {
            if (fr.data) {
                bool whole = false;
                rte_mbuf *m = take_front(p, fr.consumed, src.port, whole);
                if (whole) src.pop();
                if (m == nullptr || !sink_put(sink, m, fr.consumed, now)) return no_buffer();
            } else {
                src.skip(fr.consumed);  // received framing: never forwarded
            }
            timers_.arm(src.timer, capped(now + rearm_ns, not_after));
        }
        // Ferry's own framing for what follows (or for the body's end).
        if (sink.framing && !fr.out.empty()) {
            const auto k = static_cast<uint32_t>(fr.out.size());
            rte_mbuf *m = chain_of(fr.out.data(), k, src.port);
            if (m == nullptr || !sink_put(sink, m, k, now)) return no_buffer();
        }
        if (fr.done) {
            note_body_end(src.framer, sink.framing);
            sink_flush(sink, true);
            return {pump_end::done};
        }
    }
}

}  // namespace ferry::proxy
