// Fuzz target: arbitrary bytes through lib/http.
//
//   1. as a request head, whole and then in random splits of one growing
//      buffer; a valid head is serialized for forwarding and parsed back;
//      its body (the bytes after the head) goes through a body_framer;
//   2. as a response head (answering GET, HEAD or CONNECT, picked by the
//      input), the same way;
//   3. as a body of every kind, whole and in random slices.
//
// Oracles besides the sanitizers: consumed <= length; every view lies inside
// the buffer; done and error are exclusive; an error has a reason and an
// offset inside the buffer; the result does not depend on how the bytes
// were split; what the serializer forwards parses back with the same framing
// (the proxy cannot introduce a desync).
//
// Built with smoke_main.cpp for the fuzz-smoke suite, or with clang's
// -fsanitize=fuzzer for real fuzzing.
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/http/parser.h"
#include "ferry/http/serializer.h"
#include "fuzz_target.h"

namespace {

using namespace ferry::http;

// The input being run, written to fuzz_http_crash.bin when a check fails (the
// smoke driver does not save crashing inputs; replay with `fuzz_http FILE`).
std::string_view g_input;

[[noreturn]] void fail(int line, const char *what) {
    std::fprintf(stderr, "fuzz_http: check failed at line %d: %s\n", line, what);
    if (std::FILE *f = std::fopen("fuzz_http_crash.bin", "wb")) {
        std::fwrite(g_input.data(), 1, g_input.size(), f);
        std::fclose(f);
        std::fprintf(stderr, "fuzz_http: input (%zu bytes) saved to fuzz_http_crash.bin\n",
                     g_input.size());
    }
    std::abort();
}

#define FUZZ_CHECK(cond)           \
    do {                           \
        if (!(cond))               \
            fail(__LINE__, #cond); \
    } while (0)

struct stats {
    uint64_t requests_done = 0;
    uint64_t responses_done = 0;
    uint64_t request_bodies_done = 0;
    uint64_t chunked_done = 0;
    uint64_t reframed = 0;
    uint64_t round_trips = 0;
    std::array<uint64_t, 64> errors{};  // by parse_error
};
stats g_stats;

struct rng {
    uint64_t s;
    uint64_t next() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return s;
    }
    size_t below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(next() % n); }
};

bool inside(std::string_view v, std::string_view buf) {
    return v.empty() || (v.data() >= buf.data() && v.data() + v.size() <= buf.data() + buf.size());
}

void check_result(const parse_result &r, std::string_view buf, const limits &lim) {
    switch (r.st) {
        case parse_result::status::done:
            FUZZ_CHECK(r.consumed > 0 && r.consumed <= buf.size());
            FUZZ_CHECK(r.consumed <= lim.max_head_bytes);
            FUZZ_CHECK(r.err == parse_error::none);
            break;
        case parse_result::status::need_more:
            FUZZ_CHECK(r.consumed == 0);
            FUZZ_CHECK(buf.size() < lim.max_head_bytes);
            break;
        case parse_result::status::error:
            FUZZ_CHECK(r.err != parse_error::none);
            FUZZ_CHECK(r.offset <= buf.size());
            FUZZ_CHECK(name(r.err) != "unknown");
            ++g_stats.errors[static_cast<size_t>(r.err) % g_stats.errors.size()];
            break;
    }
}

void check_fields(std::span<const header> hs, std::span<const header> storage, std::string_view buf,
                  const limits &lim) {
    FUZZ_CHECK(hs.size() <= storage.size() && hs.size() <= lim.max_headers);
    FUZZ_CHECK(hs.empty() || hs.data() == storage.data());
    for (const header &h : hs) {
        FUZZ_CHECK(!h.name.empty());
        FUZZ_CHECK(inside(h.name, buf) && inside(h.value, buf));
        FUZZ_CHECK(h.value.empty() || (h.value.front() != ' ' && h.value.front() != '\t' &&
                                       h.value.back() != ' ' && h.value.back() != '\t'));
    }
}

// Position-independent comparison of two parses of the same bytes.
bool same_view(std::string_view a, const char *base_a, std::string_view b, const char *base_b) {
    if (a.size() != b.size())
        return false;
    if (a.empty())
        return true;
    return a.data() - base_a == b.data() - base_b;
}

bool same_fields(std::span<const header> a, const char *ba, std::span<const header> b,
                 const char *bb) {
    if (a.size() != b.size())
        return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (!same_view(a[i].name, ba, b[i].name, bb) || !same_view(a[i].value, ba, b[i].value, bb))
            return false;
    return true;
}

bool same_result(const parse_result &a, const parse_result &b) {
    return a.st == b.st && a.consumed == b.consumed && a.err == b.err &&
           (a.st != parse_result::status::error || a.offset == b.offset);
}

bool same(const request &a, const char *ba, const request &b, const char *bb) {
    return a.m == b.m && same_view(a.method_text, ba, b.method_text, bb) &&
           same_view(a.target, ba, b.target, bb) && a.form == b.form &&
           same_view(a.origin_form, ba, b.origin_form, bb) &&
           same_view(a.authority, ba, b.authority, bb) && a.version_minor == b.version_minor &&
           a.body == b.body && a.content_length == b.content_length &&
           a.keep_alive == b.keep_alive && a.expect_continue == b.expect_continue &&
           a.expect_other == b.expect_other && a.has_host == b.has_host &&
           same_view(a.host, ba, b.host, bb) && a.upgrade == b.upgrade &&
           a.connection == b.connection && same_fields(a.headers, ba, b.headers, bb);
}

bool same(const response &a, const char *ba, const response &b, const char *bb) {
    return a.status == b.status && same_view(a.reason, ba, b.reason, bb) &&
           a.version_minor == b.version_minor && a.body == b.body &&
           a.content_length == b.content_length && a.keep_alive == b.keep_alive &&
           a.upgrade == b.upgrade && a.connection == b.connection &&
           same_fields(a.headers, ba, b.headers, bb);
}

// Feeds `body` to a framer in random slices; returns {consumed total, done, error, err}.
struct frame_outcome {
    uint64_t consumed = 0;
    bool done = false;
    bool error = false;
    parse_error err = parse_error::none;
    uint64_t payload = 0;
    bool operator==(const frame_outcome &) const = default;
};

frame_outcome frame(body_kind kind, uint64_t cl, std::string_view body, const limits &lim, rng *r) {
    body_framer f;
    f.reset(kind, cl, lim);
    frame_outcome o;
    size_t off = 0;
    while (true) {
        const size_t rest = body.size() - off;
        const size_t n = r == nullptr ? rest : (rest == 0 ? 0 : 1 + r->below(rest));
        // Each slice as its own heap copy: ASan sees a read past a slice's end.
        std::vector<char> slice(body.data() + off, body.data() + off + n);
        const auto fr = f.feed(std::string_view(slice.data(), slice.size()));
        FUZZ_CHECK(fr.consumed <= n);
        FUZZ_CHECK(!(fr.done && fr.error));
        FUZZ_CHECK(fr.done == f.done() && fr.error == f.failed());
        FUZZ_CHECK(f.payload_bytes() <= f.wire_bytes());
        o.consumed += fr.consumed;
        FUZZ_CHECK(f.wire_bytes() == o.consumed);
        if (fr.error) {
            FUZZ_CHECK(fr.err != parse_error::none);
            FUZZ_CHECK(name(fr.err) != "unknown");
            if (r == nullptr)
                ++g_stats.errors[static_cast<size_t>(fr.err) % g_stats.errors.size()];
            o.error = true;
            o.err = fr.err;
            break;
        }
        if (fr.done) {
            o.done = true;
            break;
        }
        FUZZ_CHECK(fr.consumed == n);
        off += n;
        if (off == body.size())
            break;
    }
    o.payload = f.payload_bytes();
    if (kind == body_kind::until_close)
        FUZZ_CHECK(!o.done && !o.error && o.consumed == body.size());
    if (kind == body_kind::none)
        FUZZ_CHECK(o.done && o.consumed == 0);
    if (kind == body_kind::content_length)
        FUZZ_CHECK(o.consumed == (cl < body.size() ? cl : body.size()) &&
                   o.done == (cl <= body.size()));
    return o;
}

// What the proxy sends for a chunked body (body_framer::feed_run): the
// payload and ferry's framing, fed whole or in random slices; done/error.
struct reframed {
    std::string out;
    bool done = false;
    bool error = false;
    uint64_t payload = 0;
};

reframed reframe(std::string_view body, const limits &lim, rng *r) {
    body_framer f;
    f.reset(body_kind::chunked, 0, lim);
    reframed o;
    size_t off = 0;
    while (off < body.size() && !f.done() && !f.failed()) {
        const size_t rest = body.size() - off;
        const size_t n = r == nullptr ? rest : 1 + r->below(rest);
        std::vector<char> slice(body.data() + off, body.data() + off + n);
        std::string_view s(slice.data(), slice.size());
        while (!s.empty()) {
            const auto fr = f.feed_run(s);
            FUZZ_CHECK(fr.consumed <= s.size());
            FUZZ_CHECK(fr.out.size() <= 22);
            if (fr.data) o.out.append(s.substr(0, fr.consumed));
            o.out.append(fr.out);
            s.remove_prefix(fr.consumed);
            if (fr.done || fr.error || fr.consumed == 0) break;
        }
        off += n;
    }
    o.done = f.done();
    o.error = f.failed();
    o.payload = f.payload_bytes();
    return o;
}

void check_body(body_kind kind, uint64_t cl, std::string_view body, const limits &lim, rng &r) {
    const frame_outcome whole = frame(kind, cl, body, lim, nullptr);
    const frame_outcome split = frame(kind, cl, body, lim, &r);
    FUZZ_CHECK(whole == split);
    if (kind == body_kind::chunked && whole.done)
        ++g_stats.chunked_done;
    if (kind != body_kind::chunked)
        return;
    // Re-framing: the same bytes however they arrive, the same verdict as
    // feed(); a complete body re-frames to a body that frames to the same
    // payload and re-frames to itself (one canonical form).
    const reframed a = reframe(body, lim, nullptr);
    const reframed b = reframe(body, lim, &r);
    FUZZ_CHECK(a.out == b.out && a.done == b.done && a.error == b.error);
    FUZZ_CHECK(a.done == whole.done && a.error == whole.error && a.payload == whole.payload);
    if (!a.done)
        return;
    FUZZ_CHECK(a.out.size() <= whole.consumed);
    const frame_outcome back = frame(kind, 0, a.out, lim, nullptr);
    FUZZ_CHECK(back.done && back.consumed == a.out.size() && back.payload == a.payload);
    FUZZ_CHECK(reframe(a.out, lim, nullptr).out == a.out);
    ++g_stats.reframed;
}

// Parses buf as a head of type Msg whole, then in random splits of one
// growing buffer (same base), and checks both agree.
template <class Msg, class Parse>
parse_result parse_both_ways(std::string_view buf, Parse &&parse, Msg &out,
                             std::span<header> storage, const limits &lim, rng &r) {
    head_parser p;
    const parse_result whole = parse(p, buf, out, storage, lim);
    check_result(whole, buf, lim);
    if (whole.st == parse_result::status::done)
        check_fields(out.headers, storage, buf, lim);

    std::vector<header> storage2(storage.size());
    Msg m2{};
    head_parser p2;
    parse_result inc{};
    size_t len = 0;
    while (true) {
        len = len == buf.size() ? len : len + 1 + r.below(buf.size() - len);
        inc = parse(p2, buf.substr(0, len), m2, storage2, lim);
        if (inc.st != parse_result::status::need_more || len == buf.size())
            break;
    }
    FUZZ_CHECK(same_result(whole, inc));
    if (whole.st == parse_result::status::done)
        FUZZ_CHECK(same(out, buf.data(), m2, buf.data()));
    return whole;
}

void request_path(std::string_view buf, const limits &lim, rng &r) {
    std::vector<header> storage(lim.max_headers);
    request q{};
    const parse_result res = parse_both_ways<request>(
        buf,
        [](head_parser &p, std::string_view b, request &o, std::span<header> s, const limits &l) {
            return parse_request(p, b, o, s, l);
        },
        q, storage, lim, r);
    if (res.st != parse_result::status::done)
        return;
    ++g_stats.requests_done;
    FUZZ_CHECK(inside(q.method_text, buf) && inside(q.target, buf) && inside(q.host, buf) &&
               inside(q.origin_form, buf) && inside(q.authority, buf));
    FUZZ_CHECK(q.body != body_kind::until_close);
    FUZZ_CHECK(q.version_minor <= 1);

    // Forward it and parse what would go upstream: same framing.
    static std::vector<char> out(1 << 17);
    forward_info fi;
    fi.client_addr = "192.0.2.7";
    const size_t n = serialize_request_head(q, fi, out);
    FUZZ_CHECK(n > 0);  // 128 KB always holds a head of at most 64 KB plus our fields
    limits big;
    big.max_head_bytes = 1 << 17;
    big.max_request_line = 1 << 17;
    big.max_headers = 1024;
    std::vector<header> st2(big.max_headers);
    request back{};
    head_parser p;
    const parse_result res2 = parse_request(p, std::string_view(out.data(), n), back, st2, big);
    FUZZ_CHECK(res2.st == parse_result::status::done && res2.consumed == n);
    FUZZ_CHECK(back.body == q.body && back.content_length == q.content_length);
    FUZZ_CHECK(back.m == q.m && back.method_text == q.method_text);
    FUZZ_CHECK(back.keep_alive && !back.upgrade);
    // Only our own Connection field is hop-by-hop in what goes upstream;
    // framing goes out canonical: at most one Content-Length and one
    // Transfer-Encoding line, written by us, and no Trailer.
    auto ieq = [](std::string_view a, std::string_view b) {
        if (a.size() != b.size()) return false;
        for (size_t i = 0; i < a.size(); ++i)
            if ((a[i] | 0x20) != (b[i] | 0x20)) return false;
        return true;
    };
    int cls = 0, tes = 0;
    for (const header &h : back.headers) {
        FUZZ_CHECK(h.name == "Connection" || !is_hop_by_hop(h.name, back));
        if (ieq(h.name, "content-length")) {
            ++cls;
            FUZZ_CHECK(h.value == std::to_string(q.content_length));
        }
        if (ieq(h.name, "transfer-encoding")) {
            ++tes;
            for (char c : h.value) FUZZ_CHECK(!(c >= 'A' && c <= 'Z'));
        }
        FUZZ_CHECK(!ieq(h.name, "trailer"));
    }
    FUZZ_CHECK(cls <= 1 && tes <= 1 && !(cls && tes));
    ++g_stats.round_trips;

    // The bytes after the head are its body.
    const std::string_view rest = buf.substr(res.consumed);
    check_body(q.body, q.content_length, rest, lim, r);
    if (q.body != body_kind::none && frame(q.body, q.content_length, rest, lim, nullptr).done)
        ++g_stats.request_bodies_done;
}

void response_path(std::string_view buf, request_info info, const limits &lim, rng &r) {
    std::vector<header> storage(lim.max_headers);
    response q{};
    const parse_result res = parse_both_ways<response>(
        buf,
        [info](head_parser &p, std::string_view b, response &o, std::span<header> s,
               const limits &l) { return parse_response(p, b, info, o, s, l); },
        q, storage, lim, r);
    if (res.st != parse_result::status::done)
        return;
    ++g_stats.responses_done;
    FUZZ_CHECK(q.status >= 100 && q.status <= 599);
    FUZZ_CHECK(inside(q.reason, buf));
    FUZZ_CHECK(!(q.body == body_kind::until_close && q.keep_alive));

    static std::vector<char> out(1 << 17);
    forward_info fi;
    fi.keep_alive = q.keep_alive;
    const size_t n = serialize_response_head(q, fi, out);
    FUZZ_CHECK(n > 0);
    limits big;
    big.max_head_bytes = 1 << 17;
    big.max_request_line = 1 << 17;
    big.max_headers = 1024;
    std::vector<header> st2(big.max_headers);
    response back{};
    head_parser p;
    const parse_result res2 =
        parse_response(p, std::string_view(out.data(), n), info, back, st2, big);
    FUZZ_CHECK(res2.st == parse_result::status::done && res2.consumed == n);
    FUZZ_CHECK(back.body == q.body && back.status == q.status &&
               back.content_length == q.content_length);
    ++g_stats.round_trips;

    check_body(q.body, q.content_length, buf.substr(res.consumed), lim, r);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 65536)
        size = 65536;
    // An exact-size heap copy: ASan flags any read past the end.
    std::vector<char> copy(data, data + size);
    const std::string_view buf(copy.data(), copy.size());
    g_input = buf;
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < size; ++i)
        h = (h ^ data[i]) * 0x100000001b3ull;
    rng r{h | 1};

    limits def;
    limits tight;
    tight.max_head_bytes = 256;
    tight.max_request_line = 64;
    tight.max_headers = 8;
    tight.max_chunk_size_line = 16;
    tight.max_trailer_bytes = 64;
    const limits &lim = (size > 0 && (data[size - 1] & 3) == 0) ? tight : def;

    request_path(buf, lim, r);
    const uint8_t pick = size > 0 ? data[0] : 0;
    const request_info info{(pick & 0x10) != 0, (pick & 0x20) != 0};
    response_path(buf, info, lim, r);

    // The whole input as a body of each kind.
    uint64_t cl = 0;
    for (size_t i = 0; i < size && i < 2; ++i)
        cl = (cl << 8) | data[i];
    check_body(body_kind::chunked, 0, buf, lim, r);
    check_body(body_kind::content_length, cl % (size + 8), buf, lim, r);
    check_body(body_kind::until_close, 0, buf, lim, r);
    check_body(body_kind::none, 0, buf, lim, r);
    return 0;
}

// Prints what the run reached; fails if it never reached the deep paths
// (valid requests and responses forwarded, complete chunked bodies, and a
// spread of rejection reasons), which would mean the mutants no longer look
// like HTTP and the smoke run proves little.
extern "C" int fuzz_report() {
    const stats &s = g_stats;
    std::printf("  requests done         %llu\n", static_cast<unsigned long long>(s.requests_done));
    std::printf("  responses done        %llu\n",
                static_cast<unsigned long long>(s.responses_done));
    std::printf("  round trips           %llu\n", static_cast<unsigned long long>(s.round_trips));
    std::printf("  request bodies done   %llu\n",
                static_cast<unsigned long long>(s.request_bodies_done));
    std::printf("  chunked bodies done   %llu\n", static_cast<unsigned long long>(s.chunked_done));
    std::printf("  chunked re-framed     %llu\n", static_cast<unsigned long long>(s.reframed));
    unsigned reasons = 0;
    for (size_t i = 1; i < s.errors.size(); ++i) {
        if (s.errors[i] == 0)
            continue;
        ++reasons;
        std::printf("  error %-24s %llu\n", std::string(name(static_cast<parse_error>(i))).c_str(),
                    static_cast<unsigned long long>(s.errors[i]));
    }
    const bool deep = s.requests_done > 0 && s.responses_done > 0 && s.chunked_done > 0 &&
                      s.reframed > 0 &&
                      s.request_bodies_done > 0 && reasons >= 15;
    if (!deep)
        std::fprintf(stderr,
                     "fuzz_http: the run never reached valid requests and responses, complete "
                     "chunked bodies and 15 rejection reasons: too few iterations, or the seeds "
                     "no longer reach them\n");
    return deep ? 0 : 1;
}
