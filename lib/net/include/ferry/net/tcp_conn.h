// One TCP connection: the transmission control block and its state machine.
//
// Read first: RFC 9293 §3.3.2 (the states and the diagram), §3.10.7
// ("SEGMENT ARRIVES": this file's input() follows its steps in order, each
// quoted at its code), §3.10.8 (timeouts), §3.8.6 (windows, SWS avoidance);
// RFC 5961 §3-§5 (RST, SYN and ACK hardening, challenge ACKs); RFC 6298
// (retransmission timer); RFC 5681 + RFC 6582 (congestion control, fast
// retransmit / NewReno recovery, through tcp_cc; RFC 3042 Limited Transmit);
// RFC 6675 (SACK-based loss recovery, when SACK was negotiated), paced by
// RFC 6937 (PRR, tcp_prr.h), undone when RFC 2883 D-SACKs show it spurious
// (RFC 3708, tcp_undo.h), with RFC 8985 RACK-TLP (tcp_rack.h) and RFC 5682
// F-RTO after a timeout; RFC 1122 §4.2.3.2 and
// RFC 5681 §4.2 (delayed ACKs); RFC 7323 (window scale, timestamps, PAWS);
// RFC 2018 (SACK: blocks generated as a receiver, used by the sender);
// RFC 1122 §4.2.3.6 (keep-alives).
// Models: smoltcp socket/tcp.rs, Seastar net/tcp.hh.
//
// The core is pure: time comes in as `now` (ns, any monotonic origin), every
// segment leaves through the emit callback, and next_deadline() says when
// on_timer() must run next. Nothing here reads a clock, allocates, throws or
// touches a NIC. LISTEN and segments for no connection (the RST of RFC 9293
// §3.10.7.1, SYN cookies) belong to the stack, which creates a tcp_conn with
// open_passive() for an accepted SYN and open_active() to connect.
//
// Zero-copy output: emit gets the header as a tcp_repr (ports, seq, ack,
// flags, window, options; payload_len set) and the payload as a list of
// (mbuf segment, offset, length) references into the send queue. The
// callback builds the frame — attaching the data with indirect mbufs /
// refcount or copying it — and must not keep the references past the call:
// the queue frees chains once they are acknowledged.
//
// Input: input() takes the parsed header and the payload as an mbuf chain
// with the offset and length of the data in it; the TCB owns the chain from
// then on (it frees it, or queues it and later hands it to recv()).
//
// Choices (and what is not done, yet):
//  - no Nagle (every write is sent as soon as the windows allow, as
//    TCP_NODELAY): a proxy forwards what it has.
//  - after an RTO the sender goes back to SND.UNA (SND.NXT <- SND.UNA, slow
//    start from one segment); SND.MAX remembers the highest sequence number
//    sent, so late ACKs for the earlier flight are still taken.
//    Pure ACKs and RSTs carry SND.MAX as their sequence number, so that they
//    stay acceptable at the peer while SND.NXT is behind.
//  - a segment without data at exactly RCV.NXT + RCV.WND is acceptable (as
//    Linux's tcp_sequence()), and ACKs answering out-of-window pure ACKs are
//    rate-limited (oow_ack_interval_ns): together they keep two ends that
//    disagree about a window from trading ACKs forever.
//  - loss recovery: with SACK negotiated (SACK-permitted on both SYNs) it is
//    RFC 6675's. The SACK blocks of every ACK update a scoreboard of the
//    ranges the peer holds above SND.UNA (tcp_sack_scoreboard: at most 32
//    merged ranges inside the TCB; past that the highest range is forgotten,
//    counted in sack_scoreboard_overflow, which can only cost a needless
//    retransmission). Blocks not within (SND.UNA, SND.MAX] or empty are
//    ignored and counted (sack_blocks_invalid: D-SACKs below SND.UNA land
//    here). A DupAck is an ACK that
//    SACKs new octets or an RFC 5681 duplicate (not one whose only news is a
//    D-SACK); recovery starts on DupThresh
//    (3) of them or once IsLost(SND.UNA) holds (more than 2*SMSS or 3 ranges
//    SACKed above), with ssthresh from tcp_cc. It retransmits holes
//    first (NextSeg rule 1: the lowest lost octet above HighRxt, never into a
//    SACKed range), then new data, then not-yet-lost holes (rule 3), while
//    pipe + SMSS fits the limit PRR (RFC 6937, PRR-SSRB; tcp_prr.h) sets on
//    each ACK, pipe + sndcnt (cfg.prr off: cwnd = ssthresh, RFC 6675 alone),
//    and ends when the cumulative ACK covers the RecoveryPoint, with cwnd =
//    ssthresh (RFC 6582's min(ssthresh, FlightSize + SMSS) without PRR).
//    When D-SACKs (RFC 2883) report every retransmission of the recovery as
//    a duplicate, it was spurious and is undone (RFC 3708: cwnd and ssthresh
//    as before it, dsack_undos); a D-SACK also widens RACK's reordering
//    window (RFC 8985 §6.2 step 4). After a first timeout outside recovery,
//    F-RTO (RFC 5682 §3) sends two new segments before going back and undoes
//    the timeout if the next ACK shows the originals arrived (frto_undos).
//    Rule 4's rescue retransmission is not done (it would send
//    a hole a second time; tail losses are left to the RTO). The send queue
//    is still freed by SND.UNA only, so a peer that reneges on SACKed data
//    (RFC 2018 §8) is served by the RTO, which clears the scoreboard
//    (RFC 6675 §5.1 allows keeping it; clearing is the conservative choice)
//    and goes back to SND.UNA as without SACK; that go-back skips the ranges
//    SACKed after the timeout (and does not count them in flight). Without
//    SACK: NewReno (RFC 6582) with RFC 3042 Limited Transmit.
//  - a RST in TIME-WAIT is ignored (RFC 1337 §3, as BSD), not acted on as
//    RFC 9293 says: the exchange completed in order, and a peer answering a
//    late duplicate with RST must not turn that into a reset for the
//    application (counted in resets_ignored).
//  - not handled: data in a SYN or SYN-ACK (dropped; the peer resends it),
//    the urgent pointer (RFC 9293 §3.8.5, ignored), generating D-SACK as a
//    receiver (it is only used as a sender), F-RTO without SACK (RFC 5682
//    §2), sender-side SWS avoidance and Nagle, a FIN-WAIT-2
//    timeout for orphaned connections (the owner's policy), a global
//    challenge-ACK rate limit (RFC 5961 §7), ECN.
//  - memory: the queues and the SACK scoreboard are fixed arrays inside the
//    object (under 10 KiB per connection, checked in the tests). The receive
//    ring holds 256 pieces, so many tiny segments can fill it before the byte
//    window closes (rcv_drop_queue_full; the peer resends). The out-of-order
//    store holds 32 ranges: a segment that continues a stored one is chained
//    onto its mbufs (tcp_recv_queue), so it fills with 32 holes in a window,
//    not 32 segments (then ooo_drop_full).
#pragma once

#include <rte_mbuf.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "ferry/base/counter.h"
#include "ferry/net/tcp.h"
#include "ferry/net/tcp_cc.h"
#include "ferry/net/tcp_conn_queues.h"
#include "ferry/net/tcp_prr.h"
#include "ferry/net/tcp_rack.h"
#include "ferry/net/tcp_rtt.h"
#include "ferry/net/tcp_seq.h"
#include "ferry/net/tcp_tuple.h"
#include "ferry/net/tcp_undo.h"

// Per-lcore TCP connection counters, shared by every tcp_conn of an lcore.
// clang-format off
#define FERRY_TCP_COUNTERS(X)                                                                     \
    X(conn_opened_active,    "connections that sent a SYN (open_active)")                         \
    X(conn_opened_passive,   "connections that answered a SYN (open_passive)")                    \
    X(conn_established,      "connections that reached ESTABLISHED")                              \
    X(conn_closed,           "connections that reached CLOSED")                                   \
    X(conn_timed_out,        "connections given up after too many retransmissions")               \
    X(conn_aborted,          "connections aborted by the application (RST sent)")                 \
    X(state_transitions,     "TCP state changes")                                                 \
    X(time_wait_entered,     "connections that entered TIME-WAIT")                                \
    X(segs_in,               "segments handed to a connection")                                   \
    X(segs_out,              "segments emitted")                                                  \
    X(retransmits,           "segments retransmitted (any cause)")                                \
    X(rto_fired,             "retransmission timeouts")                                           \
    X(syn_retransmits,       "SYN or SYN-ACK retransmissions")                                    \
    X(fast_retransmits,      "fast retransmits (entries into NewReno or SACK loss recovery)")     \
    X(dup_acks,              "duplicate ACKs received (RFC 5681 §2; with SACK, RFC 6675 §2)")     \
    X(ooo_segments,          "segments stored out of order")                                      \
    X(ooo_drop_full,         "out-of-order segments dropped: reassembly store full")              \
    X(ooo_duplicate,         "out-of-order segments with nothing new")                            \
    X(rcv_drop_queue_full,   "in-order segments dropped: receive ring full")                      \
    X(rcv_unacceptable,      "segments failing the sequence acceptability test (ACK sent)")       \
    X(rcv_no_ack,            "segments without ACK in a synchronized state (dropped)")            \
    X(rcv_oow_ack_limited,   "out-of-window pure ACKs left unanswered (rate limit)")              \
    X(rcv_ack_too_new,       "segments acknowledging data not yet sent (ACK sent)")               \
    X(rcv_ack_too_old,       "segments with an ACK below SND.UNA - MAX.SND.WND (RFC 5961 §5)")    \
    X(rcv_bad_ack_syn_sent,  "SYN-SENT: segments with an unacceptable ACK (RST sent)")            \
    X(rcv_bad_ack_syn_rcvd,  "SYN-RECEIVED: segments with an unacceptable ACK (RST sent)")        \
    X(rcv_in_closed,         "segments for a connection already CLOSED")                          \
    X(challenge_acks,        "challenge ACKs sent (RFC 5961)")                                    \
    X(resets_sent,           "RST segments sent")                                                 \
    X(resets_received,       "RST segments that reset the connection")                            \
    X(resets_ignored,        "RST segments outside the window (dropped)")                         \
    X(paws_rejects,          "segments rejected by PAWS (RFC 7323 §5)")                           \
    X(bad_options,           "segments with options the connection rejects")                      \
    X(zero_window_probes,    "zero-window probes sent")                                           \
    X(window_updates,        "window updates sent after the application read")                    \
    X(delayed_acks,          "ACKs sent by the delayed-ACK timer")                                \
    X(quick_acks,            "ACKs sent early: the application read all and waits mid-message")   \
    X(idle_acks,             "delayed ACKs sent as the lcore went to sleep: their timer would have woken it") \
    X(idle_acks_early,       "idle ACKs whose deadline data beat: the data could have carried them")  \
    X(pure_acks,             "segments sent with ACK alone (no data, SYN, FIN or RST)")            \
    X(keepalives,            "keep-alive probes sent")                                            \
    X(keepalive_timeouts,    "connections closed by unanswered keep-alives")                      \
    X(snd_queue_full,        "send() calls refused: send queue full")                             \
    X(sws_held,              "new data held back: the window left less than a full segment")      \
    X(sack_blocks_received,  "SACK blocks received (connections that negotiated SACK)")           \
    X(sack_blocks_invalid,   "SACK blocks ignored: empty, past SND.MAX, not above SND.UNA")       \
    X(sack_recovery_episodes, "SACK-based loss recoveries entered (RFC 6675)")                    \
    X(sack_retransmits,      "holes retransmitted in SACK-based loss recovery")                   \
    X(sack_scoreboard_overflow, "SACK ranges forgotten: scoreboard full")                          \
    X(rack_lost,             "octets RACK marked lost (RFC 8985): a later segment was delivered")  \
    X(rack_retransmits,      "segments retransmitted because RACK marked them lost")               \
    X(tlp_probes,            "tail loss probes sent (RFC 8985 §7) instead of waiting for the RTO")  \
    X(rack_unrecorded,       "segments sent without a RACK record (record ring full)")           \
    X(prr_episodes,          "SACK recoveries paced by Proportional Rate Reduction (RFC 6937)")   \
    X(dsacks_received,       "D-SACK blocks received (RFC 2883): the peer got a segment twice")   \
    X(dsacks_sent,           "D-SACK blocks sent (RFC 2883): a segment came twice; its sender may undo") \
    X(dsack_undos,           "recoveries undone: every retransmission D-SACKed (RFC 3708)")       \
    X(frto_undos,            "retransmission timeouts undone: found spurious by F-RTO (RFC 5682)") \
    X(reo_wnd_grown,         "RACK reordering window grown on a D-SACK (RFC 8985 §6.2 step 4)")  \
    X(rxt_in_flight_kept,    "SACK recoveries begun without resending a hole the last one resent")  \
    X(bbr_full_pipe,         "BBR startups ended: the delivery rate stopped growing (-> DRAIN)")  \
    X(bbr_probe_rtt,         "BBR PROBE_RTT entries: RTprop not refreshed for 10 s")             \
    X(bbr_ack_aggregation,   "BBR windows widened: batched ACKs delivered more than BtlBw explains")
// clang-format on

namespace ferry::net {

struct alignas(64) tcp_counters {
    FERRY_TCP_COUNTERS(FERRY_COUNTER_MEMBER)
};

#define FERRY_TCP_COUNTER_FIELD(name, help) FERRY_COUNTER_FIELD(tcp_counters, name, help)
inline constexpr ferry::counter_field<tcp_counters> tcp_counter_fields[] = {
    FERRY_TCP_COUNTERS(FERRY_TCP_COUNTER_FIELD)};
#undef FERRY_TCP_COUNTER_FIELD

// RFC 9293 §3.3.2. LISTEN is the stack's (no TCB per listener here).
enum class tcp_state : uint8_t {
    closed,
    listen,
    syn_sent,
    syn_received,
    established,
    fin_wait_1,
    fin_wait_2,
    close_wait,
    closing,
    last_ack,
    time_wait,
};

[[nodiscard]] constexpr const char *name(tcp_state s) noexcept {
    switch (s) {
        case tcp_state::closed:
            return "closed";
        case tcp_state::listen:
            return "listen";
        case tcp_state::syn_sent:
            return "syn_sent";
        case tcp_state::syn_received:
            return "syn_received";
        case tcp_state::established:
            return "established";
        case tcp_state::fin_wait_1:
            return "fin_wait_1";
        case tcp_state::fin_wait_2:
            return "fin_wait_2";
        case tcp_state::close_wait:
            return "close_wait";
        case tcp_state::closing:
            return "closing";
        case tcp_state::last_ack:
            return "last_ack";
        case tcp_state::time_wait:
            return "time_wait";
    }
    return "unknown";
}

// Why a connection reached CLOSED.
enum class tcp_close_reason : uint8_t {
    none,       // not closed
    normal,     // orderly: both FINs exchanged and acknowledged
    reset,      // the peer sent an acceptable RST (ECONNRESET)
    refused,    // RST in answer to our SYN (ECONNREFUSED)
    timed_out,  // retransmissions or keep-alives went unanswered (ETIMEDOUT)
    aborted,    // abort() by the application
};

[[nodiscard]] constexpr const char *name(tcp_close_reason r) noexcept {
    switch (r) {
        case tcp_close_reason::none:
            return "none";
        case tcp_close_reason::normal:
            return "normal";
        case tcp_close_reason::reset:
            return "reset";
        case tcp_close_reason::refused:
            return "refused";
        case tcp_close_reason::timed_out:
            return "timed_out";
        case tcp_close_reason::aborted:
            return "aborted";
    }
    return "unknown";
}

// Event flags for the application, accumulated until take_events().
namespace tcp_event {
inline constexpr uint8_t connected = 0x01;  // reached ESTABLISHED
inline constexpr uint8_t readable = 0x02;   // recv() has data
inline constexpr uint8_t writable = 0x04;   // send queue space freed
inline constexpr uint8_t peer_fin = 0x08;   // the peer's FIN arrived (EOF after queued data)
inline constexpr uint8_t closed = 0x10;     // reached CLOSED (see close_reason())
}  // namespace tcp_event

struct tcp_conn_config {
    uint16_t mss = 1460;            // advertised in our SYN; cap on what we send
    uint32_t rcv_buf = 256 * 1024;  // receive buffer (the window we offer), bytes
    uint32_t snd_buf = 256 * 1024;  // send queue soft limit, bytes
    bool window_scaling = true;     // RFC 7323 §2
    bool timestamps = true;         // RFC 7323 §3
    bool sack = true;               // RFC 2018 blocks as a receiver, RFC 6675 recovery as a sender
    bool rack = true;               // with SACK: RACK-TLP loss detection (RFC 8985) as a sender
    bool prr = true;                // with SACK: Proportional Rate Reduction (RFC 6937) in recovery
    bool frto = true;               // with SACK: F-RTO (RFC 5682) tells a spurious timeout
    bool dsack = true;              // with SACK: report duplicate data (RFC 2883) as a receiver
    // RFC 8985 §7.3: a tail loss probe SHOULD carry new data when there is
    // some. Off here: the probe sends the last segment again, which a
    // receiver answers at once (a duplicate, RFC 5681 §4.2, with a D-SACK),
    // where it may hold the ACK for new in-order data for its delayed-ACK
    // time. On the af_packet bed, an echo client (Linux) that got a whole
    // window and the new-data probe stayed silent for 200 ms and an RTO
    // (about 3 per 32 MiB run at 1% loss).
    bool tlp_new_data = false;
    uint32_t ts_offset = 0;         // added to the ms clock in TSval (RFC 7323 §5.4 randomizes)
    rtt_config rtt;
    uint64_t time_wait_ns = 60'000'000'000;  // 2*MSL, RFC 9293 §3.10.8
    bool delayed_ack = true;
    uint64_t delayed_ack_ns = 40'000'000;      // Linux's minimum; RFC 1122 allows up to 500 ms
    // What send(), close(), recv()'s window update and the answer to an
    // arriving segment would transmit waits for flush_output(), which the
    // owner calls once per loop iteration (tcp_layer::flush): what an
    // iteration queued on a connection leaves in as few segments as MSS and
    // windows allow (a response head and its body in one), and the ACK owed
    // for a request rides on the response written in the same iteration.
    // Duplicate ACKs (out-of-order data, a filled gap) still go at once.
    bool defer_output = false;
    uint32_t max_retransmits = 15;             // data RTOs before giving up (Linux tcp_retries2)
    uint32_t max_syn_retries = 6;              // SYN / SYN-ACK RTOs before giving up
    uint64_t persist_max_ns = 60'000'000'000;  // cap on the zero-window probe interval
    // At most one ACK per interval in reply to out-of-window segments
    // without data (Linux's tcp_invalid_ratelimit); data still gets one each.
    uint64_t oow_ack_interval_ns = 500'000'000;
    bool keepalive = false;  // RFC 1122 §4.2.3.6: off by default
    uint64_t keepalive_idle_ns = 7200'000'000'000;
    uint64_t keepalive_interval_ns = 75'000'000'000;
    uint32_t keepalive_probes = 9;
    cc_config cc;  // smss is replaced by the effective send MSS at ESTABLISHED
    // Where the send and receive queues take their ring blocks while they hold
    // data (tcp_layer's pool); null: tcp_block_pool::heap().
    tcp_block_pool *blocks = nullptr;
};

// The emit callback: one segment to send. `refs` covers payload_len bytes of
// data, in order (empty without data). The references are valid only during
// the call.
struct tcp_payload {
    std::span<const tcp_payload_ref> refs;
    uint32_t len = 0;
};
using tcp_emit_fn = void (*)(void *ctx, const tcp_repr &hdr, const tcp_payload &payload);
// Optional state-change trace: called from set_state().
using tcp_trace_fn = void (*)(void *ctx, tcp_state from, tcp_state to);

// A state past the handshake's first step (the sequence numbers of both
// sides are known): not CLOSED, LISTEN or SYN-SENT.
[[nodiscard]] inline bool synchronized(tcp_state s) noexcept {
    return s != tcp_state::closed && s != tcp_state::listen && s != tcp_state::syn_sent;
}

class tcp_conn {
public:
    static constexpr uint64_t never = UINT64_MAX;
    static constexpr uint16_t default_mss = 536;         // RFC 9293 §3.7.1, IPv4
    static constexpr uint16_t min_snd_mss = 48;          // Linux tcp_min_snd_mss: the floor of a peer's MSS
    static constexpr std::size_t max_payload_refs = 16;  // mbuf segments per emitted segment
    // RFC 7323 §5.5: a TS.Recent idle for 24 days is no longer used by PAWS.
    static constexpr uint64_t paws_idle_ns = 24ull * 24 * 3600 * 1'000'000'000;

    // `iss`: our initial sequence number (tcp_isn_generator, or the SYN
    // cookie). `counters` must outlive the connection.
    tcp_conn(const tcp_conn_config &cfg, const tcp_tuple &tuple, seq_num iss, tcp_emit_fn emit,
             void *emit_ctx, tcp_counters &counters) noexcept;
    ~tcp_conn() = default;
    tcp_conn(const tcp_conn &) = delete;
    tcp_conn &operator=(const tcp_conn &) = delete;

    void set_trace(tcp_trace_fn fn, void *ctx) noexcept {
        trace_ = fn;
        trace_ctx_ = ctx;
    }

    // CLOSED -> SYN-SENT: sends <SEQ=ISS><CTL=SYN> with our options (RFC 9293
    // §3.10.1). False (nothing done) unless CLOSED.
    [[nodiscard]] bool open_active(uint64_t now) noexcept;
    // CLOSED -> SYN-RECEIVED for a SYN the stack accepted on a listener
    // (RFC 9293 §3.10.7.2, LISTEN, third check): takes its options and sends
    // <SEQ=ISS><ACK=RCV.NXT><CTL=SYN,ACK>. False (nothing done) unless CLOSED
    // and `syn` has SYN without ACK or RST.
    [[nodiscard]] bool open_passive(const tcp_repr &syn, uint64_t now) noexcept;

    // SEGMENT ARRIVES (RFC 9293 §3.10.7.3 - §3.10.7.4). `payload` is the chain
    // holding the segment's data at [payload_off, payload_off + hdr.payload_len)
    // (null when there is none); the TCB owns it from here.
    void input(const tcp_repr &hdr, rte_mbuf *payload, uint32_t payload_off, uint64_t now) noexcept;

    // SEND (RFC 9293 §3.10.2): queues the chain (whole) and sends what the
    // windows allow. Returns the bytes taken (the chain's length), or 0 when
    // the queue is full, the connection cannot send (not yet open, or closing
    // / closed) or the chain is empty: the caller keeps the chain then.
    [[nodiscard]] uint32_t send(rte_mbuf *chain, uint64_t now) noexcept;
    // RECEIVE (RFC 9293 §3.10.3): moves up to out.size() in-order pieces to
    // the caller, who frees their chains. May send a window update.
    [[nodiscard]] std::size_t recv(std::span<tcp_rx_piece> out, uint64_t now) noexcept;
    // The application read everything and waits for more of a message: the
    // ACK owed (if any) goes now (with defer_output at the next flush), not
    // at the delayed-ACK timeout. A peer whose Nagle algorithm (RFC 896,
    // RFC 1122 §4.2.3.4) holds its next small segment until this one is
    // acknowledged would otherwise wait that long (Linux: ICSK_ACK_PUSHED
    // in tcp_cleanup_rbuf, or TCP_QUICKACK).
    void quick_ack(uint64_t now) noexcept;
    // The lcore is about to sleep: if an ACK is owed and this connection's
    // delayed ACKs have lately gone out by their timer rather than on data
    // (the application sends nothing here soon: an idle upstream connection
    // between requests), it goes now, so that the timer does not wake the
    // lcore for it later. The same frame, sent earlier; a connection whose
    // ACKs ride on its data keeps them delayed. True if an ACK was sent.
    bool ack_before_idle(uint64_t now) noexcept;
    // How the last delayed ACKs went out: 0 (on data) to 3 (by the timer),
    // up one for each the timer sent, down one for each that data carried
    // (and for each ack_before_idle() whose deadline data beat).
    [[nodiscard]] uint8_t delack_fate() const noexcept { return delack_fate_; }
    // With defer_output: whether something waits for flush_output(), which
    // sends it (what the windows allow, or the ACK owed).
    [[nodiscard]] bool output_owed() const noexcept { return output_owed_; }
    void flush_output(uint64_t now) noexcept;
    // CLOSE (RFC 9293 §3.10.4): FIN after the queued data. ESTABLISHED ->
    // FIN-WAIT-1, CLOSE-WAIT -> LAST-ACK; in SYN-SENT the connection just
    // closes; in SYN-RECEIVED the FIN waits for ESTABLISHED. Later calls do
    // nothing.
    void close(uint64_t now) noexcept;
    // ABORT (RFC 9293 §3.10.5): in a synchronized state sends <SEQ=SND.NXT>
    // <CTL=RST>; drops both queues and goes to CLOSED (reason aborted).
    void abort(uint64_t now) noexcept;

    // Runs whatever timer has expired by `now`.
    void on_timer(uint64_t now) noexcept;
    // The earliest time on_timer() has something to do, or `never`.
    [[nodiscard]] uint64_t next_deadline() const noexcept;

    [[nodiscard]] tcp_state state() const noexcept { return state_; }
    [[nodiscard]] tcp_close_reason close_reason() const noexcept { return close_reason_; }
    [[nodiscard]] uint8_t take_events() noexcept {
        const uint8_t e = events_;
        events_ = 0;
        return e;
    }
    [[nodiscard]] uint8_t events() const noexcept { return events_; }
    [[nodiscard]] const tcp_tuple &tuple() const noexcept { return tuple_; }

    // Introspection (telemetry and tests).
    struct snd_vars {
        seq_num una;           // SND.UNA: oldest unacknowledged
        seq_num nxt;           // SND.NXT: next to send
        seq_num max;           // highest sent + 1 (SND.NXT before a go-back after RTO)
        uint32_t wnd = 0;      // SND.WND, scaled, bytes
        seq_num wl1;           // SEG.SEQ of the last window update
        seq_num wl2;           // SEG.ACK of the last window update
        seq_num iss;           // ISS
        uint8_t wscale = 0;    // Snd.Wind.Shift (RFC 7323 §2.3)
        uint32_t max_wnd = 0;  // MAX.SND.WND (RFC 5961 §5.2)
    };
    struct rcv_vars {
        seq_num nxt;         // RCV.NXT
        seq_num irs;         // IRS
        seq_num adv;         // RCV.NXT + RCV.WND as last advertised (never shrinks)
        uint8_t wscale = 0;  // Rcv.Wind.Shift
    };
    [[nodiscard]] const snd_vars &snd() const noexcept { return snd_; }
    [[nodiscard]] const rcv_vars &rcv() const noexcept { return rcv_; }
    // RCV.WND: what the peer may still send.
    [[nodiscard]] uint32_t rcv_wnd() const noexcept {
        return rcv_.adv > rcv_.nxt ? distance(rcv_.nxt, rcv_.adv) : 0;
    }
    [[nodiscard]] const rtt_estimator &rtt() const noexcept { return rtt_; }
    [[nodiscard]] const tcp_cc &cc() const noexcept { return cc_; }
    [[nodiscard]] uint16_t snd_mss() const noexcept { return snd_mss_; }
    [[nodiscard]] bool ts_enabled() const noexcept { return ts_ok_; }
    // In TIME-WAIT: whether SYN h (no ACK, no RST) for this tuple starts a new
    // incarnation (RFC 6191 §2, RFC 9293 §3.10.7.4, Linux's and BSD's rule):
    // its sequence number is above RCV.NXT, or its TSval is newer than
    // TS.Recent; never when timestamps show it older (PAWS).
    [[nodiscard]] bool time_wait_takes_syn(const tcp_repr &h) const noexcept;
    [[nodiscard]] bool sack_enabled() const noexcept { return sack_ok_; }
    [[nodiscard]] uint32_t send_queued() const noexcept { return sq_.bytes(); }
    [[nodiscard]] uint32_t send_space() const noexcept { return sq_.space(); }
    [[nodiscard]] uint32_t recv_queued() const noexcept { return rq_.bytes(); }
    [[nodiscard]] uint64_t rtx_deadline() const noexcept { return rtx_at_; }
    [[nodiscard]] uint64_t persist_deadline() const noexcept { return persist_at_; }
    [[nodiscard]] uint64_t delack_deadline() const noexcept { return delack_at_; }
    [[nodiscard]] uint64_t time_wait_deadline() const noexcept { return tw_at_; }
    [[nodiscard]] uint64_t keepalive_deadline() const noexcept { return ka_at_; }
    [[nodiscard]] uint64_t probe_deadline() const noexcept { return pto_at_; }
    // The offset added to the ms clock in TSval (RFC 7323 §5.4), replacing
    // the configuration's; before open_active / open_passive.
    void set_ts_offset(uint32_t off) noexcept { cfg_.ts_offset = off; }
    [[nodiscard]] uint32_t ts_offset() const noexcept { return cfg_.ts_offset; }
    [[nodiscard]] const tcp_rack &rack() const noexcept { return rack_; }
    // PRR (RFC 6937) of the current or last SACK recovery; its undo episode.
    [[nodiscard]] const tcp_prr &prr() const noexcept { return prr_; }
    [[nodiscard]] const tcp_undo &undo() const noexcept { return undo_; }
    // SACK-based recovery (RFC 6675): the scoreboard, HighRxt + 1, the
    // DupAcks count and pipe (SetPipe() now, with HighRxt outside recovery
    // taken as SND.UNA).
    [[nodiscard]] const tcp_sack_scoreboard &sack_scoreboard() const noexcept { return sack_sb_; }
    [[nodiscard]] seq_num sack_high_rxt() const noexcept { return rxt_high_; }
    [[nodiscard]] uint32_t sack_dup_acks() const noexcept { return sack_dupacks_; }
    [[nodiscard]] uint32_t sack_pipe() const noexcept;

private:
    void set_state(tcp_state s, uint64_t now) noexcept;
    void enter_closed(tcp_close_reason why, uint64_t now) noexcept;
    void enter_established(uint64_t now) noexcept;

    // SEGMENT ARRIVES, by state.
    void input_syn_sent(const tcp_repr &h, uint64_t now) noexcept;
    void input_synchronized(const tcp_repr &h, rte_mbuf *payload, uint32_t payload_off,
                            uint64_t now) noexcept;
    // Fifth step for an ACK that passed the RFC 5961 §5 check. False: drop
    // the segment (the connection closed).
    [[nodiscard]] bool process_ack(const tcp_repr &h, uint64_t now) noexcept;
    void process_text(seq_num seq, rte_mbuf *payload, uint32_t off, uint32_t len, bool fin,
                      uint64_t now) noexcept;
    void process_fin(uint64_t now) noexcept;

    void take_syn_options(const tcp_options &o, uint64_t now) noexcept;
    // RFC 2883 §4: data [left, right) arrived again; the next ACK reports it
    // first in its SACK option (sent at once: its sender may undo).
    void note_duplicate(seq_num left, seq_num right) noexcept;
    // The SACK option of an ACK: the owed D-SACK, then the receive queue's
    // blocks (RFC 2018 §4), in `room` blocks at most.
    void fill_sack(tcp_options &o, std::size_t room) const noexcept;
    void update_ts_recent(const tcp_repr &h, uint64_t now) noexcept;

    // Output.
    void output(uint64_t now) noexcept;
    // output() now, or with defer_output at the next flush_output().
    void output_soon(uint64_t now) noexcept;
    void send_syn(uint64_t now) noexcept;  // SYN or SYN-ACK by state
    void send_ack(uint64_t now) noexcept;
    void send_challenge_ack(uint64_t now) noexcept;
    void send_rst(seq_num seq, uint64_t now) noexcept;
    // Emits one segment carrying [off, off + len) of the send queue. Returns
    // the data bytes it carries (len, or less when the refs ran out).
    uint32_t emit_segment(uint8_t flags, seq_num seq, uint32_t off, uint32_t len,
                          uint64_t now) noexcept;
    void retransmit_head(uint64_t now) noexcept;
    // SACK (RFC 6675). Update() with the segment's blocks; returns the octets
    // newly SACKed.
    [[nodiscard]] uint32_t take_sack_blocks(const tcp_repr &h) noexcept;
    // §5 for an ACK that passed the RFC 5961 check, after SND.UNA moved:
    // the scoreboard's Update() with its blocks, D-SACK (take_dsack()),
    // DupAcks (`dup`: an RFC 5681 duplicate) and the entry into recovery,
    // PRR's sndcnt (RFC 6937) in recovery.
    void sack_on_ack(const tcp_repr &h, bool advanced, bool dup, uint64_t now) noexcept;
    // An ACK delivered `n` octets (cumulatively or by SACK): the congestion
    // control's delivery sample (BBR's model, tcp_bbr.h).
    void note_delivery(uint32_t n, uint64_t now) noexcept;
    // RFC 2883 D-SACK on this ACK: counted, reported to the undo episode
    // (RFC 3708: the recovery may be undone) and to RACK's reordering window
    // (RFC 8985 §6.2 step 4). `exiting`: this ACK ended a recovery. Returns
    // whether the ACK carried a D-SACK.
    bool take_dsack(const tcp_repr &h, bool exiting) noexcept;
    // RFC 6937 §3 on an ACK of the recovery (`delivered`: its DeliveredData):
    // PRR's sending limit for output().
    void prr_on_ack(uint32_t delivered) noexcept;
    // What output() counts in flight: SetPipe (sack_pipe()), less in recovery
    // what RACK knows is lost (RFC 8985 §9.2).
    [[nodiscard]] uint32_t send_pipe() const noexcept;
    // The RTO's part of recovery (tcp_conn_recovery.cpp), before tcp_cc's:
    // the scoreboard, DupAcks, RACK's records and the probe are reset, PRR
    // and the undo episode end, and F-RTO (RFC 5682) starts if it applies.
    void recovery_on_rto() noexcept;
    // F-RTO's steps 2 and 3 on an ACK (`sacked_below`: it SACKed octets
    // below RecoveryPoint): the go-back stops for new data, resumes, or the
    // timeout is undone.
    void frto_on_ack(bool advanced, bool sacked_below) noexcept;
    // Retransmits [start, end) (not SACKed, at most one segment), moving
    // HighRxt past what was sent. Returns the octets sent. `hole`: counted
    // in sack_retransmits (not a tail loss probe).
    uint32_t sack_retransmit(seq_num start, seq_num end, uint64_t now, bool hole = true) noexcept;
    // RFC 6675 §5 step (4): recovery begins (PRR and an undo episode with
    // it; `delivered`: the DeliveredData of the ACK that starts it, 0 on a
    // timer), the first hole is resent. False when it cannot begin (going
    // back after an RTO, or §5.1).
    bool enter_sack_recovery(uint64_t now, uint32_t delivered) noexcept;
    // The first octets from SND.UNA up to the first SACKed one, at most one
    // SMSS: what step (4.3) and a probe in recovery resend.
    void first_hole(seq_num &start, seq_num &end) const noexcept;
    // RACK-TLP (RFC 8985, tcp_rack.h; tcp_conn_recovery.cpp): loss
    // detection after an ACK or the reordering timer, the probe timer.
    void rack_detect(uint64_t now, uint32_t delivered = 0) noexcept;
    void on_rack_timer(uint64_t now) noexcept;
    void arm_pto(uint64_t now) noexcept;
    void on_pto(uint64_t now) noexcept;
    // In SACK recovery, or with DupAcks before it (§5 step 3): the sender
    // counts pipe, not SND.NXT - SND.UNA.
    [[nodiscard]] bool sack_pipe_mode() const noexcept {
        return sack_ok_ && snd_.nxt == snd_.max && (cc_.in_sack_recovery() || sack_dupacks_ > 0);
    }
    void fill_options(tcp_options &o, bool syn, uint64_t now) const noexcept;
    [[nodiscard]] uint16_t window_field(bool syn) noexcept;
    [[nodiscard]] uint32_t offer_window() const noexcept;
    [[nodiscard]] uint32_t ts_clock(uint64_t now) const noexcept {
        return static_cast<uint32_t>(now / 1'000'000) + cfg_.ts_offset;
    }
    [[nodiscard]] seq_num fin_seq() const noexcept {
        return snd_data_ + static_cast<int32_t>(sq_.bytes());
    }
    [[nodiscard]] bool fin_acked() const noexcept {
        return fin_queued_ && snd_.una == fin_seq() + 1;
    }
    void on_rto(uint64_t now) noexcept;
    void on_persist(uint64_t now) noexcept;
    void on_keepalive(uint64_t now) noexcept;
    void ack_received_data(bool immediately, uint64_t now) noexcept;
    void restart_keepalive(uint64_t now) noexcept;
    void arm_rtx(uint64_t now) noexcept { rtx_at_ = now + rtt_.rto_ns(); }

    tcp_conn_config cfg_;
    tcp_tuple tuple_;
    uint32_t ka_probes_ = 0;  // keep-alive probes unanswered (here: the padding after tuple_)
    tcp_emit_fn emit_;
    void *emit_ctx_;
    tcp_counters &ctr_;
    tcp_trace_fn trace_ = nullptr;
    void *trace_ctx_ = nullptr;

    tcp_state state_ = tcp_state::closed;
    tcp_close_reason close_reason_ = tcp_close_reason::none;
    uint8_t events_ = 0;

    snd_vars snd_;
    rcv_vars rcv_;
    seq_num snd_data_;  // sequence number of the first byte in sq_
    uint16_t snd_mss_ = default_mss;
    bool fin_queued_ = false;

    // Options (RFC 7323, RFC 2018), as negotiated.
    bool ts_ok_ = false;
    bool sack_ok_ = false;
    bool peer_ts_ = false;      // the peer's SYN had timestamps (for our SYN-ACK)
    bool peer_sack_ = false;    // ... SACK-permitted
    bool peer_wscale_ = false;  // ... window scale
    uint32_t ts_recent_ = 0;
    uint64_t ts_recent_at_ = 0;
    seq_num last_ack_sent_;
    seq_num tlp_end_;  // RFC 8985 TLP.end_seq, while tlp_out_ (below; here: padding)

    // Retransmission (RFC 6298) and congestion control.
    rtt_estimator rtt_;
    tcp_cc cc_;
    bool rtt_timing_ = false;  // Karn: timing one segment that was sent once
    bool syn_retransmitted_ = false;
    seq_num rtt_seq_;
    uint64_t rtt_sent_at_ = 0;
    uint32_t retries_ = 0;  // RTOs since the last new ACK
    uint32_t persist_backoff_ = 0;
    uint32_t limited_tx_ = 0;  // RFC 3042: bytes allowed beyond cwnd after 1 or 2 dup ACKs

    // SACK-based loss recovery (RFC 6675 §2-§4), used when sack_ok_.
    tcp_sack_scoreboard sack_sb_;
    seq_num rxt_high_;           // HighRxt + 1: one past the highest octet resent in this recovery
    uint32_t sack_dupacks_ = 0;  // DupAcks (§5): reset by a cumulative ACK, an RTO
    // With SACK: Proportional Rate Reduction (RFC 6937) paces a recovery
    // (when cfg_.prr; its DeliveredData and episode are kept either way:
    // prr_.active() is "in SACK recovery" as this TCB last saw it), and the
    // recovery's undo episode (RFC 2883 D-SACK, RFC 3708).
    tcp_prr prr_;
    tcp_undo undo_;
    // RACK-TLP (RFC 8985), used when sack_ok_.
    tcp_rack rack_;
    uint64_t pto_at_ = never;   // the tail loss probe's timer
    // One-bit flags, in one byte (sizeof(tcp_conn) is a per-connection cost).
    bool pto_restart_ : 1 = false;  // new data sent or SND.UNA advanced: arm_pto() re-arms
    bool tlp_out_ : 1 = false;      // a probe is unanswered (TLP.end_seq below)
    // (Flags of the sections below.)
    bool ack_now_ : 1 = false;      // ACK policy
    bool oow_acked_ : 1 = false;    // rate limit on ACKs for out-of-window pure ACKs
    bool dupack_now_ : 1 = false;   // the ACK owed is a duplicate ACK (RFC 5681 §4.2): not deferred
    bool output_owed_ : 1 = false;  // defer_output: flush_output() has something to send
    bool dsack_owed_ : 1 = false;   // dsack_ leads the next segment's SACK option
    // The peer is mid-stream: its last in-order data segment was full-sized, or
    // it filled a gap (recv(): a pure window update is news to such a peer).
    bool peer_streaming_ : 1 = false;
    uint8_t delack_fate_ : 2 = 0;  // ACK policy: delack_fate()
    // ACK policy: the delayed-ACK deadline an ack_before_idle() beat, until
    // the next data segment tells whether that data would have carried it:
    // in units of 2^22 ns (4.2 ms) modulo 2^16, so it tells before from after
    // within 137 s either way (a later segment may be judged wrongly: one
    // step of delack_fate_); 0: none. In a padding hole: sizeof(tcp_conn)
    // is a per-connection cost.
    uint16_t idle_ack_deadline_ = 0;
    // RFC 2883: the duplicate data last received, reported once (D-SACK).
    tcp_sack_block dsack_{};

    // ACK policy.
    uint32_t segs_unacked_ = 0;

    // Rate limit on ACKs for out-of-window pure ACKs.
    uint64_t last_oow_ack_at_ = 0;

    // Timers: absolute ns, `never` when stopped.
    uint64_t rtx_at_ = never;
    uint64_t persist_at_ = never;
    uint64_t delack_at_ = never;
    uint64_t tw_at_ = never;
    uint64_t ka_at_ = never;

    tcp_send_queue sq_;
    tcp_recv_queue rq_;
};

}  // namespace ferry::net
