// Forwarded heads and generated error responses (see ferry/http/serializer.h).
#include "ferry/http/serializer.h"

#include <cstring>

#include "chars.h"
#include "ferry/http/status.h"

namespace ferry::http {

using namespace detail;

namespace {

// Appends to a fixed span; after the first write that does not fit, every
// further write is ignored and ok() is false. Never writes past the end.
class writer {
public:
    explicit writer(std::span<char> out) noexcept : p_(out.data()), end_(out.data() + out.size()) {}

    void put(std::string_view s) noexcept {
        if (!ok_ || static_cast<std::size_t>(end_ - p_) < s.size()) {
            ok_ = false;
            return;
        }
        if (!s.empty())
            std::memcpy(p_, s.data(), s.size());
        p_ += s.size();
    }
    void put(char c) noexcept { put(std::string_view(&c, 1)); }
    void put_uint(uint64_t v) noexcept {
        char tmp[20];
        std::size_t n = 0;
        do {
            tmp[sizeof tmp - 1 - n++] = static_cast<char>('0' + v % 10);
            v /= 10;
        } while (v != 0);
        put(std::string_view(tmp + sizeof tmp - n, n));
    }
    void field(std::string_view name, std::string_view value) noexcept {
        put(name);
        put(": ");
        put(value);
        put("\r\n");
    }
    [[nodiscard]] std::size_t finish(const char *begin) const noexcept {
        return ok_ ? static_cast<std::size_t>(p_ - begin) : 0;
    }

private:
    char *p_;
    char *end_;
    bool ok_ = true;
};

// RFC 9110 §7.6.1: the fields a proxy never forwards, whatever Connection says.
bool always_hop_by_hop(std::string_view n) noexcept {
    switch (n.size()) {
        case 2:
            return iequals(n, "te");
        case 7:
            return iequals(n, "upgrade");
        case 10:
            return iequals(n, "connection") || iequals(n, "keep-alive");
        case 16:
            return iequals(n, "proxy-connection");
        default:
            return false;
    }
}

bool is_content_length(std::string_view n) noexcept { return iequals(n, "content-length"); }
bool is_transfer_encoding(std::string_view n) noexcept { return iequals(n, "transfer-encoding"); }

// Writes the framing fields of a message canonically (serializer.h), at the
// first of its received framing lines; called for each field line, returns
// true when the line was a framing field (so the caller does not copy it).
class framing_writer {
public:
    framing_writer(std::span<const header> fields, uint64_t content_length, bool dechunk) noexcept
        : fields_(fields), cl_(content_length), dechunk_(dechunk) {}

    bool field(writer &w, std::string_view name) noexcept {
        if (iequals(name, "trailer"))
            return true;  // the trailer section is not forwarded
        if (is_content_length(name)) {
            if (!cl_done_) {
                w.put("Content-Length: ");
                w.put_uint(cl_);
                w.put("\r\n");
            }
            cl_done_ = true;
            return true;
        }
        if (!is_transfer_encoding(name))
            return false;
        if (!te_done_)
            codings(w);
        te_done_ = true;
        return true;
    }

private:
    // Every coding of every Transfer-Encoding line, in order, lower case
    // (the parser checked each is a bare token).
    void codings(writer &w) noexcept {
        bool first = true;
        for (const header &h : fields_) {
            if (!is_transfer_encoding(h.name))
                continue;
            for_each_list_element(h.value, [&](std::string_view e) {
                if (e.empty() || (dechunk_ && iequals(e, "chunked")))
                    return true;
                w.put(first ? "Transfer-Encoding: " : ", ");
                for (char c : e)
                    w.put(ascii_lower(c));
                first = false;
                return true;
            });
        }
        if (!first)
            w.put("\r\n");
    }

    std::span<const header> fields_;
    uint64_t cl_;
    bool dechunk_;
    bool cl_done_ = false;
    bool te_done_ = false;
};

// Framing and routing fields that are forwarded even when Connection names them.
bool never_dropped(std::string_view n) noexcept {
    return iequals(n, "transfer-encoding") || iequals(n, "content-length") ||
           iequals(n, "trailer") || iequals(n, "host");
}

bool named_in_connection(std::string_view name, std::span<const header> fields) noexcept {
    for (const header &h : fields) {
        if (!iequals(h.name, "connection"))
            continue;
        bool found = false;
        for_each_list_element(h.value, [&](std::string_view o) {
            found = o.size() == name.size() && !o.empty();
            for (std::size_t i = 0; found && i < o.size(); ++i)
                found = ascii_lower(o[i]) == ascii_lower(name[i]);
            return !found;
        });
        if (found)
            return true;
    }
    return false;
}

bool drop(std::string_view name, std::span<const header> fields, uint8_t conn) noexcept {
    if (always_hop_by_hop(name))
        return true;
    if ((conn & connection_option::other) == 0)
        return false;
    return !never_dropped(name) && named_in_connection(name, fields);
}

// Every Upgrade value of `fields` in order, one line (RFC 9110 §5.3: several
// lines are one list), then Connection: upgrade.
void put_upgrade(writer &w, std::span<const header> fields) noexcept {
    bool first = true;
    for (const header &h : fields) {
        if (h.value.empty() || !iequals(h.name, "upgrade"))
            continue;
        w.put(first ? "Upgrade: " : ", ");
        w.put(h.value);
        first = false;
    }
    if (!first)
        w.put("\r\n");
    w.field("Connection", "upgrade");
}

void put_version_via(writer &w, uint8_t received_minor, std::string_view via_name) noexcept {
    // RFC 9110 §7.6.3: received-protocol is the version of the message as
    // received (the protocol name may be omitted for HTTP).
    w.put("Via: 1.");
    w.put(static_cast<char>('0' + (received_minor > 9 ? 9 : received_minor)));
    w.put(' ');
    w.put(via_name);
    w.put("\r\n");
}

}  // namespace

bool is_hop_by_hop(std::string_view name, std::span<const header> fields) noexcept {
    return drop(name, fields, connection_option::other);
}

bool lists_token(std::span<const header> fields, std::string_view lower_name,
                 std::string_view lower_token) noexcept {
    for (const header &h : fields)
        if (iequals(h.name, lower_name) && list_has_token(h.value, lower_token))
            return true;
    return false;
}

bool is_hop_by_hop(std::string_view name, const request &r) noexcept {
    return drop(name, r.headers, r.connection);
}

bool is_hop_by_hop(std::string_view name, const response &r) noexcept {
    return drop(name, r.headers, r.connection);
}

bool header_edit::drops(std::string_view name) const noexcept {
    for (const std::string_view n : remove)
        if (iequals_any(name, n)) return true;
    for (const header &h : set)
        if (iequals_any(name, h.name)) return true;
    return false;
}

namespace {
void put_edit(writer &w, const header_edit *e) noexcept {
    if (e == nullptr) return;
    for (const header &h : e->set) w.field(h.name, h.value);
    for (const header &h : e->add) w.field(h.name, h.value);
}
}  // namespace

std::size_t serialize_request_head(const request &r, const forward_info &fi,
                                   std::span<char> out) noexcept {
    writer w(out);
    w.put(r.method_text);
    w.put(' ');
    if (r.form == target_form::absolute) {
        // RFC 9112 §3.2.1: an origin gets the path and query only, "/" for an
        // empty path.
        if (r.origin_form.empty() || r.origin_form[0] != '/')
            w.put('/');
        w.put(r.origin_form);
    } else {
        w.put(r.target);
    }
    w.put(fi.request_version_minor == 0 ? " HTTP/1.0\r\n" : " HTTP/1.1\r\n");

    bool host_written = false;
    bool have_xff = false;
    bool expect_written = false;
    framing_writer fw(r.headers, r.content_length, false);
    for (const header &h : r.headers) {
        if (is_hop_by_hop(h.name, r) || fw.field(w, h.name))
            continue;
        if (iequals(h.name, "host")) {
            // RFC 9112 §3.2.2: a proxy forwarding an absolute-form request
            // MUST generate Host from the target, not forward the received one.
            if (!host_written)
                w.field(h.name, r.form == target_form::absolute ? r.authority : h.value);
            host_written = true;
            continue;
        }
        if (iequals(h.name, "x-forwarded-for")) {
            have_xff = have_xff || !h.value.empty();
            continue;
        }
        if (iequals(h.name, "x-forwarded-proto"))
            continue;
        if (iequals(h.name, "expect")) {
            // RFC 9110 §10.1.1: 100-continue is the only expectation; ours,
            // once, or none (an HTTP/1.0 one and unknown ones are ignored).
            if (r.expect_continue && !expect_written)
                w.field("Expect", "100-continue");
            expect_written = true;
            continue;
        }
        if (fi.edit != nullptr && fi.edit->drops(h.name))
            continue;
        w.field(h.name, h.value);
    }
    if (!host_written)
        w.field("Host", r.form == target_form::absolute ? r.authority : fi.default_host);
    put_edit(w, fi.edit);
    put_version_via(w, r.version_minor, fi.via_name);
    if (have_xff || !fi.client_addr.empty()) {
        // One line: the received values in order, then the client. (Several
        // received lines are one list, RFC 9110 §5.3.)
        w.put("X-Forwarded-For: ");
        bool first = true;
        for (const header &h : r.headers) {
            if (h.value.empty() || !iequals(h.name, "x-forwarded-for") || is_hop_by_hop(h.name, r))
                continue;
            if (!first)
                w.put(", ");
            w.put(h.value);
            first = false;
        }
        if (!fi.client_addr.empty()) {
            if (!first)
                w.put(", ");
            w.put(fi.client_addr);
        }
        w.put("\r\n");
    }
    w.field("X-Forwarded-Proto", fi.proto);
    if (fi.upgrade)
        put_upgrade(w, r.headers);
    else
        w.field("Connection", fi.keep_alive ? "keep-alive" : "close");
    w.put("\r\n");
    return w.finish(out.data());
}

std::size_t serialize_response_head(const response &r, const forward_info &fi,
                                    std::span<char> out) noexcept {
    writer w(out);
    if (r.status < 100 || r.status > 999)
        return 0;
    w.put("HTTP/1.1 ");
    w.put_uint(r.status);
    w.put(' ');
    w.put(r.reason);
    w.put("\r\n");
    framing_writer fw(r.headers, r.content_length, fi.dechunk);
    for (const header &h : r.headers)
        if (!is_hop_by_hop(h.name, r) && !fw.field(w, h.name) &&
            (fi.edit == nullptr || !fi.edit->drops(h.name)))
            w.field(h.name, h.value);
    put_edit(w, fi.edit);
    put_version_via(w, r.version_minor, fi.via_name);
    // An interim response is not the end of the exchange: no Connection,
    // except on the 101 that switches protocols.
    if (fi.upgrade)
        put_upgrade(w, r.headers);
    else if (r.status >= 200)
        w.field("Connection", fi.keep_alive ? "keep-alive" : "close");
    w.put("\r\n");
    return w.finish(out.data());
}

std::size_t serialize_error(uint16_t status, bool close, std::span<char> out,
                            bool head_only) noexcept {
    if (status < 400 || status > 599)
        return 0;
    const std::string_view reason = reason_phrase(status);
    // Body: "<code> <reason>\n" (or "<code>\n").
    const std::size_t body_len = 3 + (reason.empty() ? 0 : 1 + reason.size()) + 1;
    writer w(out);
    w.put("HTTP/1.1 ");
    w.put_uint(status);
    w.put(' ');
    w.put(reason);
    w.put("\r\nContent-Type: text/plain\r\nContent-Length: ");
    w.put_uint(body_len);
    w.put(close ? "\r\nConnection: close\r\n\r\n" : "\r\nConnection: keep-alive\r\n\r\n");
    if (head_only)
        return w.finish(out.data());
    w.put_uint(status);
    if (!reason.empty()) {
        w.put(' ');
        w.put(reason);
    }
    w.put('\n');
    return w.finish(out.data());
}

}  // namespace ferry::http
