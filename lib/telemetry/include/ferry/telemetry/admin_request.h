// The exporter's HTTP side without a socket (exporter.h does the I/O): one
// request head read incrementally with lib/http's strict parser, the answer
// to it, and the response bytes.
//
// One parser in the tree: a request the proxy would reject is rejected here
// too, with the same status (http::status_for): a bare LF is 400, an unknown
// HTTP version 505, a head over max_head bytes 431. What the exporter answers
// to a valid head (docs/OPERATIONS.md "Metrics"):
//   GET or HEAD /metrics   200, the text exposition format 0.0.4
//   GET or HEAD /healthz   200 "ok" (the exporter: 503 "draining" after SIGTERM)
//   another method there   405 with Allow: GET, HEAD
//   any other path         404
// The query is ignored; an absolute-form target counts by its path (RFC 9112
// §3.2.2: a server MUST accept it). A request body is never read: the
// response says Connection: close.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "ferry/http/parser.h"

namespace ferry::telemetry {

struct admin_reply {
    enum class body : uint8_t {
        status_text,  // the reason phrase and LF
        metrics,      // render_metrics()
        healthz,      // "ok\n"
    };
    uint16_t status = 0;
    body what = body::status_text;
    bool head_only = false;  // HEAD: the GET's headers (Content-Length too), no body
    bool allow = false;      // 405: an Allow field
};

// The head of one request on one connection. Incremental: bytes are read
// into room() and announced with received(); the parser keeps its state, the
// request it fills and its field storage across calls (parser.h's contract:
// same buffer, same `out`, same storage).
class admin_request {
public:
    // The whole head, empty lines before the request-line included.
    static constexpr uint32_t max_head = 8192;
    static constexpr uint16_t max_fields = 64;

    // Where the next bytes go. Never empty while received() says need_more
    // (a head that fills the buffer without ending is head_too_large).
    [[nodiscard]] std::span<char> room() noexcept { return {buf_ + len_, max_head - len_}; }

    // `n` more bytes were written at room().data() (n <= room().size()).
    // Returns need_more (read again), done (a valid head: reply() answers it)
    // or error (reply() is the rejection; error() says why). After done or
    // error, further calls change nothing.
    [[nodiscard]] http::parse_result::status received(size_t n) noexcept;

    // Copies what fits of `bytes` into room() and calls received() (tests).
    [[nodiscard]] http::parse_result::status feed(std::string_view bytes) noexcept;

    // The answer once received() returned done or error; status 0 before.
    [[nodiscard]] admin_reply reply() const noexcept;
    // error: the parser's reason; else parse_error::none.
    [[nodiscard]] http::parse_error error() const noexcept { return res_.err; }

private:
    char buf_[max_head];
    uint32_t len_ = 0;
    http::head_parser parser_;
    http::request req_;
    http::header fields_[max_fields];
    http::parse_result res_;
};

// The response: status line, Content-Type (the exposition format's for
// metrics), Content-Length of `body`, Cache-Control: no-store, Connection:
// close, Allow if asked, then `body` unless head_only.
[[nodiscard]] std::string serialize(const admin_reply &r, std::string_view body);
// The head alone, for a body of `body_size` bytes, into `buf` (320 bytes hold
// any): its length, 0 if it did not fit. Allocates nothing (the exporter's
// scrapes).
[[nodiscard]] size_t serialize_head(const admin_reply &r, size_t body_size, char *buf,
                                    size_t size) noexcept;

}  // namespace ferry::telemetry
