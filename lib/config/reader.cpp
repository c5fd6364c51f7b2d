#include "reader.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <memory>
#include <system_error>
#include <vector>

#include "text.h"

namespace ferry::config::detail {

std::string join_key(std::string_view path, std::string_view name) {
    std::string k(path);
    if (!k.empty())
        k += '.';
    k += name;
    return k;
}

std::string index_key(std::string_view path, size_t i) {
    return std::string(path) + "[" + std::to_string(i) + "]";
}

result<std::string, std::string> read_file(const std::string &path) {
    constexpr size_t max_size = 1 << 20;
    auto errno_text = [](int err) {
        return std::error_code(err, std::generic_category()).message();
    };
    std::unique_ptr<FILE, int (*)(FILE *)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
    if (!f)
        return unexpected{"cannot read file: " + errno_text(errno)};
    std::string text;
    char buf[8192];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f.get())) > 0) {
        text.append(buf, n);
        if (text.size() > max_size)
            return unexpected{std::string("file is larger than 1 MiB")};
    }
    // fopen() succeeds on a directory; the read then fails with EISDIR.
    if (std::ferror(f.get()))
        return unexpected{"cannot read file: " + errno_text(errno)};
    return text;
}

error from_parse_error(const toml::parse_error &e, std::string_view file) {
    const auto &b = e.source().begin;
    return error{source_pos{std::string(file), b.line, b.column}, "", std::string(e.description())};
}

std::string_view type_name(toml::node_type t) {
    switch (t) {
        case toml::node_type::table:
            return "a table";
        case toml::node_type::array:
            return "an array";
        case toml::node_type::string:
            return "a string";
        case toml::node_type::integer:
            return "an integer";
        case toml::node_type::floating_point:
            return "a floating-point number";
        case toml::node_type::boolean:
            return "a boolean";
        case toml::node_type::date:
            return "a date";
        case toml::node_type::time:
            return "a time";
        case toml::node_type::date_time:
            return "a date-time";
        case toml::node_type::none:
            break;
    }
    return "nothing";
}

source_pos reader::pos(const toml::source_region &r) const {
    return source_pos{file_, r.begin.line, r.begin.column};
}

error reader::at(const toml::source_region &r, std::string key, std::string message) const {
    return error{pos(r), std::move(key), std::move(message)};
}

std::optional<error> reader::walk(const toml::table &t, std::string_view path,
                                  std::span<const field> fields) const {
    // toml::table is ordered by key; sort by position so the first error reported is the
    // first one in the file.
    std::vector<std::pair<const toml::key *, const toml::node *>> entries;
    for (auto &&[k, v] : t)
        entries.emplace_back(&k, &v);
    std::sort(entries.begin(), entries.end(), [](const auto &a, const auto &b) {
        const auto &pa = a.first->source().begin, &pb = b.first->source().begin;
        return pa.line != pb.line ? pa.line < pb.line : pa.column < pb.column;
    });

    std::vector<std::string_view> names;
    for (const field &f : fields)
        names.push_back(f.name);

    for (auto [k, v] : entries) {
        std::string key = join_key(path, k->str());
        // (A named copy: clang before 16 cannot capture a structured binding.)
        const std::string_view name = k->str();
        auto f = std::find_if(fields.begin(), fields.end(),
                              [&](const field &f) { return f.name == name; });
        if (f == fields.end()) {
            std::string msg = v->is_table() ? "unknown table" : "unknown key";
            std::string_view near = nearest(k->str(), names);
            if (!near.empty())
                msg += " (did you mean '" + std::string(near) + "'?)";
            return at(k->source(), key, msg);
        }
        if (auto e = f->read(*v, key))
            return e;
    }
    for (const field &f : fields) {
        if (f.required && !t.contains(f.name))
            return at(t, join_key(path, f.name), "missing required key");
    }
    return std::nullopt;
}

namespace {

std::string expected(std::string_view what, const toml::node &n) {
    return "expected " + std::string(what) + ", got " + std::string(type_name(n.type()));
}

}  // namespace

result<int64_t, error> reader::integer(const toml::node &n, const std::string &key, int64_t lo,
                                       int64_t hi) const {
    const auto *v = n.as_integer();
    if (!v)
        return unexpected{at(n, key, expected("an integer", n))};
    int64_t x = v->get();
    if (x < lo || x > hi) {
        return unexpected{at(n, key,
                             "must be in " + std::to_string(lo) + ".." + std::to_string(hi) +
                                 ", got " + std::to_string(x))};
    }
    return x;
}

result<std::string, error> reader::string(const toml::node &n, const std::string &key) const {
    const auto *v = n.as_string();
    if (!v)
        return unexpected{at(n, key, expected("a string", n))};
    return v->get();
}

result<bool, error> reader::boolean(const toml::node &n, const std::string &key) const {
    const auto *v = n.as_boolean();
    if (!v)
        return unexpected{at(n, key, expected("a boolean", n))};
    return v->get();
}

result<const toml::table *, error> reader::table(const toml::node &n,
                                                 const std::string &key) const {
    const auto *t = n.as_table();
    if (!t)
        return unexpected{at(n, key, expected("a table", n))};
    return t;
}

result<const toml::array *, error> reader::array(const toml::node &n,
                                                 const std::string &key) const {
    const auto *a = n.as_array();
    if (!a)
        return unexpected{at(n, key, expected("an array", n))};
    return a;
}

reader::handler reader::string_into(std::string &out) const {
    return [this, &out](const toml::node &n, const std::string &k) {
        auto v = string(n, k);
        if (!v)
            return std::optional<error>(v.error());
        out = std::move(*v);
        return std::optional<error>();
    };
}

reader::handler reader::boolean_into(bool &out) const {
    return [this, &out](const toml::node &n, const std::string &k) {
        auto v = boolean(n, k);
        if (!v)
            return std::optional<error>(v.error());
        out = *v;
        return std::optional<error>();
    };
}

}  // namespace ferry::config::detail
