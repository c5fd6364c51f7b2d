// Helpers for the lib/http tests: a buffer that ends against a PROT_NONE page
// (an over-read faults), canonical dumps of parse results so every way of
// feeding a head can be compared with one EXPECT_EQ, and the feeders.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "ferry/http/parser.h"

namespace ferry::http::test {

// Memory whose last usable byte is followed by a PROT_NONE page: place()
// copies an input so that it ends exactly at the boundary.
class guarded_buffer {
public:
    explicit guarded_buffer(std::size_t capacity) {
        page_ = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
        usable_ = (capacity + page_ - 1) / page_ * page_;
        if (usable_ == 0)
            usable_ = page_;
        void *m = mmap(nullptr, usable_ + page_, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            std::abort();
        mem_ = static_cast<char *>(m);
        if (mprotect(mem_ + usable_, page_, PROT_NONE) != 0)
            std::abort();
    }
    ~guarded_buffer() { munmap(mem_, usable_ + page_); }
    guarded_buffer(const guarded_buffer &) = delete;
    guarded_buffer &operator=(const guarded_buffer &) = delete;

    // Copies s to end at the guard page; returns the view of the copy.
    std::string_view place(std::string_view s) {
        if (s.size() > usable_)
            std::abort();
        char *at = mem_ + usable_ - s.size();
        if (!s.empty())
            std::memcpy(at, s.data(), s.size());
        return {at, s.size()};
    }

private:
    std::size_t page_ = 0;
    std::size_t usable_ = 0;
    char *mem_ = nullptr;
};

inline std::string view_at(std::string_view v, const char *base, std::size_t len) {
    // Every view must lie inside the buffer it was parsed from.
    EXPECT_TRUE(v.empty() || (v.data() >= base && v.data() + v.size() <= base + len))
        << "view outside the buffer";
    const auto off = v.data() == nullptr ? -1 : static_cast<long>(v.data() - base);
    return std::string(v) + "@" + (v.empty() ? std::string("-") : std::to_string(off));
}

inline std::string dump_result(const parse_result &r) {
    std::string s = std::string(name(r.st));
    if (r.st == parse_result::status::done)
        s += " consumed=" + std::to_string(r.consumed);
    if (r.st == parse_result::status::error)
        s += " err=" + std::string(name(r.err)) + " offset=" + std::to_string(r.offset);
    return s;
}

inline std::string dump_headers(std::span<const header> hs, const char *base, std::size_t len) {
    std::string s;
    for (const header &h : hs)
        s += "\n  " + view_at(h.name, base, len) + " = " + view_at(h.value, base, len);
    return s;
}

// Everything parse_request() produced, with views as text@offset.
inline std::string dump(const parse_result &r, const request &q, std::string_view buf) {
    std::string s = dump_result(r);
    if (r.st != parse_result::status::done)
        return s;
    const char *b = buf.data();
    const std::size_t n = buf.size();
    s += " method=" + std::string(name(q.m)) + " text=" + view_at(q.method_text, b, n) +
         " target=" + view_at(q.target, b, n) + " form=" + std::string(name(q.form)) +
         " origin=" + view_at(q.origin_form, b, n) + " authority=" + view_at(q.authority, b, n) +
         " v=1." + std::to_string(q.version_minor) + " body=" + std::string(name(q.body)) +
         " cl=" + std::to_string(q.content_length) + " ka=" + std::to_string(q.keep_alive) +
         " expect=" + std::to_string(q.expect_continue) + "/" + std::to_string(q.expect_other) +
         " host=" + std::to_string(q.has_host) + ":" + view_at(q.host, b, n) +
         " upgrade=" + std::to_string(q.upgrade) + " conn=" + std::to_string(q.connection);
    return s + dump_headers(q.headers, b, n);
}

inline std::string dump(const parse_result &r, const response &q, std::string_view buf) {
    std::string s = dump_result(r);
    if (r.st != parse_result::status::done)
        return s;
    const char *b = buf.data();
    const std::size_t n = buf.size();
    s += " status=" + std::to_string(q.status) + " reason=" + view_at(q.reason, b, n) + " v=1." +
         std::to_string(q.version_minor) + " body=" + std::string(name(q.body)) +
         " cl=" + std::to_string(q.content_length) + " ka=" + std::to_string(q.keep_alive) +
         " upgrade=" + std::to_string(q.upgrade) + " conn=" + std::to_string(q.connection);
    return s + dump_headers(q.headers, b, n);
}

// One head parse: a request, or a response to `info`.
template <class Msg>
struct head_call;

template <>
struct head_call<request> {
    request_info info;
    parse_result operator()(head_parser &p, std::string_view buf, request &out,
                            std::span<header> storage, const limits &lim) const {
        return parse_request(p, buf, out, storage, lim);
    }
};

template <>
struct head_call<response> {
    request_info info;
    parse_result operator()(head_parser &p, std::string_view buf, response &out,
                            std::span<header> storage, const limits &lim) const {
        return parse_response(p, buf, info, out, storage, lim);
    }
};

// Parses `input` whole, ending against a guard page, and returns the dump.
// Then checks that every other way of feeding it gives the same dump:
//   - byte by byte into one growing buffer whose unused tail holds a poison
//     byte ("\n", then "\0"): reading past buf.size() would change the result;
//   - at every split point: the prefix, then the whole, in the same buffer;
//   - at every split point with the whole in a different buffer (the parser
//     must notice the move and start over);
//   - once final, calling again returns the same.
// `out_whole` receives the message parsed whole (views into a buffer that
// lives until the next call; use it only for field checks right away).
template <class Msg>
std::string parse_every_way(std::string_view input, const head_call<Msg> &call, const limits &lim,
                            std::size_t nstorage, Msg &out_whole, parse_result &res_whole) {
    static guarded_buffer guard(1 << 16);
    static std::vector<header> storage_whole;
    storage_whole.assign(nstorage, header{});
    const std::string_view g = guard.place(input);
    head_parser p0;
    res_whole = call(p0, g, out_whole, storage_whole, lim);
    const std::string want = dump(res_whole, out_whole, g);
    // Sticky once final; need_more stays need_more with the same bytes.
    {
        const parse_result again = call(p0, g, out_whole, storage_whole, lim);
        EXPECT_EQ(dump(again, out_whole, g), want) << "second call on the same buffer";
    }
    const std::size_t n = input.size();
    std::vector<header> storage(nstorage);

    for (const char poison : {'\n', '\0'}) {
        std::vector<char> buf(n + 1, poison);
        head_parser p;
        Msg m{};
        parse_result r{};
        std::size_t k = 0;
        for (;; ++k) {
            if (k > 0)
                buf[k - 1] = input[k - 1];
            r = call(p, std::string_view(buf.data(), k), m, storage, lim);
            if (r.st != parse_result::status::need_more || k == n)
                break;
        }
        EXPECT_EQ(dump(r, m, std::string_view(buf.data(), n)), want)
            << "byte by byte, stopped at " << k << " of " << n << ", poison "
            << static_cast<int>(poison);
        if (r.st != parse_result::status::need_more) {
            // The rest of the bytes arrive: the result does not change.
            for (std::size_t j = k; j < n; ++j)
                buf[j] = input[j];
            const parse_result again = call(p, std::string_view(buf.data(), n), m, storage, lim);
            EXPECT_EQ(dump(again, m, std::string_view(buf.data(), n)), want) << "after final";
        }
    }

    const std::size_t step = n > 2048 ? n / 512 : 1;
    for (std::size_t i = 0; i <= n; i += step) {
        std::vector<char> buf(n + 1, '\n');
        std::memcpy(buf.data(), input.data(), i);
        {
            head_parser p;
            Msg m{};
            parse_result r = call(p, std::string_view(buf.data(), i), m, storage, lim);
            std::memcpy(buf.data(), input.data(), n);
            r = call(p, std::string_view(buf.data(), n), m, storage, lim);
            EXPECT_EQ(dump(r, m, std::string_view(buf.data(), n)), want) << "split at " << i;
        }
        {
            head_parser p;
            Msg m{};
            std::memcpy(buf.data(), input.data(), i);
            (void)call(p, std::string_view(buf.data(), i), m, storage, lim);
            const std::string_view moved = guard.place(input);
            const parse_result r = call(p, moved, m, storage, lim);
            // The first call may already have been final (an error or a head
            // that ends early): then it stays that, with views into `buf`.
            const std::string got = p.current_phase() == head_parser::phase::done && r.consumed <= i
                                        ? dump(r, m, std::string_view(buf.data(), n))
                                        : dump(r, m, moved);
            EXPECT_EQ(got, want) << "split at " << i << ", whole in another buffer";
        }
    }
    // Restore the whole parse's views (the guard buffer was reused above).
    (void)guard.place(input);
    return want;
}

// The outcome of feeding a body to a body_framer, as text: "done at=N
// payload=P", "error <reason> at=N" (N = offset of the offending byte in the
// whole input) or "more at=N payload=P" (everything consumed, not done).
inline std::string framer_outcome(body_framer &f, const std::vector<std::string_view> &slices) {
    uint64_t at = 0;
    for (const std::string_view s : slices) {
        const body_framer::feed_result r = f.feed(s);
        EXPECT_LE(r.consumed, s.size());
        EXPECT_FALSE(r.done && r.error) << "done and error together";
        EXPECT_EQ(r.done, f.done());
        EXPECT_EQ(r.error, f.failed());
        at += r.consumed;
        if (r.error) {
            EXPECT_EQ(f.wire_bytes(), at);
            return "error " + std::string(name(r.err)) + " at=" + std::to_string(at);
        }
        if (r.done) {
            EXPECT_EQ(f.wire_bytes(), at);
            // Sticky: nothing more is taken.
            const body_framer::feed_result again = f.feed("more");
            EXPECT_TRUE(again.done);
            EXPECT_EQ(again.consumed, 0u);
            return "done at=" + std::to_string(at) +
                   " payload=" + std::to_string(f.payload_bytes());
        }
        EXPECT_EQ(r.consumed, s.size()) << "not done, not failed, but did not take the slice";
    }
    EXPECT_EQ(f.wire_bytes(), at);
    return "more at=" + std::to_string(at) + " payload=" + std::to_string(f.payload_bytes());
}

// Feeds `input` as one slice ending against a guard page, byte by byte, split
// at every offset into two slices, and (for short inputs) into three at every
// pair of offsets, each slice copied to end against the guard; every way must
// give the same outcome, which is returned.
inline std::string frame_every_way(body_kind kind, uint64_t content_length, std::string_view input,
                                   const limits &lim = {}) {
    static guarded_buffer guard(1 << 16);
    // Each slice in its own guarded copy: a read past a slice's end faults.
    static guarded_buffer g1(1 << 16), g2(1 << 16), g3(1 << 16);
    body_framer f;
    f.reset(kind, content_length, lim);
    const std::string want = framer_outcome(f, {guard.place(input)});
    const std::size_t n = input.size();
    {
        f.reset(kind, content_length, lim);
        std::string got;
        uint64_t at = 0;
        bool final = false;
        for (std::size_t i = 0; i < n && !final; ++i) {
            const body_framer::feed_result r = f.feed(g1.place(input.substr(i, 1)));
            at += r.consumed;
            if (r.error) {
                got = "error " + std::string(name(r.err)) + " at=" + std::to_string(at);
                final = true;
            } else if (r.done) {
                got = "done at=" + std::to_string(at) +
                      " payload=" + std::to_string(f.payload_bytes());
                final = true;
            }
        }
        if (!final) {
            // Also covers the empty input: done from the start (none, CL 0) or more.
            if (f.done())
                got = "done at=" + std::to_string(at) +
                      " payload=" + std::to_string(f.payload_bytes());
            else
                got = "more at=" + std::to_string(at) +
                      " payload=" + std::to_string(f.payload_bytes());
        }
        EXPECT_EQ(got, want) << "byte by byte";
    }
    for (std::size_t i = 0; i <= n; ++i) {
        f.reset(kind, content_length, lim);
        const std::string got =
            framer_outcome(f, {g1.place(input.substr(0, i)), g2.place(input.substr(i))});
        EXPECT_EQ(got, want) << "split at " << i;
    }
    if (n <= 80) {
        for (std::size_t i = 0; i <= n; ++i)
            for (std::size_t j = i; j <= n; ++j) {
                f.reset(kind, content_length, lim);
                const std::string got = framer_outcome(
                    f, {g1.place(input.substr(0, i)), g2.place(input.substr(i, j - i)),
                        g3.place(input.substr(j))});
                EXPECT_EQ(got, want) << "split at " << i << " and " << j;
            }
    }
    return want;
}

}  // namespace ferry::http::test
