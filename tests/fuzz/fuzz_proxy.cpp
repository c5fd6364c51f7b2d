// Fuzz target: whole proxied exchanges. The input is a script of steps that
// clients and origins take against one worker's proxy on the unit tests' bed
// (tests/unit/proxy/bed.h: real lib/net TCP back to back in memory, a fake
// clock): bytes from a client or an origin (raw, or canned HTTP pieces to get
// deep quickly), new connections, closes, resets, and time passing. Client
// bytes and origin bytes interleave in any order.
//
// Oracles besides the sanitizers:
//   - what ferry sends an origin is always a sequence of well-formed requests
//     (lib/http's strict parser and body framer accept it whole, but for an
//     unfinished last one): ferry never forwards framing it did not derive;
//   - once every peer has closed and the timers ran out, the proxy holds no
//     connection and every mbuf is back in the pool (the bed's leak check);
//   - any failure the bed reports (an EXPECT in bed.h) aborts.
//
// Built two ways, like the other targets: with clang's -fsanitize=fuzzer for
// real fuzzing (perf/fuzz), and with smoke_main.cpp for the fuzz-smoke suite.
#include <rte_errno.h>
#include <rte_mbuf.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "bed.h"
#include "ferry/http/parser.h"
#include "fuzz_target.h"
#include "test_eal.h"

namespace ferry::proxy::test {
rte_mempool *g_pool = nullptr;
}

namespace {

using namespace ferry;
using namespace ferry::proxy::test;

// A bed EXPECT that fails is a finding: abort so the fuzzer keeps the input.
class abort_on_failure : public testing::EmptyTestEventListener {
    void OnTestPartResult(const testing::TestPartResult &r) override {
        if (!r.failed()) return;
        std::fprintf(stderr, "fuzz_proxy: %s:%d: %s\n", r.file_name() ? r.file_name() : "?",
                     r.line_number(), r.summary());
        std::abort();
    }
};

uint64_t g_answered = 0;  // inputs in which a client got a 2xx

void check(bool ok, const char *what) {
    if (ok) return;
    std::fprintf(stderr, "fuzz_proxy: %s\n", what);
    std::abort();
}

bool init() {
    if (!ferry::test::eal_start("fuzz_proxy", "ferry-fuzz-proxy", 128)) std::abort();
    g_pool = rte_pktmbuf_pool_create("fuzz_proxy", 8191, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                     SOCKET_ID_ANY);
    if (g_pool == nullptr) {
        std::fprintf(stderr, "pktmbuf pool: %s\n", rte_strerror(rte_errno));
        std::abort();
    }
    testing::UnitTest::GetInstance()->listeners().Append(new abort_on_failure);
    std::atexit([] { ferry::test::eal_stop(); });
    return true;
}

// Short timeouts so that a script's end drains in a few simulated seconds.
const bed_options &options() {
    static const bed_options o = [] {
        bed_options b;
        b.toml = bed_config(
            "client_header_timeout_ms = 1000\nclient_idle_timeout_ms = 1000\n"
            "client_body_timeout_ms = 1000\nmax_body_bytes = 100000\n",
            "connect_timeout_ms = 500\nresponse_timeout_ms = 1000\nread_timeout_ms = 1000\n"
            "write_timeout_ms = 1000\nmax_fails = 0\nretries = 1\n");
        b.max_connections = 16;
        return b;
    }();
    return o;
}

constexpr std::string_view canned[] = {
    "GET / HTTP/1.1\r\nHost: h\r\n\r\n",
    "HEAD /x HTTP/1.1\r\nHost: h\r\n\r\n",
    "POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\n",
    "POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: 3, 3\r\n\r\n",
    "PUT /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n",
    "GET / HTTP/1.0\r\n\r\n",
    "Expect: 100-continue\r\n",
    "Connection: close\r\n",
    "\r\n",
    "hello",
    "5\r\nhello\r\n",
    "3;ext=1\r\nabc\r\n",
    "0\r\n\r\n",
    "0\r\nX-T: 1\r\n\r\n",
    "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n",
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
    "HTTP/1.1 204 No Content\r\n\r\n",
    "HTTP/1.1 100 Continue\r\n\r\n",
    "HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n",
    "HTTP/1.0 200 OK\r\n\r\n",
    "HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nok",
    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n",
    "Connection: upgrade\r\nUpgrade: websocket\r\n",
    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n",
};

// What ferry sent one origin: complete, well-formed requests, and at most
// an unfinished one at the end.
void check_forwarded(std::string_view rx) {
    http::limits lim;
    lim.max_head_bytes = 1 << 17;
    lim.max_headers = 256;
    std::vector<http::header> fields(lim.max_headers);
    while (!rx.empty()) {
        http::head_parser hp;
        http::request req;
        const auto r = http::parse_request(hp, rx, req, fields, lim);
        if (r.st == http::parse_result::status::need_more) return;
        check(r.st == http::parse_result::status::done, "ferry forwarded a malformed request head");
        // An upgrade ferry forwards may become a tunnel: what follows is
        // the new protocol's bytes, not HTTP.
        if (req.upgrade) return;
        rx.remove_prefix(r.consumed);
        http::body_framer f;
        f.reset(req.body, req.content_length, lim);
        const auto b = f.feed(rx);
        check(!b.error, "ferry forwarded a request body with bad framing");
        if (!b.done) return;
        rx.remove_prefix(b.consumed);
    }
}

struct script {
    const uint8_t *p;
    size_t n;
    bool more() const { return n != 0; }
    uint8_t byte() {
        if (n == 0) return 0;
        --n;
        return *p++;
    }
    std::string_view bytes(size_t k) {
        k = std::min(k, n);
        std::string_view s(reinterpret_cast<const char *>(p), k);
        p += k;
        n -= k;
        return s;
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const bool ready = init();
    (void)ready;
    script s{data, size};
    {
        proxy_bed bed(options());
        std::vector<size_t> clients{bed.connect()};
        for (int steps = 0; s.more() && steps < 64; ++steps) {
            const uint8_t op = s.byte();
            const unsigned arg = op >> 3;
            peer_conn *origin =
                bed.origin_count() != 0 ? bed.origin(arg % bed.origin_count()) : nullptr;
            peer_conn &client = bed.conn(clients[arg % clients.size()]);
            switch (op & 7) {
                case 0:  // a client sends raw bytes
                    if (!client.closed) bed.send(client, s.bytes(s.byte()));
                    break;
                case 1:  // an origin sends raw bytes
                    if (origin != nullptr && !origin->closed) bed.send(*origin, s.bytes(s.byte()));
                    break;
                case 2:  // time passes: 10 ms .. 3.2 s
                    bed.advance((arg + 1) * 100 * ms, 50 * ms);
                    break;
                case 3:  // a new client
                    if (clients.size() < 4) clients.push_back(bed.connect());
                    break;
                case 4:  // a close: a client's (arg even) or an origin's
                    if (arg % 2 == 0 && !client.closed)
                        bed.close(client);
                    else if (origin != nullptr && !origin->closed)
                        bed.close(*origin);
                    break;
                case 5:  // a reset
                    if (arg % 2 == 0 && !client.closed)
                        bed.reset(client);
                    else if (origin != nullptr && !origin->closed)
                        bed.reset(*origin);
                    break;
                default: {  // a canned HTTP piece, from a client (bit 0 of the next byte) or an origin
                    const uint8_t who = s.byte();
                    const std::string_view piece = canned[arg % std::size(canned)];
                    if (who & 1) {
                        if (origin != nullptr && !origin->closed) bed.send(*origin, piece);
                    } else if (!client.closed) {
                        bed.send(client, piece);
                    }
                    break;
                }
            }
        }
        for (size_t i = 0; i < bed.origin_count(); ++i) check_forwarded(bed.origin(i)->rx);
        if (bed.ctr().responses_2xx.get() != 0) ++g_answered;
        // Everyone leaves; the timers run out.
        for (size_t c : clients)
            if (!bed.conn(c).closed) bed.close(c);
        for (size_t i = 0; i < bed.origin_count(); ++i)
            if (!bed.origin(i)->closed) bed.close(*bed.origin(i));
        bed.advance(6000 * ms, 100 * ms);
        check(bed.proxy().open_connections() == 0, "a connection outlived every peer");
    }  // ~proxy_bed: every mbuf back in the pool, or an EXPECT aborts
    return 0;
}

// The smoke run must reach answered exchanges, or its seeds stopped working.
extern "C" int fuzz_report() {
    std::printf("  exchanges answered 2xx: %llu\n", static_cast<unsigned long long>(g_answered));
    if (g_answered == 0) {
        std::fprintf(stderr, "fuzz_proxy: no input reached a 2xx response: the seeds no longer work\n");
        return 1;
    }
    return 0;
}
