// Strict parsers for the textual values in configs (private to lib/config). Each returns
// nullopt / false on anything it does not fully accept: no leading/trailing space, no
// leading zeros in IPv4 octets (inet_aton would read "010" as octal 8).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "ferry/base/ip_address.h"

namespace ferry::config::detail {

// "a.b.c.d", four decimal octets 0..255 -> host byte order.
std::optional<uint32_t> parse_ipv4(std::string_view s);
// "a.b.c.d:port" (parse_ipv4 for the address; port 1..65535, 1..5 decimal digits without
// leading zeros) -> {address in host byte order, port}.
std::optional<std::pair<uint32_t, uint16_t>> parse_ipv4_port(std::string_view s);
// An upstream server: "a.b.c.d:port" (parse_ipv4_port) or "[v6]:port" (RFC 3986
// §3.2.2's brackets around RFC 4291 §2.2 forms 1 and 2, parse_ipv6; the same port rules).
std::optional<std::pair<ip_address, uint16_t>> parse_endpoint(std::string_view s);
// Why an IPv6 address cannot be a server's (unspecified, loopback, multicast), if it cannot.
std::optional<std::string_view> unusable_host_reason6(const ipv6_bytes &a);
// "xx:xx:xx:xx:xx:xx", hex digits in either case.
std::optional<std::array<uint8_t, 6>> parse_mac(std::string_view s);
// "dddd:bb:dd.f": 4-hex-digit domain, 2-hex-digit bus, device 00..1f, function 0..7.
bool is_pci_address(std::string_view s);
// 1..max_len characters of [a-z0-9_].
bool is_lower_name(std::string_view s, size_t max_len);
// A Linux interface name we accept: 1..15 (IFNAMSIZ - 1) of [A-Za-z0-9_.-], not "." or
// "..". Narrower than the kernel's rule on purpose: the name is pasted into devargs, where
// ',' and '=' are separators.
bool is_iface_name(std::string_view s);
// A DNS-style host name: 1..253 characters, dot-separated labels of 1..63 characters of
// [A-Za-z0-9_-] (no empty label, so no leading, trailing or doubled dot). IPv4 literals
// pass (their labels are digits).
bool is_host_name(std::string_view s);
// 1..max_len characters of [A-Za-z0-9._-].
bool is_simple_token(std::string_view s, size_t max_len);
// Every character is visible ASCII (0x21..0x7e): no space, control or non-ASCII byte.
bool is_visible_ascii(std::string_view s);
// Mask of a prefix length 0..32, host byte order.
uint32_t prefix_mask(uint8_t prefix_len);
// Why addr cannot be a host's unicast address (0/8, loopback, multicast, 240/4), or
// nullopt when it can.
std::optional<std::string_view> unusable_host_reason(uint32_t addr);

// The candidate closest to `word` by edit distance, if close enough to be a likely typo
// (distance <= 2 and less than the word's length); else an empty view.
std::string_view nearest(std::string_view word, std::span<const std::string_view> candidates);

// "a, b or c".
std::string join_alternatives(std::span<const std::string_view> items);

}  // namespace ferry::config::detail
