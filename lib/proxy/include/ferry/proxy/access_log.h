// The access log's data path: one fixed-size record per request, and the
// per-lcore single-producer/single-consumer ring a worker writes them into.
//
// Shape (docs/OPERATIONS.md "Access log"). The worker that owns a client
// connection captures what a line needs while the request head is still in
// the head buffer (the buffer is reused for the next request): method, target,
// Host, Referer, User-Agent, each copied and truncated to the limits below.
// When the request ends — the response's last byte was handed to the client
// connection, a generated error response was sent, or the connection was
// aborted or went away first — it copies the record into its lcore's ring
// (one memcpy, no allocation, no lock, no system call). ONE control thread
// (app/ferry/access_log.cpp) drains every ring, formats the lines and
// write()s them in batches. A worker never waits for it: when the ring is
// full the record is dropped and counted (http_counters::access_log_dropped).
//
// Times are the reactor's clock (reactor::now_ns(), TSC based, nanoseconds);
// the writer converts them to wall-clock time, so a worker never reads
// CLOCK_REALTIME.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>

namespace ferry::proxy {

// The timeout that ended a request (access_record::timeout; counted in
// http_counters as timeouts_<name>). Client side: header, body (408); the
// keep-alive idle timeout ends no request. Upstream side (504 before the
// response began, a reset after): connect, write (sending the request),
// response (waiting for its head), read (its body), total.
enum class timeout_kind : uint8_t { none, header, body, connect, write, response, read, total };

// "-", "header", "body", "connect", "write", "response", "read", "total".
[[nodiscard]] constexpr const char *name(timeout_kind k) noexcept {
    constexpr const char *names[] = {"-",     "header",   "body", "connect",
                                     "write", "response", "read", "total"};
    const auto i = static_cast<unsigned>(k);
    return i < sizeof names / sizeof names[0] ? names[i] : "?";
}

// One request as the access log sees it. Fixed size, trivially copyable.
struct access_record {
    // Field limits: longer values are cut to this many bytes (documented).
    static constexpr uint32_t method_cap = 16;
    static constexpr uint32_t target_cap = 512;  // also the raw request line of a rejected head
    static constexpr uint32_t host_cap = 128;
    static constexpr uint32_t referer_cap = 256;
    static constexpr uint32_t user_agent_cap = 256;
    static constexpr uint64_t no_time = UINT64_MAX;

    // flags
    static constexpr uint8_t f_parsed = 1;      // the head parsed: method/target/version valid
    static constexpr uint8_t f_crossed = 2;     // handed to another lcore (shared pool)
    static constexpr uint8_t f_aborted = 4;     // the response was cut short, or never sent
    static constexpr uint8_t f_has_body = 8;    // (worker-internal) the framer counts the body
    static constexpr uint8_t f_truncated = 16;  // some field was cut to its limit

    uint64_t t_start = 0;       // the request's first byte was read (reactor ns)
    uint64_t t_end = 0;         // the request ended (reactor ns)
    uint64_t bytes_sent = 0;    // response bytes handed to the client connection (head + body)
    uint64_t body_bytes = 0;    // request body payload bytes read (chunk framing not counted)
    uint64_t uct_ns = no_time;  // upstream connect time (0: a reused connection), or none
    uint64_t urt_ns = no_time;  // request sent upstream -> response head, or none
    uint32_t client_addr = 0;   // IPv4, host byte order
    uint16_t client_port = 0;
    uint16_t status = 0;        // sent to the client; 499/444 when none was (see OPERATIONS.md)
    int16_t upstream = -1;      // index into ferry_config::upstreams, or -1
    int16_t server = -1;        // index into that upstream's servers, or -1
    uint8_t version_minor = 1;  // HTTP/1.<minor> (f_parsed)
    uint8_t flags = 0;
    uint8_t method_len = 0;
    timeout_kind timeout = timeout_kind::none;  // the timeout that ended it, if one did
    uint16_t target_len = 0, host_len = 0, referer_len = 0, user_agent_len = 0;
    char method[method_cap];
    char target[target_cap];
    char host[host_cap];
    char referer[referer_cap];
    char user_agent[user_agent_cap];
};
static_assert(sizeof(access_record) <= 1280, "keep the ring's footprint predictable");

// An SPSC ring of access_records: producer = the worker lcore that owns the
// proxy, consumer = the access-log writer thread. Capacity is a power of two,
// allocated once at construction.
class access_log_sink {
public:
    // `capacity` is rounded up to a power of two (at least 2). `lcore` is the
    // EAL lcore id of the producer, for the writer's `lc=` field.
    access_log_sink(uint32_t capacity, unsigned lcore)
        : cap_(round_up(capacity)),
          mask_(cap_ - 1),
          lcore_(lcore),
          slots_(std::make_unique<access_record[]>(cap_)) {}
    access_log_sink(const access_log_sink &) = delete;
    access_log_sink &operator=(const access_log_sink &) = delete;

    [[nodiscard]] uint32_t capacity() const noexcept { return cap_; }
    [[nodiscard]] unsigned lcore() const noexcept { return lcore_; }

    // Producer: the next free slot to fill, or nullptr when the ring is full.
    // A non-null slot becomes visible to the consumer only at commit().
    access_record *reserve() noexcept {
        const uint64_t t = tail_.load(std::memory_order_relaxed);
        if (t - head_cache_ == cap_) {
            // Pairs with the consumer's release store of head_: every read it
            // made of the slots it released happened before we overwrite them.
            head_cache_ = head_.load(std::memory_order_acquire);
            if (t - head_cache_ == cap_)
                return nullptr;
        }
        return &slots_[t & mask_];
    }
    // Producer: publishes the slot reserve() returned.
    void commit() noexcept {
        // Release: the record's bytes are written before the consumer can see
        // the new tail (its acquire load below).
        tail_.store(tail_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    }

    // Consumer: calls f(const access_record &) for up to `max` records in
    // order, then frees their slots. Returns how many.
    template <class F>
    uint32_t consume(uint32_t max, F &&f) {
        const uint64_t h = head_.load(std::memory_order_relaxed);
        // Acquire: pairs with commit()'s release; the records up to t are complete.
        const uint64_t t = tail_.load(std::memory_order_acquire);
        const uint64_t n = t - h < max ? t - h : max;
        for (uint64_t i = 0; i < n; ++i)
            f(static_cast<const access_record &>(slots_[(h + i) & mask_]));
        // Release: our reads of these slots are done before the producer may
        // reuse them (its acquire load in reserve()).
        head_.store(h + n, std::memory_order_release);
        return static_cast<uint32_t>(n);
    }
    // Any thread: records waiting (approximate while the producer runs).
    [[nodiscard]] uint64_t depth() const noexcept {
        return tail_.load(std::memory_order_acquire) - head_.load(std::memory_order_acquire);
    }

private:
    static uint32_t round_up(uint32_t n) noexcept {
        uint32_t c = 2;
        while (c < n && c < (1u << 30))
            c <<= 1;
        return c;
    }

    const uint32_t cap_, mask_;
    const unsigned lcore_;
    std::unique_ptr<access_record[]> slots_;
    // The producer's line: its position and its last view of the consumer's.
    alignas(64) std::atomic<uint64_t> tail_{0};
    uint64_t head_cache_ = 0;
    // The consumer's line.
    alignas(64) std::atomic<uint64_t> head_{0};
};

}  // namespace ferry::proxy
