// The event log's producing side and its pure parts (events.h): a server's
// health changes write exactly one event each (down with its cause, up at
// the next answer), whatever path found them; the rate limit and the causes'
// wording are table-tested.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "bed.h"
#include "ferry/proxy/events.h"

namespace ferry::proxy::test {
namespace {

std::vector<server_event> take(event_sink &s) {
    std::vector<server_event> out;
    s.consume(UINT32_MAX, [&](const server_event &e) { out.push_back(e); });
    return out;
}

// Two resets in a row (max_fails = 2): one down event, cause upstream_reset;
// the answer to the next request (tried anyway: the only server): one up.
TEST(Events, PassiveFailuresMarkDownOnceAndAnAnswerMarksUp) {
    bed_options opt;
    opt.toml = bed_config("", "max_fails = 2\nfail_timeout_ms = 60000\nretries = 0\n");
    proxy_bed bed(opt);
    event_sink sink(64);
    bed.proxy().set_event_log(&sink);
    for (size_t i = 0; i < 2; ++i) {
        const size_t c = bed.connect();
        bed.send(c, simple_get);
        ASSERT_EQ(bed.origin_count(), i + 1);
        bed.reset(*bed.origin(i));
        EXPECT_TRUE(bed.conn(c).rx.starts_with("HTTP/1.1 502 ")) << bed.conn(c).rx;
        bed.close(c);
    }
    auto ev = take(sink);
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].what, server_event::kind::down);
    EXPECT_EQ(ev[0].why, term_reason::upstream_reset);
    EXPECT_EQ(ev[0].fails, 2u);
    EXPECT_EQ(ev[0].upstream, 0u);
    EXPECT_EQ(ev[0].server, 0u);
    EXPECT_FALSE(ev[0].check);
    EXPECT_EQ(describe_cause(ev[0]), "connection reset");
    const size_t c3 = bed.connect();
    bed.send(c3, simple_get);
    ASSERT_EQ(bed.origin_count(), 3u);
    bed.send(*bed.origin(2), ok5);
    EXPECT_TRUE(bed.conn(c3).rx.ends_with("hello"));
    ev = take(sink);
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].what, server_event::kind::up);
    // Another answer: no change, no event.
    bed.send(c3, simple_get);
    bed.send(*bed.origin(2), ok5);
    EXPECT_TRUE(take(sink).empty());
    EXPECT_EQ(bed.ctr().events_written.get(), 2u);
    EXPECT_EQ(bed.ctr().events_dropped.get(), 0u);
    finish(bed, {c3});
}

// A server nobody listens on: connect refused, and a server that stays dead
// is logged down once, not again each time its fail_timeout_ms passes.
TEST(Events, ARefusedServerIsDownOnceWhileItStaysDead) {
    bed_options opt;
    opt.toml = bed_config("", "max_fails = 1\nfail_timeout_ms = 100\nretries = 0\n");
    opt.origin_ports = {};
    proxy_bed bed(opt);
    event_sink sink(64);
    bed.proxy().set_event_log(&sink);
    for (int i = 0; i < 4; ++i) {
        const size_t c = bed.connect();
        bed.send(c, simple_get);
        EXPECT_TRUE(bed.conn(c).rx.starts_with("HTTP/1.1 502 ")) << bed.conn(c).rx;
        bed.close(c);
        bed.advance(200 * ms, 50 * ms);  // past fail_timeout_ms
    }
    const auto ev = take(sink);
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].what, server_event::kind::down);
    EXPECT_EQ(ev[0].why, term_reason::upstream_connect_refused);
    EXPECT_EQ(describe_cause(ev[0]), "connect refused");
    EXPECT_GE(bed.shared().health[0][0].marked_down.load(), 4u);
}

// Active checks: a 503 answer twice (max_fails = 2) -> down, said as the
// check's status; a 200 -> up.
TEST(Events, FailedHealthChecksSayTheStatus) {
    bed_options opt;
    opt.toml = bed_config("", "health_check_path = \"/hc\"\nhealth_check_interval_ms = 1000\n"
                              "health_check_timeout_ms = 500\nmax_fails = 2\n"
                              "fail_timeout_ms = 60000\n");
    proxy_bed bed(opt);
    event_sink sink(64);
    bed.proxy().set_event_log(&sink);
    auto run_checks = [&](int steps, std::string_view resp) {
        for (int i = 0; i < steps; ++i) {
            bed.advance(100 * ms, 100 * ms);
            for (size_t k = 0; bed.origin(k) != nullptr; ++k) {
                peer_conn &o = *bed.origin(k);
                if (o.closed || !o.rx.ends_with("\r\n\r\n")) continue;
                o.rx += "#";
                bed.send(o, resp);
            }
        }
    };
    run_checks(15, "HTTP/1.1 503 No\r\nContent-Length: 0\r\n\r\n");
    auto ev = take(sink);
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].what, server_event::kind::down);
    EXPECT_TRUE(ev[0].check);
    EXPECT_EQ(ev[0].status, 503u);
    EXPECT_EQ(ev[0].fails, 2u);
    EXPECT_EQ(describe_cause(ev[0]), "health check answered 503");
    run_checks(10, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    ev = take(sink);
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].what, server_event::kind::up);
}

// A full ring drops the event and counts it; the data path never waits.
TEST(Events, AFullRingDropsAndCounts) {
    bed_options opt;
    opt.toml = bed_config("", "max_fails = 1\nfail_timeout_ms = 60000\nretries = 0\n");
    proxy_bed bed(opt);
    event_sink sink(2);
    bed.proxy().set_event_log(&sink);
    for (size_t i = 0; i < 3; ++i) {
        const size_t c = bed.connect();
        bed.send(c, simple_get);
        ASSERT_EQ(bed.origin_count(), 2 * i + 1);
        bed.reset(*bed.origin(2 * i));  // down
        bed.close(c);
        const size_t c2 = bed.connect();
        bed.send(c2, simple_get);  // tried anyway
        ASSERT_EQ(bed.origin_count(), 2 * i + 2);
        // up; Connection: close, so the next request opens a connection again
        bed.send(*bed.origin(2 * i + 1),
                 "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello");
        bed.close(*bed.origin(2 * i + 1));
        finish(bed, {c2});
    }
    EXPECT_EQ(bed.ctr().events_written.get(), 2u);
    EXPECT_EQ(bed.ctr().events_dropped.get(), 4u);
    EXPECT_EQ(take(sink).size(), 2u);
}

struct limiter_case {
    const char *name;
    uint32_t burst;
    std::vector<uint64_t> at_ms;  // events of server 0, alternately down and up
    std::vector<bool> admitted;
    uint64_t summary_at_ms;
    uint64_t suppressed;  // in the summary at summary_at_ms (0: none)
};

class Limiter : public ::testing::TestWithParam<limiter_case> {};

TEST_P(Limiter, AdmitsABurstPerWindowAndSummarisesTheRest) {
    const limiter_case &c = GetParam();
    event_limiter lim(2, c.burst, 1000 * ms);
    for (size_t i = 0; i < c.at_ms.size(); ++i)
        EXPECT_EQ(lim.admit(0, i % 2 == 0, c.at_ms[i] * ms), c.admitted[i]) << "event " << i;
    uint64_t got = 0;
    bool last_down = false;
    lim.summaries(c.summary_at_ms * ms, [&](size_t s, uint64_t n, bool down) {
        EXPECT_EQ(s, 0u);
        got = n;
        last_down = down;
    });
    EXPECT_EQ(got, c.suppressed);
    if (got != 0) {
        EXPECT_EQ(last_down, c.at_ms.size() % 2 == 1);
    }
    // Summarised once only.
    uint64_t again = 0;
    lim.summaries(c.summary_at_ms * ms, [&](size_t, uint64_t n, bool) { again += n; });
    EXPECT_EQ(again, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Events, Limiter,
    ::testing::Values(
        limiter_case{"under_the_burst", 3, {0, 10, 20}, {true, true, true}, 2000, 0},
        limiter_case{"flapping", 3, {0, 10, 20, 30, 40}, {true, true, true, false, false}, 1000, 2},
        limiter_case{"window_not_over", 2, {0, 10, 20}, {true, true, false}, 999, 0},
        limiter_case{"a_new_window_admits_again", 1, {0, 10, 1500}, {true, false, true}, 1600, 1}),
    [](const auto &info) { return std::string(info.param.name); });

}  // namespace
}  // namespace ferry::proxy::test
