// Table rows for the head tests: an input and what parsing it must give.
// Unset optionals are not checked; consumed defaults to the whole input for
// a done case.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "test_support.h"

namespace ferry::http::test {

inline constexpr auto done = parse_result::status::done;
inline constexpr auto need_more = parse_result::status::need_more;
inline constexpr auto error = parse_result::status::error;

using field_list = std::vector<std::pair<std::string, std::string>>;

struct req_expect {
    parse_result::status st = done;
    parse_error err = parse_error::none;
    std::optional<uint32_t> offset;
    // The error offset is where this text first occurs in the input.
    std::optional<std::string> at;
    std::optional<uint32_t> consumed;
    std::optional<method> m;
    std::optional<std::string> method_text;
    std::optional<std::string> target;
    std::optional<target_form> form;
    std::optional<std::string> origin_form;
    std::optional<std::string> authority;
    std::optional<int> version_minor;
    std::optional<body_kind> body;
    std::optional<uint64_t> content_length;
    std::optional<bool> keep_alive;
    std::optional<bool> expect_continue;
    std::optional<bool> expect_other;
    std::optional<bool> has_host;
    std::optional<std::string> host;
    std::optional<bool> upgrade;
    std::optional<uint8_t> connection;
    std::optional<field_list> fields;
    limits lim{};
    std::size_t storage = 64;
};

struct req_case {
    std::string name;
    std::string input;
    req_expect e;
};

struct resp_expect {
    parse_result::status st = done;
    parse_error err = parse_error::none;
    std::optional<uint32_t> offset;
    std::optional<std::string> at;
    std::optional<uint32_t> consumed;
    std::optional<uint16_t> status;
    std::optional<std::string> reason;
    std::optional<int> version_minor;
    std::optional<body_kind> body;
    std::optional<uint64_t> content_length;
    std::optional<bool> keep_alive;
    std::optional<bool> upgrade;
    std::optional<field_list> fields;
    limits lim{};
    std::size_t storage = 64;
};

struct resp_case {
    std::string name;
    std::string input;
    request_info info;
    resp_expect e;
};

inline std::ostream &operator<<(std::ostream &os, const req_case &c) {
    return os << c.name;
}
inline std::ostream &operator<<(std::ostream &os, const resp_case &c) {
    return os << c.name;
}

template <class Case>
std::string case_name(const testing::TestParamInfo<Case> &i) {
    return i.param.name;
}

inline field_list fields_of(std::span<const header> hs) {
    field_list l;
    for (const header &h : hs)
        l.emplace_back(std::string(h.name), std::string(h.value));
    return l;
}

template <class E>
void check_result(const parse_result &r, const E &e, std::string_view input) {
    ASSERT_EQ(name(r.st), name(e.st)) << dump_result(r);
    if (e.st == error) {
        EXPECT_EQ(name(r.err), name(e.err));
        if (e.offset) {
            EXPECT_EQ(r.offset, *e.offset) << "error offset";
        }
        if (e.at) {
            const std::size_t want = input.find(*e.at);
            ASSERT_NE(want, std::string_view::npos) << "marker not in the input";
            EXPECT_EQ(r.offset, want) << "error offset, expected at \"" << *e.at << "\"";
        }
        EXPECT_LE(r.offset, input.size());
    }
    if (e.st == done) {
        EXPECT_EQ(r.consumed, e.consumed.value_or(static_cast<uint32_t>(input.size())));
    }
}

inline void check_request(const req_case &c) {
    request q{};
    parse_result r{};
    const req_expect &e = c.e;
    parse_every_way<request>(c.input, head_call<request>{}, e.lim, e.storage, q, r);
    check_result(r, e, c.input);
    if (r.st != done)
        return;
    if (e.m) {
        EXPECT_EQ(name(q.m), name(*e.m));
    }
    if (e.method_text) {
        EXPECT_EQ(q.method_text, *e.method_text);
    }
    if (e.target) {
        EXPECT_EQ(q.target, *e.target);
    }
    if (e.form) {
        EXPECT_EQ(name(q.form), name(*e.form));
    }
    if (e.origin_form) {
        EXPECT_EQ(q.origin_form, *e.origin_form);
    }
    if (e.authority) {
        EXPECT_EQ(q.authority, *e.authority);
    }
    if (e.version_minor) {
        EXPECT_EQ(q.version_minor, *e.version_minor);
    }
    if (e.body) {
        EXPECT_EQ(name(q.body), name(*e.body));
    }
    if (e.content_length) {
        EXPECT_EQ(q.content_length, *e.content_length);
    }
    if (e.keep_alive) {
        EXPECT_EQ(q.keep_alive, *e.keep_alive);
    }
    if (e.expect_continue) {
        EXPECT_EQ(q.expect_continue, *e.expect_continue);
    }
    if (e.expect_other) {
        EXPECT_EQ(q.expect_other, *e.expect_other);
    }
    if (e.has_host) {
        EXPECT_EQ(q.has_host, *e.has_host);
    }
    if (e.host) {
        EXPECT_EQ(q.host, *e.host);
    }
    if (e.upgrade) {
        EXPECT_EQ(q.upgrade, *e.upgrade);
    }
    if (e.connection) {
        EXPECT_EQ(q.connection, *e.connection);
    }
    if (e.fields) {
        EXPECT_EQ(fields_of(q.headers), *e.fields);
    }
}

inline void check_response(const resp_case &c) {
    response q{};
    parse_result r{};
    const resp_expect &e = c.e;
    parse_every_way<response>(c.input, head_call<response>{c.info}, e.lim, e.storage, q, r);
    check_result(r, e, c.input);
    if (r.st != done)
        return;
    if (e.status) {
        EXPECT_EQ(q.status, *e.status);
    }
    if (e.reason) {
        EXPECT_EQ(q.reason, *e.reason);
    }
    if (e.version_minor) {
        EXPECT_EQ(q.version_minor, *e.version_minor);
    }
    if (e.body) {
        EXPECT_EQ(name(q.body), name(*e.body));
    }
    if (e.content_length) {
        EXPECT_EQ(q.content_length, *e.content_length);
    }
    if (e.keep_alive) {
        EXPECT_EQ(q.keep_alive, *e.keep_alive);
    }
    if (e.upgrade) {
        EXPECT_EQ(q.upgrade, *e.upgrade);
    }
    if (e.fields) {
        EXPECT_EQ(fields_of(q.headers), *e.fields);
    }
}

}  // namespace ferry::http::test
