#include "header_rules.h"

#include <algorithm>
#include <string_view>

namespace ferry::config::detail {
namespace {

// RFC 9110 §5.1 field-name = token (§5.6.2 tchar).
bool is_field_name(std::string_view s) {
    if (s.empty() || s.size() > 64) return false;
    return std::all_of(s.begin(), s.end(), [](char ch) {
        const auto c = static_cast<unsigned char>(ch);
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) !=
                   std::string_view::npos;
    });
}

// RFC 9110 §5.5 field-value: visible ASCII, SP and HTAB inside, none at the
// ends; no CR, LF or NUL (a value can never end the line or the head).
bool is_field_value(std::string_view s) {
    if (s.size() > 1024) return false;
    if (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.back() == ' ' || s.back() == '\t'))
        return false;
    return std::all_of(s.begin(), s.end(), [](char ch) {
        const auto c = static_cast<unsigned char>(ch);
        return c == '\t' || (c >= 0x20 && c != 0x7f);
    });
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (char &c : out)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c | 0x20);
    return out;
}

// Why ferry keeps a field to itself ("" = a rule may touch it).
std::string_view reserved(std::string_view lowered, bool response) {
    if (lowered == "content-length" || lowered == "transfer-encoding" || lowered == "trailer")
        return "framing: ferry writes it from the message it parsed, so that every hop "
               "delimits the body alike";
    if (lowered == "connection" || lowered == "keep-alive" || lowered == "proxy-connection" ||
        lowered == "te" || lowered == "upgrade")
        return "hop-by-hop (RFC 9110 §7.6.1): ferry writes its own for each connection";
    if (lowered == "via") return "ferry appends itself to Via (RFC 9110 §7.6.3)";
    if (!response && lowered == "host")
        return "the origin's Host is the client's (or, for an absolute-form target, the "
               "target's authority)";
    if (!response && (lowered == "x-forwarded-for" || lowered == "x-forwarded-proto"))
        return "ferry writes it ([http] add_x_forwarded)";
    return "";
}

}  // namespace

std::optional<error> read_header_rules(const reader &r, const toml::node &n, const std::string &key,
                                       bool response, header_rules &out) {
    auto t = r.table(n, key);
    if (!t) return t.error();
    // Every name a rule touches, lowercased, with where it was: a name in two
    // rules is a mistake (set and remove of one field, set twice).
    struct seen_name {
        std::string low, key;
        bool add;
    };
    std::vector<seen_name> seen;
    // add may name a field twice (two Set-Cookie lines), nothing else may.
    auto check_name = [&](const toml::node &at, const std::string &k, std::string_view name,
                          bool add) -> std::optional<error> {
        if (!is_field_name(name))
            return r.at(at, k,
                        "expected a field name (1..64 characters of A-Za-z0-9 and "
                        "!#$%&'*+-.^_`|~), got '" + std::string(name) + "'");
        const std::string low = lower(name);
        if (const std::string_view why = reserved(low, response); !why.empty())
            return r.at(at, k, "'" + std::string(name) + "' cannot be changed by a rule: " +
                                   std::string(why));
        for (const seen_name &o : seen)
            if (o.low == low && !(add && o.add))
                return r.at(at, k, "'" + std::string(name) + "' already has a rule (" + o.key + ")");
        seen.push_back({low, k, add});
        if (out.remove.size() + out.set.size() + out.add.size() >= header_rules::max_header_rules)
            return r.at(at, k,
                        "at most " + std::to_string(header_rules::max_header_rules) +
                            " rules per direction");
        return std::nullopt;
    };
    auto pairs = [&](std::vector<std::pair<std::string, std::string>> &into, bool add) {
        return [&, add](const toml::node &v, const std::string &k) -> std::optional<error> {
            auto tt = r.table(v, k);
            if (!tt) return tt.error();
            for (const auto &[name, value] : **tt) {
                const std::string nk = k + "." + std::string(name.str());
                if (auto e = check_name(value, nk, name.str(), add)) return e;
                auto s = r.string(value, nk);
                if (!s) return s.error();
                if (!is_field_value(*s))
                    return r.at(value, nk,
                                "expected a field value (at most 1024 bytes of visible ASCII, "
                                "spaces and tabs, none at either end; no control characters)");
                into.emplace_back(std::string(name.str()), *s);
            }
            return std::nullopt;
        };
    };
    const reader::field fields[] = {
        {"set", false, pairs(out.set, false)},
        {"add", false, pairs(out.add, true)},
        {"remove", false,
         [&](const toml::node &v, const std::string &k) -> std::optional<error> {
             auto a = r.array(v, k);
             if (!a) return a.error();
             for (size_t i = 0; i < (*a)->size(); ++i) {
                 const toml::node &e = *(*a)->get(i);
                 const std::string ek = index_key(k, i);
                 auto s = r.string(e, ek);
                 if (!s) return s.error();
                 if (auto err = check_name(e, ek, *s, false)) return err;
                 out.remove.push_back(lower(*s));
             }
             return std::nullopt;
         }},
    };
    return r.walk(**t, key, fields);
}

}  // namespace ferry::config::detail

namespace ferry::config {

std::string describe_header_rules(const header_rules &h) {
    std::string out;
    auto sep = [&] {
        if (!out.empty()) out += "; ";
    };
    for (const auto &[n, v] : h.set) {
        sep();
        out += "set \"" + n + ": " + v + "\"";
    }
    for (const auto &[n, v] : h.add) {
        sep();
        out += "add \"" + n + ": " + v + "\"";
    }
    for (const std::string &n : h.remove) {
        sep();
        out += "remove " + n;
    }
    return out;
}

}  // namespace ferry::config
