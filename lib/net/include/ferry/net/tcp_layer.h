// The TCP layer of one (lcore, port) stack: flow table, listeners, the
// connection pool, segment demultiplexing, frames out of tcp_conn's emit.
//
// Read first: RFC 9293 §3.10.7.1 (segments for no connection: the RST rules
// of state CLOSED), §3.10.7.2 (LISTEN), §3.1 (checksum and pseudo-header);
// RFC 4987 §3.6 (SYN cookies, here tcp_syncookies); RFC 6528 (ISNs).
//
// Memory: every connection lives in a slot of a pool allocated at start-up
// (max_connections slots); the flow table (open addressing, linear probing,
// backward-shift deletion, SipHash-keyed so a peer cannot aim collisions) and
// the timer heap are arrays of fixed size too. Nothing is allocated per
// connection or per packet (mbufs come from the port's pool).
//
// Handles: (slot index, generation). A slot's generation changes each time it
// is freed, so a handle kept past the connection's end is detected (get()
// returns null) instead of reaching the slot's next tenant.
//
// Life of a slot: taken by an accepted SYN (or a validated SYN cookie ACK),
// freed when the connection reaches CLOSED and poll_events() has reported the
// `closed` event (so the application sees every connection end exactly once).
// TIME-WAIT is the layer's alone: the application gets `closed` (reason
// normal) when the connection enters it (once its received data is read), its
// handle goes stale, and the slot waits out 2*MSL on a FIFO of TIME-WAIT
// slots. When the pool is full, a new connection (SYN, cookie ACK, connect())
// takes the oldest TIME-WAIT slot instead of failing (tcp_time_wait_recycled,
// as Linux ends TIME-WAIT early past tcp_max_tw_buckets): TIME-WAIT guards
// against old duplicates, and must not starve new connections under churn.
//
// Timers: an indexed binary min-heap of the connections' next_deadline(),
// updated after every call into a connection; stack::next_deadline() and
// stack::poll_timers() include it. No clock is read here (time comes in).
//
// Frames: a header mbuf (Ethernet + IPv4 or IPv6 + TCP, built in place) from the
// pool; the payload is attached zero-copy (an indirect mbuf per send-queue
// segment, rte_pktmbuf_attach) when the port transmits chains, else copied
// into the header mbuf. Checksum in software by default; with tx_cksum_offload
// the TCP checksum field gets the pseudo-header sum and RTE_MBUF_F_TX_TCP_CKSUM.
//
// Flow ownership (DESIGN.md "Flow ownership"): when several lcores serve one
// port (queue `queue` of `nqueues`), a flow belongs to the lcore of queue
// flow_queue(flow_steer_hash(4-tuple), nqueues) (steering.h), whatever queue
// the NIC delivered it on. A segment of another lcore's flow — a SYN
// included, so that lcore creates the connection — goes to the `handoff`
// callback (the app sends it over lib/xcore to the owner, which feeds it to
// its stack's input_handoff()); counted as tcp_handoff_out here and
// tcp_handoff_in there. On ports whose steering is computable (net_tap with
// the steering eBPF program, symmetric-key RSS) the NIC already delivers
// almost every segment to its owner, so hand-offs are rare; elsewhere
// (af_packet fanout) they are the normal path. Without a handoff callback the
// segments of other lcores' flows are treated as before (shared_port).
//
// Active opens: connect() picks a local port in [ephemeral_lo, ephemeral_hi]
// whose 4-tuple this lcore owns and that is in no flow (TIME-WAIT included:
// tuples are not reused while their TIME-WAIT lasts), from a cursor that
// walks the range, so the return traffic of our own connections is steered
// to our own queue.
#pragma once

#include <rte_mbuf.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "ferry/base/slot_array.h"
#include "ferry/net/counters.h"
#include "ferry/net/ipv4.h"
#include "ferry/net/ipv6.h"
#include "ferry/net/tcp.h"
#include "ferry/net/tcp_conn.h"
#include "ferry/net/tcp_isn.h"
#include "ferry/net/tcp_syncookie.h"
#include "ferry/net/tcp_tuple.h"

namespace ferry::net {

class stack;

struct tcp_layer_config {
    uint32_t max_connections = 1024;  // pool slots (the flow table has twice as many buckets)
    uint32_t max_listeners = 16;
    uint32_t syn_backlog = 128;     // per listener: connections in SYN-RECEIVED
    bool syn_cookies = true;        // RFC 4987 §3.6 when the backlog (or the pool) is full
    bool tx_cksum_offload = false;  // the port computes the TCP checksum
    bool tx_chains = true;          // the port transmits multi-segment frames (zero-copy)
    // Other lcores share the port: a segment without SYN that matches no flow
    // here may belong to another lcore's connection (net_tap automq, see
    // TESTBED.md). Until cross-core hand-off exists it is dropped and counted
    // (tcp_drop_not_owner) rather than answered with a RST that would kill
    // the owner's connection.
    bool shared_port = false;
    // Flow ownership (above): this layer serves queue `queue` of `nqueues`.
    uint16_t queue = 0;
    uint16_t nqueues = 1;
    // Takes a segment (the whole frame, Ethernet header first) of a flow that
    // queue `owner` owns; true if it took `m`, false if it could not (then
    // the segment is dropped and counted: tcp_drop_handoff_full).
    bool (*handoff)(void *ctx, uint16_t owner, rte_mbuf *m) noexcept = nullptr;
    void *handoff_ctx = nullptr;
    // Local ports for active opens (Linux's default ip_local_port_range).
    uint16_t ephemeral_lo = 32768;
    uint16_t ephemeral_hi = 60999;
    tcp_conn_config conn;   // for every connection (mss follows the MTU)
    // Connections opened by connect() send keep-alive probes (RFC 1122
    // §4.2.3.6) after this long without a segment from the peer, and every as
    // long after; active_keepalive_probes unanswered close them. 0 = as conn.
    uint64_t active_keepalive_ns = 0;
    uint32_t active_keepalive_probes = 3;
    siphash_key isn_key{};  // RFC 6528 secret
    // RFC 7323 §5.4: the timestamp offset of each connection is derived from
    // its addresses with this key (tcp_ts_offset); one key for the process,
    // so that every lcore sends a peer the same clock. All zero: conn.ts_offset
    // for every connection instead.
    siphash_key ts_key{};
    siphash_key cookie_key0{}, cookie_key1{};
    siphash_key flow_key{};  // flow table hash
};

struct tcp_handle {
    uint32_t index = UINT32_MAX;
    uint32_t gen = 0;
    [[nodiscard]] bool valid() const noexcept { return index != UINT32_MAX; }
    friend constexpr bool operator==(const tcp_handle &, const tcp_handle &) noexcept = default;
};

// One connection with news for the application (tcp_event bits).
struct tcp_notice {
    tcp_handle h;
    uint8_t events = 0;
    uint16_t local_port = 0;  // which listener accepted it, or our port of a connect()
    bool active = false;      // opened by connect()
    tcp_close_reason reason = tcp_close_reason::none;  // with tcp_event::closed
};

class tcp_layer {
public:
    // `st` and the counters must outlive the layer. Allocates the pool (the
    // only allocation). `pool` supplies the header mbufs and indirect mbufs.
    tcp_layer(const tcp_layer_config &cfg, stack &st, rte_mempool *pool, net_counters &nc,
              tcp_counters &tc);
    ~tcp_layer();
    tcp_layer(const tcp_layer &) = delete;
    tcp_layer &operator=(const tcp_layer &) = delete;

    enum class listen_result : uint8_t { ok, already, full };
    // Opens port (LISTEN) for passive opens.
    [[nodiscard]] listen_result listen(uint16_t port) noexcept;

    enum class connect_result : uint8_t {
        ok,
        no_port,       // every local port this lcore owns toward the peer is in use
        no_slot,       // the connection pool is full
        bad_address,   // the remote address or port is 0
    };
    // Closes port for passive opens: new SYNs get RST (RFC 9293 §3.10.7.1);
    // connections it accepted carry on. False if it was not listening.
    bool unlisten(uint16_t port) noexcept;
    // True if poll_events() has something to report (the reactor's exact
    // pre-sleep check for an application polling this layer).
    [[nodiscard]] bool has_events() const noexcept { return ready_len_ != 0; }

    // Active open (RFC 9293 §3.10.1 OPEN, active): a connection from our
    // address to remote:port, in SYN-SENT when this returns ok (its SYN is
    // queued); `out` gets its handle. Its events (connected, readable, ...,
    // closed) come through poll_events() with tcp_notice::active set.
    // The remote address's family picks ours: the port's IPv4 address, or
    // its address6 (bad_address when it has none).
    [[nodiscard]] connect_result connect(const ip_addr &remote, uint16_t port, uint64_t now,
                                         tcp_handle &out) noexcept;
    // The queue that owns the flow `t` (flow ownership, above).
    [[nodiscard]] uint16_t owner_of(const tcp_tuple &t) const noexcept;

    // Called by the stack for every IPv4 datagram with protocol 6 that passed
    // the IPv4 checks; owns `m`. Header, checksum and options are checked
    // before a segment of another queue's flow is handed over; `verified`: it
    // was (a hand-off from another lcore: its checksum is not summed again).
    void input(rte_mbuf *m, const ipv4_repr &ip, uint32_t l4_off, uint64_t now,
               bool verified = false) noexcept;
    // The same for an IPv6 datagram with next header 6 (no extension
    // headers: the stack drops those). Connections over IPv6 offer an MSS 20
    // bytes smaller (the IPv6 header is 40 bytes).
    void input(rte_mbuf *m, const ipv6_repr &ip, uint32_t l4_off, uint64_t now,
               bool verified = false) noexcept;

    void poll_timers(uint64_t now) noexcept;
    [[nodiscard]] uint64_t next_deadline() const noexcept;
    // The lcore is about to sleep: every connection with a delayed ACK due
    // whose ACKs lately went out by their timer sends it now
    // (tcp_conn::ack_before_idle), so the timer does not wake the lcore. Only
    // the timer heap's entries due within the delayed-ACK timeout are
    // visited. Returns the ACKs sent (the caller flushes the tx queues).
    uint32_t ack_before_sleep(uint64_t now) noexcept;

    // With conn.defer_output: sends what the connections queued since the
    // last flush (tcp_conn::flush_output), one connection at a time, in the
    // order they first had something. The owner calls it once per loop
    // iteration, after the application ran and before the port's tx burst.
    void flush(uint64_t now) noexcept;
    // Connections waiting for flush() (tests).
    [[nodiscard]] uint32_t flush_pending() const noexcept { return owed_len_; }

    // Moves up to out.size() connections with pending events to the caller
    // (taking their events). A connection reported `closed` is freed at the
    // next call: its handle is stale from then on (until then it names a
    // CLOSED connection, so calls on it do nothing). Returns how many were filled.
    [[nodiscard]] std::size_t poll_events(std::span<tcp_notice> out) noexcept;

    // The connection behind h, or null when h is stale.
    [[nodiscard]] tcp_conn *get(tcp_handle h) noexcept;
    // Application calls: tcp_conn's, then timer and event bookkeeping. A stale
    // handle does nothing (send/recv return 0).
    [[nodiscard]] uint32_t send(tcp_handle h, rte_mbuf *chain, uint64_t now) noexcept;
    [[nodiscard]] std::size_t recv(tcp_handle h, std::span<tcp_rx_piece> out,
                                   uint64_t now) noexcept;
    void close(tcp_handle h, uint64_t now) noexcept;
    void abort(tcp_handle h, uint64_t now) noexcept;
    // tcp_conn::quick_ack: the application read all and waits mid-message.
    void quick_ack(tcp_handle h, uint64_t now) noexcept;

    [[nodiscard]] uint32_t active() const noexcept { return slots_.in_use() - nzombies_ - ntw_; }
    [[nodiscard]] uint32_t time_wait() const noexcept { return ntw_; }

    // Memory pressure (set by the queue that feeds the stack: queue_io):
    // while on, the payload of segments for open connections is dropped
    // (tcp_drop_mem_pressure) and only their control part (ACK, window, RST)
    // is processed, so the mbufs that remain serve ACKs, which free send
    // queues. Without it, receive queues and unacknowledged send queues can
    // hold the whole pool, and the ACKs that would free it find no mbuf to
    // arrive in: a deadlock until timeouts. The sender retransmits what was
    // dropped.
    void set_mem_pressure(bool on) noexcept { mem_pressure_ = on; }
    [[nodiscard]] bool mem_pressure() const noexcept { return mem_pressure_; }
    [[nodiscard]] uint32_t capacity() const noexcept { return cfg_.max_connections; }
    // Connection slots ever used, so made and resident: the most in use at
    // once (slots are reused last-freed-first). Any thread (telemetry).
    [[nodiscard]] uint32_t slots_made() const noexcept { return slots_.made(); }
    // Bytes the layer allocated or mapped at construction (its connection
    // slots, flow table, timer heap and lists, and the queues' ring blocks):
    // all it ever takes (docs/OPERATIONS.md "Memory"). The ring blocks are
    // address space until used: blocks().touched() of them are resident.
    [[nodiscard]] std::size_t reserved_bytes() const noexcept { return reserved_; }
    // The ring blocks of the connections' queues (blocks_per_connection per slot).
    [[nodiscard]] const tcp_block_pool &blocks() const noexcept { return blocks_; }
    [[nodiscard]] const tcp_layer_config &config() const noexcept { return cfg_; }

private:
    bool mem_pressure_ = false;
    std::size_t reserved_ = 0;
    struct slot;
    struct listener {
        uint16_t port = 0;
        uint32_t syn_rcvd = 0;  // connections of this listener in SYN-RECEIVED
    };

    static void emit_cb(void *ctx, const tcp_repr &hdr, const tcp_payload &payload);
    // Builds and sends one segment on `t` (local -> remote).
    void send_segment(const tcp_tuple &t, const tcp_repr &hdr, const tcp_payload &payload) noexcept;
    // RFC 9293 §3.10.7.1 for a segment that matches nothing.
    void reply_rst(const tcp_tuple &t, const tcp_repr &seg) noexcept;
    void input_listen(listener &l, const tcp_tuple &t, const tcp_repr &seg, rte_mbuf *m,
                      uint32_t payload_off) noexcept;
    void send_cookie_syn_ack(const tcp_tuple &t, const tcp_repr &syn) noexcept;
    // The TSval offset of connections on `t` (tcp_layer_config::ts_key).
    [[nodiscard]] uint32_t ts_offset_of(const tcp_tuple &t) const noexcept;
    // Rebuilds the connection a valid cookie ACK completes. True if it took `m`.
    bool accept_cookie(listener &l, const tcp_tuple &t, const tcp_repr &ack, rte_mbuf *m,
                       uint32_t payload_off) noexcept;
    [[nodiscard]] listener *find_listener(uint16_t port) noexcept;
    [[nodiscard]] bool checksum_ok(const rte_mbuf *m, const ip_addr &src, const ip_addr &dst,
                                   uint32_t l4_off, uint32_t len) const noexcept;
    void input_segment(rte_mbuf *m, const ip_addr &src, const ip_addr &dst, uint32_t len,
                       uint32_t l4_off, uint64_t now, bool verified) noexcept;
    // The configuration of a new connection on `t`: cfg_.conn, or over IPv6
    // the same with the MSS 20 bytes smaller.
    [[nodiscard]] const tcp_conn_config &conn_config(const tcp_tuple &t) const noexcept {
        return t.is_v6() ? conn6_ : cfg_.conn;
    }

    // Slots and the flow table.
    [[nodiscard]] uint32_t alloc_slot() noexcept;  // a slot available or a TIME-WAIT one: reclaim()
    // A slot for a new connection: true if one is free, or was made free by
    // ending the oldest TIME-WAIT early.
    [[nodiscard]] bool reclaim() noexcept;
    void tw_unlink(uint32_t idx) noexcept;
    void free_slot(uint32_t idx) noexcept;
    [[nodiscard]] uint64_t hash(const tcp_tuple &t) const noexcept;
    [[nodiscard]] uint32_t lookup(const tcp_tuple &t) const noexcept;  // slot or UINT32_MAX
    [[nodiscard]] bool insert_flow(const tcp_tuple &t, uint32_t idx) noexcept;
    void erase_flow(const tcp_tuple &t) noexcept;
    // After any call into a connection: timers, backlog, ready list.
    void after(uint32_t idx) noexcept;
    // Heap.
    void heap_set(uint32_t idx, uint64_t deadline) noexcept;
    void heap_remove(uint32_t idx) noexcept;
    void heap_up(uint32_t pos) noexcept;
    void heap_down(uint32_t pos) noexcept;
    void heap_swap(uint32_t a, uint32_t b) noexcept;

    tcp_layer_config cfg_;
    tcp_conn_config conn6_;
    // Before the slots: their queues give blocks back when they are destroyed.
    tcp_block_pool blocks_;
    stack &st_;
    rte_mempool *pool_;
    net_counters &nc_;
    tcp_counters &tc_;
    uint32_t port_cursor_ = 0;  // connect(): next offset into the ephemeral range
    tcp_isn_generator isn_;
    tcp_syncookies cookies_;
    uint64_t now_ = 0;   // the time of the call in progress (emit has none)
    bool mute_ = false;  // swallow emits (rebuilding a cookie connection)

    // Made on first use: only as many slots as were ever in use at once are
    // resident (slot_array.h).
    slot_array<slot> slots_;
    std::unique_ptr<uint32_t[]> table_;  // slot index + 1, 0 = empty
    uint32_t table_mask_ = 0;
    std::unique_ptr<uint32_t[]> heap_;  // slot indices, min deadline first
    uint32_t heap_len_ = 0;
    std::unique_ptr<uint32_t[]> ready_;  // ring of slot indices with events
    // Slots whose connection has output waiting for flush() (slot::owed; a
    // freed slot's entry stays and is skipped).
    std::unique_ptr<uint32_t[]> owed_;
    uint32_t owed_len_ = 0;
    // Slots reported `closed` by the last poll_events(), freed at the start
    // of the next one: while the application handles a batch, a slot it is
    // told about cannot be reused by a connection opened in the same batch
    // (whose notices would then carry the same index and be mistaken).
    std::unique_ptr<uint32_t[]> zombies_;
    uint32_t nzombies_ = 0;
    uint32_t ready_head_ = 0, ready_len_ = 0;
    // Detached TIME-WAIT slots, oldest first (intrusive list through slot).
    uint32_t tw_head_ = UINT32_MAX, tw_tail_ = UINT32_MAX, ntw_ = 0;
    std::unique_ptr<listener[]> listeners_;
    uint32_t nlisteners_ = 0;
};

}  // namespace ferry::net
