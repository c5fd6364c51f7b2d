// [route.request_headers] and [route.response_headers] (private to lib/config):
//   set = { "X-Env" = "prod" }      add = { "X-Tag" = "a" }      remove = ["X-Debug"]
// Schema and limits in config.h (header_rules).
#pragma once

#include <optional>
#include <string>

#include "ferry/config/config.h"
#include "reader.h"
#include "toml.h"

namespace ferry::config::detail {

// Reads the table at `n` (key path `key`) into `out`; `response` picks the
// direction (Host is refused toward the origin only: a response has none).
std::optional<error> read_header_rules(const reader &r, const toml::node &n, const std::string &key,
                                       bool response, header_rules &out);

}  // namespace ferry::config::detail
