#include "ferry/telemetry/admin_request.h"

#include <cstdio>
#include <cstring>

#include "ferry/http/status.h"

namespace ferry::telemetry {

http::parse_result::status admin_request::received(size_t n) noexcept {
    using st = http::parse_result::status;
    if (res_.st != st::need_more) return res_.st;
    len_ += static_cast<uint32_t>(n <= max_head - len_ ? n : max_head - len_);
    http::limits lim;
    lim.max_head_bytes = max_head;
    lim.max_headers = max_fields;
    // The same buffer, request and storage every call (parser.h's contract):
    // the parser resumes where it stopped and fills req_ as lines complete.
    res_ = http::parse_request(parser_, std::string_view(buf_, len_), req_, fields_, lim);
    return res_.st;
}

http::parse_result::status admin_request::feed(std::string_view bytes) noexcept {
    const std::span<char> r = room();
    const size_t n = bytes.size() < r.size() ? bytes.size() : r.size();
    std::memcpy(r.data(), bytes.data(), n);
    return received(n);
}

admin_reply admin_request::reply() const noexcept {
    using st = http::parse_result::status;
    admin_reply r;
    if (res_.st == st::need_more) return r;
    if (res_.st == st::error) {
        r.status = http::status_for(res_.err);
        return r;
    }
    // RFC 9112 §3.2: the path of origin-form and absolute-form targets (an
    // absolute-form URI without a path means "/"); authority-form (CONNECT)
    // and asterisk-form (OPTIONS *) name no resource of ours.
    std::string_view path;
    if (req_.form == http::target_form::origin || req_.form == http::target_form::absolute) {
        path = req_.origin_form.empty() || req_.origin_form[0] == '?' ? "/" : req_.origin_form;
        path = path.substr(0, path.find('?'));
    }
    const bool metrics = path == "/metrics", healthz = path == "/healthz";
    if (!metrics && !healthz) {
        r.status = 404;
        return r;
    }
    if (req_.m != http::method::get && req_.m != http::method::head) {
        r.status = 405;
        r.allow = true;
        return r;
    }
    r.status = 200;
    r.what = metrics ? admin_reply::body::metrics : admin_reply::body::healthz;
    r.head_only = req_.m == http::method::head;
    return r;
}

size_t serialize_head(const admin_reply &r, size_t body_size, char *buf, size_t size) noexcept {
    const std::string_view reason = http::reason_phrase(r.status);
    const char *type = r.what == admin_reply::body::metrics
                           ? "text/plain; version=0.0.4; charset=utf-8"
                           : "text/plain; charset=utf-8";
    const int n = std::snprintf(buf, size,
                                "HTTP/1.1 %u %.*s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                                "Cache-Control: no-store\r\nConnection: close\r\n%s\r\n",
                                unsigned(r.status), static_cast<int>(reason.size()), reason.data(),
                                type, body_size, r.allow ? "Allow: GET, HEAD\r\n" : "");
    return n > 0 && size_t(n) < size ? static_cast<size_t>(n) : 0;
}

std::string serialize(const admin_reply &r, std::string_view body) {
    char head[320];
    std::string out(head, serialize_head(r, body.size(), head, sizeof head));
    if (!r.head_only) out += body;
    return out;
}

}  // namespace ferry::telemetry
