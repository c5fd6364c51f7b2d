// The exporter's request handling without sockets (admin_request.h): every
// case fed whole, byte by byte, and split in two at every offset must give the
// same answer, since the parser resumes on the same buffer, request and field
// storage across reads.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ferry/telemetry/admin_request.h"

namespace ferry::telemetry {
namespace {

using st = http::parse_result::status;
using body = admin_reply::body;

struct exchange_case {
    const char *name;
    std::string request;
    uint16_t status;
    body what = body::status_text;
    bool head_only = false;
    bool allow = false;
};

std::ostream &operator<<(std::ostream &os, const exchange_case &c) { return os << c.name; }

const std::string crlf_get = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9180\r\n"
                             "User-Agent: Prometheus/2.45\r\nAccept: text/plain\r\n\r\n";

std::vector<exchange_case> cases() {
    return {
        {"get_metrics", crlf_get, 200, body::metrics},
        {"head_metrics", "HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 200, body::metrics, true},
        {"get_healthz_http10", "GET /healthz HTTP/1.0\r\n\r\n", 200, body::healthz},
        {"query_ignored", "GET /metrics?x=1 HTTP/1.1\r\nHost: x\r\n\r\n", 200, body::metrics},
        {"absolute_form", "GET http://x/healthz HTTP/1.1\r\nHost: x\r\n\r\n", 200, body::healthz},
        {"empty_line_first", "\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 200, body::healthz},
        {"post_405", "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx", 405,
         body::status_text, false, true},
        {"unknown_path_404", "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n", 404},
        {"prefix_is_not_the_path", "GET /metricsx HTTP/1.1\r\nHost: x\r\n\r\n", 404},
        {"asterisk_404", "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", 404},
        // What the old lenient copy accepted and lib/http's parser rejects.
        {"bare_lf", "GET /healthz HTTP/1.0\n\n", 400},
        {"bare_lf_in_field", "GET /metrics HTTP/1.1\r\nHost: x\n\r\n", 400},
        {"missing_host_http11", "GET /metrics HTTP/1.1\r\n\r\n", 400},
        {"space_before_colon", "GET /metrics HTTP/1.1\r\nHost : x\r\n\r\n", 400},
        {"obs_fold", "GET /metrics HTTP/1.1\r\nHost: x\r\n y\r\n\r\n", 400},
        // Rejected before too, now with the proxy's status for the reason.
        {"no_version", "GET /metrics\r\n\r\n", 400},
        {"http2_505", "GET /metrics HTTP/2.0\r\n\r\n", 505},
        {"field_without_colon", "GET /metrics HTTP/1.1\r\nHost\r\n\r\n", 400},
        {"lower_case_method_405", "get /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 405,
         body::status_text, false, true},
        {"head_over_8k_431", "GET /metrics HTTP/1.1\r\nX: " + std::string(9000, 'a'), 431},
    };
}

void expect_reply(const admin_request &r, const exchange_case &c, const std::string &how) {
    const admin_reply a = r.reply();
    EXPECT_EQ(a.status, c.status) << how << " (" << http::name(r.error()) << ")";
    EXPECT_EQ(a.what, c.what) << how;
    EXPECT_EQ(a.head_only, c.head_only) << how;
    EXPECT_EQ(a.allow, c.allow) << how;
}

st want_status(const exchange_case &c) {
    return c.status == 200 || c.status == 404 || c.status == 405 ? st::done : st::error;
}

class AdminRequest : public ::testing::TestWithParam<exchange_case> {};

TEST_P(AdminRequest, Whole) {
    const exchange_case &c = GetParam();
    admin_request r;
    EXPECT_EQ(r.feed(c.request), want_status(c));
    expect_reply(r, c, "whole");
}

TEST_P(AdminRequest, ByteByByte) {
    const exchange_case &c = GetParam();
    admin_request r;
    st s = st::need_more;
    size_t i = 0;
    for (; i < c.request.size() && s == st::need_more; ++i) {
        EXPECT_EQ(r.reply().status, 0u) << "answered before the head was complete";
        s = r.feed(c.request.substr(i, 1));
    }
    EXPECT_EQ(s, want_status(c)) << "after " << i << " bytes";
    expect_reply(r, c, "byte by byte");
}

TEST_P(AdminRequest, SplitAtEveryOffset) {
    const exchange_case &c = GetParam();
    for (size_t cut = 1; cut < c.request.size(); ++cut) {
        admin_request r;
        st s = r.feed(c.request.substr(0, cut));
        if (s == st::need_more) s = r.feed(c.request.substr(cut));
        EXPECT_EQ(s, want_status(c)) << "split at " << cut;
        expect_reply(r, c, "split at " + std::to_string(cut));
        if (::testing::Test::HasFailure()) break;
    }
}

INSTANTIATE_TEST_SUITE_P(Exporter, AdminRequest, ::testing::ValuesIn(cases()),
                         [](const auto &info) { return std::string(info.param.name); });

TEST(AdminRequestLimits, RoomNeverEmptyWhileMoreIsNeeded) {
    admin_request r;
    const std::string start = "GET /metrics HTTP/1.1\r\nX: ";
    EXPECT_EQ(r.feed(start + std::string(admin_request::max_head - 1 - start.size(), 'a')),
              st::need_more);
    EXPECT_EQ(r.room().size(), 1u);
    EXPECT_EQ(r.feed("a"), st::error);
    EXPECT_EQ(r.error(), http::parse_error::head_too_large);
    EXPECT_EQ(r.reply().status, 431u);
    EXPECT_EQ(r.room().size(), 0u);
}

TEST(AdminRequestLimits, NothingChangesAfterTheHead) {
    admin_request r;
    EXPECT_EQ(r.feed(crlf_get), st::done);
    EXPECT_EQ(r.feed("GET /nope HTTP/1.1\r\n\r\n"), st::done);
    EXPECT_EQ(r.reply().status, 200u);
    EXPECT_EQ(r.reply().what, body::metrics);
}

TEST(AdminSerialize, HeadAndBody) {
    admin_reply a;
    a.status = 200;
    a.what = body::metrics;
    EXPECT_EQ(serialize(a, "x 1\n"),
              "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
              "Content-Length: 4\r\nCache-Control: no-store\r\nConnection: close\r\n\r\nx 1\n");
    a.head_only = true;
    EXPECT_EQ(serialize(a, "x 1\n"),
              "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
              "Content-Length: 4\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n");
}

TEST(AdminSerialize, RejectionWithAllow) {
    admin_reply a;
    a.status = 405;
    a.allow = true;
    EXPECT_EQ(serialize(a, "Method Not Allowed\n"),
              "HTTP/1.1 405 Method Not Allowed\r\nContent-Type: text/plain; charset=utf-8\r\n"
              "Content-Length: 19\r\nCache-Control: no-store\r\nConnection: close\r\n"
              "Allow: GET, HEAD\r\n\r\nMethod Not Allowed\n");
}

}  // namespace
}  // namespace ferry::telemetry
