// render_metrics() over a view built by hand (no EAL, no port, no proxy):
// the families and samples a view's lcores yield, labelled by lcore id, and
// the exporter's own counters when there is one; the format's escaping.
#include <gtest/gtest.h>

#include <string>

#include "ferry/base/alloc_count.h"
#include "ferry/telemetry/exporter.h"
#include "ferry/telemetry/metrics.h"

namespace ferry::telemetry {
namespace {

// The fixture's configuration, for the view's snapshot function (no captures).
const config::ferry_config *g_cfg = nullptr;

struct two_lcores : ::testing::Test {
    config::ferry_config cfg;
    reload_counters reloads;
    reactor::settings settings;
    reactor::reactor_counters rc[2];
    net::io_counters io[2];
    reactor::reactor loop0{settings, rc[0], 1};
    reactor::reactor loop1{settings, rc[1], 1};
    process_view v;

    void SetUp() override {
        g_cfg = &cfg;
        v.config_snapshot = [] {
            return std::shared_ptr<const config::ferry_config>(g_cfg, [](const auto *) {});
        };
        v.settings = &settings;
        v.wake_all = [] {};
        const reactor::reactor *loops[2] = {&loop0, &loop1};
        for (unsigned i = 0; i < 2; ++i) {
            lcore_view &l = v.lcores.emplace_back();
            l.lcore = 3 + 2 * i;  // EAL ids, not indices: the labels must use these
            l.index = static_cast<uint16_t>(i);
            l.loop = loops[i];
            l.reactor = &rc[i];
            l.io = &io[i];
        }
        rc[0].polls.inc(11);
        rc[1].polls.inc(13);
        io[1].tx_packets.inc(42);
    }
};

bool has_line(const std::string &text, const std::string &line) {
    return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

TEST_F(two_lcores, LcoreCountersAreSamplesLabelledByLcoreId) {
    const std::string m = render_metrics(v);
    EXPECT_TRUE(has_line(m, "ferry_workers 2")) << m;
    EXPECT_TRUE(has_line(m, "# TYPE ferry_reactor_polls_total counter"));
    EXPECT_TRUE(has_line(m, "# HELP ferry_reactor_polls_total loop iterations"));
    EXPECT_TRUE(has_line(m, "ferry_reactor_polls_total{lcore=\"3\"} 11"));
    EXPECT_TRUE(has_line(m, "ferry_reactor_polls_total{lcore=\"5\"} 13"));
    EXPECT_TRUE(has_line(m, "ferry_lcore_can_sleep{lcore=\"5\"} 1"));
    EXPECT_TRUE(has_line(m, "ferry_lcore_asleep{lcore=\"3\"} 0"));
}

TEST_F(two_lcores, ReloadsByResultOnlyWhenOffered) {
    EXPECT_EQ(render_metrics(v).find("ferry_config_"), std::string::npos);
    v.reloads = &reloads;
    reloads.applied.store(3);
    reloads.invalid.store(1);
    reloads.generation.store(3);
    std::string m = render_metrics(v);
    EXPECT_TRUE(has_line(m, "# TYPE ferry_config_reloads_total counter")) << m;
    EXPECT_TRUE(has_line(m, "ferry_config_reloads_total{result=\"applied\"} 3")) << m;
    EXPECT_TRUE(has_line(m, "ferry_config_reloads_total{result=\"invalid\"} 1")) << m;
    EXPECT_TRUE(has_line(m, "ferry_config_reloads_total{result=\"refused\"} 0")) << m;
    EXPECT_TRUE(has_line(m, "ferry_config_generation 3")) << m;
    EXPECT_EQ(m.find("ferry_config_last_reload_seconds"), std::string::npos);  // none ended yet
    reloads.last_unix_ns.store(1'700'000'000'500'000'000ull);
    m = render_metrics(v);
    EXPECT_TRUE(has_line(m, "ferry_config_last_reload_seconds 1700000000.500000000")) << m;
}

TEST_F(two_lcores, IoCountersAreAGroupOfTheirOwn) {
    const std::string m = render_metrics(v);
    EXPECT_TRUE(has_line(m, "# HELP ferry_io_tx_packets_total frames handed to the NIC")) << m;
    EXPECT_TRUE(has_line(m, "# TYPE ferry_io_tx_packets_total counter"));
    EXPECT_TRUE(has_line(m, "ferry_io_tx_packets_total{lcore=\"3\"} 0"));
    EXPECT_TRUE(has_line(m, "ferry_io_tx_packets_total{lcore=\"5\"} 42"));
    // A family's samples follow its HELP and TYPE lines, contiguous.
    const size_t help = m.find("# HELP ferry_io_rx_packets_total");
    const size_t first = m.find("ferry_io_rx_packets_total{lcore=\"3\"} 0");
    const size_t second = m.find("ferry_io_rx_packets_total{lcore=\"5\"} 0");
    const size_t next = m.find("# HELP ferry_io_tx_packets_total");
    ASSERT_NE(help, std::string::npos);
    EXPECT_LT(help, first);
    EXPECT_LT(first, second);
    EXPECT_LT(second, next);
}

TEST(exposition, HelpEscapesBackslashAndNewlineLabelValuesQuotesToo) {
    std::string help, value;
    append_escaped(help, "a \\ b \"c\"\nd", false);
    append_escaped(value, "a \\ b \"c\"\nd", true);
    EXPECT_EQ(help, "a \\\\ b \"c\"\\nd");
    EXPECT_EQ(value, "a \\\\ b \\\"c\\\"\\nd");
}

TEST_F(two_lcores, ExporterCountersWhenThereIsAnExporter) {
    EXPECT_EQ(render_metrics(v).find("ferry_exporter_"), std::string::npos);
    exporter_counters x;
    x.scrapes.inc(4);
    x.rejected.inc(2);
    v.exporter = &x;
    const std::string m = render_metrics(v);
    EXPECT_TRUE(has_line(m, "# TYPE ferry_exporter_scrapes_total counter")) << m;
    EXPECT_TRUE(has_line(m, "ferry_exporter_scrapes_total 4"));
    EXPECT_TRUE(has_line(m, "ferry_exporter_rejected_total 2"));
    EXPECT_TRUE(has_line(m, "ferry_exporter_read_timeouts_total 0"));
}

TEST_F(two_lcores, NoProxyNoPortsNoRingsNoTheirFamilies) {
    const std::string m = render_metrics(v);
    for (const char *prefix : {"ferry_http_", "ferry_upstream_", "ferry_ring_", "ferry_net_",
                               "ferry_tcp_", "ferry_fault_", "ferry_port_"})
        EXPECT_EQ(m.find(prefix), std::string::npos) << prefix;
    // Every family that is there has a sample: the line after its TYPE line
    // is a sample of it.
    size_t at = 0, families = 0;
    while ((at = m.find("# TYPE ", at)) != std::string::npos) {
        const size_t name_end = m.find(' ', at + 7);
        const std::string name = m.substr(at + 7, name_end - at - 7);
        const size_t next = m.find('\n', at) + 1;
        EXPECT_EQ(m.compare(next, name.size(), name), 0) << name << " has no sample";
        at = next;
        ++families;
    }
    EXPECT_GT(families, 20u);
}

}  // namespace
}  // namespace ferry::telemetry

namespace ferry::telemetry {
namespace {

// Issue 19: a scrape after the first allocates nothing. The buffer is the
// caller's and keeps its capacity; label sets are views written straight into
// it; the lists of counter blocks are kept per thread (cleared, not freed).
TEST_F(two_lcores, ASecondRenderIntoTheSameBufferAllocatesNothing) {
    exporter_counters ex;
    v.exporter = &ex;
    std::string out;
    render_metrics(v, out);
    out.reserve(out.size() * 2);  // as the exporter does: room for longer numbers
    rc[0].polls.inc(123456789);    // more digits than before
    const uint64_t a0 = thread_allocations();
    render_metrics(v, out);
    EXPECT_EQ(thread_allocations() - a0, 0u);
    EXPECT_TRUE(has_line(out, "ferry_reactor_polls_total{lcore=\"3\"} 123456800")) << out;
    // The same text as a fresh string, up to the resident memory (which moves).
    const std::string fresh = render_metrics(v);
    const auto upto = [](const std::string &s) { return s.substr(0, s.find("# HELP ferry_memory_")); };
    EXPECT_EQ(upto(out), upto(fresh));
}

// The counter itself counts: a render into a new string allocates.
TEST_F(two_lcores, ThreadAllocationsCountsThisThreadsNews) {
    const uint64_t a0 = thread_allocations();
    const std::string m = render_metrics(v);
    EXPECT_GT(thread_allocations() - a0, 0u);
    EXPECT_FALSE(m.empty());
}

}  // namespace
}  // namespace ferry::telemetry
