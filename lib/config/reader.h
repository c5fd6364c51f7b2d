// Strict schema walking over a parsed TOML document (private to lib/config).
//
// A table is read by listing its keys (name, required, handler). walk() visits the table's
// entries in document order, so the error returned is the first one a reader of the file
// would meet: an unknown key (with a "did you mean" when one is close), or whatever the
// handler reports. Required keys that are missing are reported afterwards, at the table.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "ferry/config/config.h"
#include "toml.h"

namespace ferry::config::detail {

// "a.b" from ("a", "b"); "b" when the parent path is empty.
std::string join_key(std::string_view path, std::string_view name);
// "port[3]".
std::string index_key(std::string_view path, size_t i);

// The whole file at path, at most 1 MiB (a config, not a data file); else the reason:
// "cannot read file: No such file or directory", "file is larger than 1 MiB".
result<std::string, std::string> read_file(const std::string &path);

// The toml++ parse error as ours: description and position pass through unchanged.
error from_parse_error(const toml::parse_error &e, std::string_view file);

// "an integer", "a string", ...: for "expected X, got Y" messages.
std::string_view type_name(toml::node_type t);

class reader {
public:
    // Called with the entry's value and its full key path; returns an error or nullopt.
    using handler = std::function<std::optional<error>(const toml::node &, const std::string &)>;
    struct field {
        std::string_view name;
        bool required;
        handler read;
    };

    explicit reader(std::string_view file) : file_(file) {}
    const std::string &file() const { return file_; }

    source_pos pos(const toml::source_region &r) const;
    error at(const toml::source_region &r, std::string key, std::string message) const;
    error at(const toml::node &n, std::string key, std::string message) const {
        return at(n.source(), std::move(key), std::move(message));
    }

    // Reads table t (whose key path is `path`) against `fields`; see the file comment.
    std::optional<error> walk(const toml::table &t, std::string_view path,
                              std::span<const field> fields) const;

    // Typed reads: a wrong type -> "expected an integer, got a string"; out of range ->
    // "must be in lo..hi, got v".
    result<int64_t, error> integer(const toml::node &n, const std::string &key, int64_t lo,
                                   int64_t hi) const;
    result<std::string, error> string(const toml::node &n, const std::string &key) const;
    result<bool, error> boolean(const toml::node &n, const std::string &key) const;
    result<const toml::table *, error> table(const toml::node &n, const std::string &key) const;
    result<const toml::array *, error> array(const toml::node &n, const std::string &key) const;

    // Handlers that store a typed value into `out`.
    template <class T>
    handler integer_into(T &out, int64_t lo, int64_t hi) const {
        return [this, &out, lo, hi](const toml::node &n, const std::string &k) {
            auto v = integer(n, k, lo, hi);
            if (!v)
                return std::optional<error>(v.error());
            out = static_cast<T>(*v);
            return std::optional<error>();
        };
    }
    handler string_into(std::string &out) const;
    handler boolean_into(bool &out) const;

private:
    std::string file_;
};

}  // namespace ferry::config::detail
