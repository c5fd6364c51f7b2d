// lib/config: the ferry configuration file. Bad configs are a table of {name, toml, exact
// error} so that position, key path and message are all pinned down.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <unistd.h>

#include "ferry/config/config.h"

namespace ferry::config {
namespace {

// One valid port, for cases about something else. Lines 1-5 when first in a file.
constexpr std::string_view port_tap0 = R"([[port]]
name = "tap0"
profile = "net_tap"
iface = "ferry0"
address = "10.77.0.1/24"
)";

std::string with_port(std::string_view head) {
    return std::string(head) + std::string(port_tap0);
}

struct bad_case {
    const char *name;
    std::string text;
    const char *expected;
};

void PrintTo(const bad_case &c, std::ostream *os) {
    *os << c.name;
}

class bad_config : public testing::TestWithParam<bad_case> {};

TEST_P(bad_config, reports_position_key_and_message) {
    const bad_case &c = GetParam();
    auto r = parse(c.text, "t.toml");
    ASSERT_FALSE(r.ok()) << "accepted:\n" << c.text;
    EXPECT_EQ(r.error().to_string(), c.expected) << c.text;
    EXPECT_EQ(r.error().where.file, "t.toml");
}

// A [[port]] table with the given extra/overriding lines; name etc. first, so extra lines
// start at line 6.
std::string port_with(std::string_view lines) {
    return std::string(port_tap0) + std::string(lines);
}

const bad_case bad_cases[] = {
    // toml++ syntax errors pass through with their position.
    {"syntax_trailing_token", "[ferry]\nworkers = 2 3\n",
     "t.toml:2:13: Error while parsing key-value pair: expected a comment or whitespace, "
     "saw '3'"},
    {"syntax_unclosed_header", "[ferry\n",
     "t.toml:1:7: Error while parsing table header: expected ']', saw '\\n'"},
    {"syntax_duplicate_key", "[ferry]\nworkers = 1\nworkers = 2\n",
     "t.toml:3:11: Error while parsing key-value pair: cannot redefine existing integer "
     "'workers'"},

    // Unknown keys and tables: a typo must not be silently ignored.
    {"unknown_table_with_suggestion", with_port("[feryy]\nworkers = 2\n"),
     "t.toml:1:2: key 'feryy': unknown table (did you mean 'ferry'?)"},
    {"unknown_top_level_key", with_port("verbose = true\n"),
     "t.toml:1:1: key 'verbose': unknown key"},
    {"unknown_key_in_ferry", with_port("[ferry]\nworkrs = 2\n"),
     "t.toml:2:1: key 'ferry.workrs': unknown key (did you mean 'workers'?)"},
    {"unknown_key_in_port", port_with("adress = \"10.0.0.1/24\"\n"),
     "t.toml:6:1: key 'port[0].adress': unknown key (did you mean 'address'?)"},
    {"unknown_key_no_suggestion", port_with("frobnicate = 1\n"),
     "t.toml:6:1: key 'port[0].frobnicate': unknown key"},
    {"unknown_subtable_in_ferry", with_port("[ferry.extra]\nx = 1\n"),
     "t.toml:1:8: key 'ferry.extra': unknown table"},
    {"first_error_in_document_order", with_port("[ferry]\nzzz = 1\nworkers = \"x\"\n"),
     "t.toml:2:1: key 'ferry.zzz': unknown key"},

    // Types.
    {"ferry_not_a_table", with_port("ferry = 1\n"),
     "t.toml:1:9: key 'ferry': expected a table, got an integer"},
    {"workers_string", with_port("[ferry]\nworkers = \"2\"\n"),
     "t.toml:2:11: key 'ferry.workers': expected an integer, got a string"},
    {"workers_float", with_port("[ferry]\nworkers = 2.0\n"),
     "t.toml:2:11: key 'ferry.workers': expected an integer, got a floating-point number"},
    {"mtu_bool", port_with("mtu = true\n"),
     "t.toml:6:7: key 'port[0].mtu': expected an integer, got a boolean"},
    {"address_integer", "[[port]]\nname = \"a\"\nprofile = \"net_tap\"\naddress = 167772161\n",
     "t.toml:4:11: key 'port[0].address': expected a string, got an integer"},
    {"port_single_table", "[port]\nname = \"a\"\n",
     "t.toml:1:1: key 'port': expected an array of tables ([[port]]), got a table"},
    {"port_array_of_int", "port = [1]\n",
     "t.toml:1:9: key 'port[0]': expected a table, got an integer"},

    // [ferry] values.
    {"wakeup_mode_unknown", with_port("[ferry]\nwakeup_mode = \"sleepy\"\n"),
     "t.toml:2:15: key 'ferry.wakeup_mode': unknown wakeup mode 'sleepy' (expected "
     "conditional, always, poll or adaptive)"},
    {"wakeup_mode_case", with_port("[ferry]\nwakeup_mode = \"Poll\"\n"),
     "t.toml:2:15: key 'ferry.wakeup_mode': unknown wakeup mode 'Poll' (expected "
     "conditional, always, poll or adaptive)"},
    {"workers_negative", with_port("[ferry]\nworkers = -1\n"),
     "t.toml:2:11: key 'ferry.workers': must be in 0..128, got -1"},
    {"workers_too_many", with_port("[ferry]\nworkers = 129\n"),
     "t.toml:2:11: key 'ferry.workers': must be in 0..128, got 129"},
    {"idle_threshold_zero", with_port("[ferry]\nidle_threshold_us = 0\n"),
     "t.toml:2:21: key 'ferry.idle_threshold_us': must be in 1..1000000, got 0"},
    {"idle_threshold_too_big", with_port("[ferry]\nidle_threshold_us = 1000001\n"),
     "t.toml:2:21: key 'ferry.idle_threshold_us': must be in 1..1000000, got 1000001"},
    {"nap_budget_too_big", with_port("[ferry]\nnap_budget_us = 100001\n"),
     "t.toml:2:17: key 'ferry.nap_budget_us': must be in 0..100000, got 100001"},
    {"latency_weight_too_big", with_port("[ferry]\nlatency_weight_pct = 10001\n"),
     "t.toml:2:22: key 'ferry.latency_weight_pct': must be in 0..10000, got 10001"},
    {"latency_weight_negative", with_port("[ferry]\nlatency_weight_pct = -1\n"),
     "t.toml:2:22: key 'ferry.latency_weight_pct': must be in 0..10000, got -1"},
    {"busy_latency_weight_too_big", with_port("[ferry]\nbusy_latency_weight_pct = 10001\n"),
     "t.toml:2:27: key 'ferry.busy_latency_weight_pct': must be in 0..10000, got 10001"},
    {"spin_yield_too_big", with_port("[ferry]\nspin_yield_us = 1000001\n"),
     "t.toml:2:17: key 'ferry.spin_yield_us': must be in 0..1000000, got 1000001"},
    {"spin_yield_negative", with_port("[ferry]\nspin_yield_us = -1\n"),
     "t.toml:2:17: key 'ferry.spin_yield_us': must be in 0..1000000, got -1"},
    {"neighbor_timeout_zero", with_port("[ferry]\nneighbor_timeout_s = 0\n"),
     "t.toml:2:22: key 'ferry.neighbor_timeout_s': must be in 1..86400, got 0"},
    {"huge_integer_does_not_wrap", with_port("[ferry]\nworkers = 4294967297\n"),
     "t.toml:2:11: key 'ferry.workers': must be in 0..128, got 4294967297"},

    // [tcp] and [tcp_test].
    {"tcp_max_connections_zero", with_port("[tcp]\nmax_connections = 0\n"),
     "t.toml:2:19: key 'tcp.max_connections': must be in 1..1048576, got 0"},
    {"tcp_unknown_key", with_port("[tcp]\nsyn_backlg = 5\n"),
     "t.toml:2:1: key 'tcp.syn_backlg': unknown key (did you mean 'syn_backlog'?)"},
    {"tcp_cookies_not_bool", with_port("[tcp]\nsyn_cookies = 1\n"),
     "t.toml:2:15: key 'tcp.syn_cookies': expected a boolean, got an integer"},
    {"tcp_test_port_too_big", with_port("[tcp_test]\necho_port = 65536\n"),
     "t.toml:2:13: key 'tcp_test.echo_port': must be in 0..65535, got 65536"},
    {"tcp_test_port_twice", with_port("[tcp_test]\necho_port = 7\ndiscard_port = 7\n"),
     "t.toml:3:16: key 'tcp_test.discard_port': port 7 is already used by another tcp_test "
     "service"},

    {"tcp_test_relay_to_without_port",
     with_port("[tcp_test]\nrelay_port = 8000\nrelay_to = \"10.77.0.2\"\n"),
     "t.toml:3:12: key 'tcp_test.relay_to': expected a.b.c.d:port, got '10.77.0.2'"},
    {"tcp_test_relay_to_port_zero",
     with_port("[tcp_test]\nrelay_port = 8000\nrelay_to = \"10.77.0.2:0\"\n"),
     "t.toml:3:12: key 'tcp_test.relay_to': expected a.b.c.d:port, got '10.77.0.2:0'"},
    {"tcp_test_relay_to_port_leading_zero",
     with_port("[tcp_test]\nrelay_port = 8000\nrelay_to = \"10.77.0.2:09000\"\n"),
     "t.toml:3:12: key 'tcp_test.relay_to': expected a.b.c.d:port, got '10.77.0.2:09000'"},
    {"tcp_test_relay_to_zero_address",
     with_port("[tcp_test]\nrelay_port = 8000\nrelay_to = \"0.0.0.0:9000\"\n"),
     "t.toml:3:12: key 'tcp_test.relay_to': expected a.b.c.d:port, got '0.0.0.0:9000'"},
    {"tcp_test_relay_port_without_relay_to", with_port("[tcp_test]\nrelay_port = 8000\n"),
     "t.toml:1:1: key 'tcp_test': relay_port needs relay_to (a.b.c.d:port)"},
    {"tcp_test_relay_to_without_relay_port",
     with_port("[tcp_test]\nrelay_to = \"10.77.0.2:9000\"\n"),
     "t.toml:2:12: key 'tcp_test.relay_to': relay_to needs relay_port"},
    {"tcp_test_relay_port_is_echo_port",
     with_port("[tcp_test]\necho_port = 7\nrelay_port = 7\nrelay_to = \"10.77.0.2:9000\"\n"),
     "t.toml:3:14: key 'tcp_test.relay_port': port 7 is already used by another tcp_test "
     "service"},

    // Ports: presence.
    {"no_ports", "[ferry]\nworkers = 1\n",
     "t.toml: key 'port': at least one [[port]] table is required"},
    {"empty_port_array", "port = []\n",
     "t.toml: key 'port': at least one [[port]] table is required"},
    {"missing_name", "[ferry]\n\n[[port]]\nprofile = \"net_tap\"\naddress = \"10.0.0.1/24\"\n",
     "t.toml:3:1: key 'port[0].name': missing required key"},
    {"missing_profile", "[[port]]\nname = \"a\"\naddress = \"10.0.0.1/24\"\n",
     "t.toml:1:1: key 'port[0].profile': missing required key"},
    {"missing_address", "[[port]]\nname = \"a\"\nprofile = \"net_tap\"\n",
     "t.toml:1:1: key 'port[0].address': missing required key"},
    {"error_in_second_port",
     port_with("\n[[port]]\nname = \"tap1\"\nprofile = \"net_tap\"\nmtu = 9001\n"),
     "t.toml:10:7: key 'port[1].mtu': must be in 68..9000, got 9001"},

    // Ports: names and identifiers.
    {"name_uppercase_dash", "[[port]]\nname = \"Tap-0\"\n",
     "t.toml:2:8: key 'port[0].name': must be 1..32 characters of [a-z0-9_], got 'Tap-0'"},
    {"name_empty", "[[port]]\nname = \"\"\n",
     "t.toml:2:8: key 'port[0].name': must be 1..32 characters of [a-z0-9_], got ''"},
    {"profile_path", "[[port]]\nname = \"a\"\nprofile = \"../etc/x\"\n",
     "t.toml:3:11: key 'port[0].profile': must be a profile name of [a-z0-9_] "
     "(drivers-config/<profile>.toml), got '../etc/x'"},
    {"iface_too_long",
     "[[port]]\nname = \"a\"\nprofile = \"net_tap\"\niface = \"abcdefghijklmnop\"\n",
     "t.toml:4:9: key 'port[0].iface': must be 1..15 characters of [A-Za-z0-9_.-] (a Linux "
     "interface name), got 'abcdefghijklmnop'"},
    {"iface_with_comma", "[[port]]\niface = \"veth0,x=1\"\n",
     "t.toml:2:9: key 'port[0].iface': must be 1..15 characters of [A-Za-z0-9_.-] (a Linux "
     "interface name), got 'veth0,x=1'"},
    {"pci_short_form", port_with("pci = \"03:00.0\"\n"),
     "t.toml:6:7: key 'port[0].pci': expected a PCI address dddd:bb:dd.f, got '03:00.0'"},
    {"pci_bad_function", port_with("pci = \"0000:03:00.8\"\n"),
     "t.toml:6:7: key 'port[0].pci': expected a PCI address dddd:bb:dd.f, got "
     "'0000:03:00.8'"},
    {"duplicate_port_name",
     port_with("\n[[port]]\nname = \"tap0\"\nprofile = \"net_tap\"\naddress = "
               "\"10.78.0.1/24\"\n"),
     "t.toml:8:8: key 'port[1].name': duplicate port name 'tap0' (first defined at "
     "t.toml:2:8)"},
    {"duplicate_iface",
     port_with("\n[[port]]\nname = \"tap1\"\nprofile = \"net_tap\"\niface = \"ferry0\"\n"
               "address = \"10.78.0.1/24\"\n"),
     "t.toml:10:9: key 'port[1].iface': interface 'ferry0' is already used by port 'tap0'"},
    {"duplicate_pci",
     "[[port]]\nname = \"a\"\nprofile = \"x\"\npci = \"0000:03:00.0\"\naddress = "
     "\"10.1.0.1/24\"\n[[port]]\nname = \"b\"\nprofile = \"x\"\npci = \"0000:03:00.0\"\n"
     "address = \"10.2.0.1/24\"\n",
     "t.toml:9:7: key 'port[1].pci': PCI device 0000:03:00.0 is already used by port 'a'"},
    {"overlapping_subnets",
     port_with("\n[[port]]\nname = \"tap1\"\nprofile = \"net_tap\"\naddress = "
               "\"10.77.0.9/16\"\n"),
     "t.toml:10:11: key 'port[1].address': subnet 10.77.0.0/16 overlaps port 'tap0' "
     "(10.77.0.0/24)"},

    // Ports: address.
    {"address_without_prefix", "[[port]]\naddress = \"10.0.0.1\"\n",
     "t.toml:2:11: key 'port[0].address': expected 'a.b.c.d/len', got '10.0.0.1'"},
    {"address_octet_too_big", "[[port]]\naddress = \"10.0.0.300/24\"\n",
     "t.toml:2:11: key 'port[0].address': '10.0.0.300' is not an IPv4 address a.b.c.d"},
    {"address_three_octets", "[[port]]\naddress = \"10.0.1/24\"\n",
     "t.toml:2:11: key 'port[0].address': '10.0.1' is not an IPv4 address a.b.c.d"},
    {"address_leading_zero", "[[port]]\naddress = \"10.0.0.010/24\"\n",
     "t.toml:2:11: key 'port[0].address': '10.0.0.010' is not an IPv4 address a.b.c.d"},
    {"prefix_too_long", "[[port]]\naddress = \"10.0.0.1/33\"\n",
     "t.toml:2:11: key 'port[0].address': prefix length must be 1..32, got '33'"},
    {"prefix_zero", "[[port]]\naddress = \"10.0.0.1/0\"\n",
     "t.toml:2:11: key 'port[0].address': prefix length must be 1..32, got '0'"},
    {"prefix_not_a_number", "[[port]]\naddress = \"10.0.0.1/x4\"\n",
     "t.toml:2:11: key 'port[0].address': prefix length must be 1..32, got 'x4'"},
    {"prefix_empty", "[[port]]\naddress = \"10.0.0.1/\"\n",
     "t.toml:2:11: key 'port[0].address': prefix length must be 1..32, got ''"},
    {"address_is_network", "[[port]]\naddress = \"10.77.0.0/24\"\n",
     "t.toml:2:11: key 'port[0].address': 10.77.0.0 is the network address of 10.77.0.0/24, "
     "not a host address"},
    {"address_is_broadcast", "[[port]]\naddress = \"10.77.1.255/23\"\n",
     "t.toml:2:11: key 'port[0].address': 10.77.1.255 is the broadcast address of "
     "10.77.0.0/23, not a host address"},
    {"address_loopback", "[[port]]\naddress = \"127.0.0.1/8\"\n",
     "t.toml:2:11: key 'port[0].address': 127.0.0.1 is not a usable host address "
     "(127.0.0.0/8 is loopback)"},
    {"address_multicast", "[[port]]\naddress = \"224.0.0.5/24\"\n",
     "t.toml:2:11: key 'port[0].address': 224.0.0.5 is not a usable host address "
     "(224.0.0.0/4 is multicast)"},
    {"address_zero_net", "[[port]]\naddress = \"0.0.0.1/24\"\n",
     "t.toml:2:11: key 'port[0].address': 0.0.0.1 is not a usable host address "
     "(0.0.0.0/8 is 'this network')"},
    {"address_limited_broadcast", "[[port]]\naddress = \"255.255.255.255/32\"\n",
     "t.toml:2:11: key 'port[0].address': 255.255.255.255 is not a usable host address "
     "(240.0.0.0/4 is reserved)"},

    // Ports: gateway.
    {"gateway_outside_subnet", port_with("gateway = \"10.78.0.254\"\n"),
     "t.toml:6:11: key 'port[0].gateway': 10.78.0.254 is outside the port's subnet "
     "10.77.0.0/24"},
    {"gateway_before_address_is_still_checked",
     "[[port]]\nname = \"a\"\nprofile = \"p\"\ngateway = \"10.1.0.1\"\naddress = "
     "\"10.2.0.1/24\"\n",
     "t.toml:4:11: key 'port[0].gateway': 10.1.0.1 is outside the port's subnet 10.2.0.0/24"},
    {"gateway_is_own_address", port_with("gateway = \"10.77.0.1\"\n"),
     "t.toml:6:11: key 'port[0].gateway': 10.77.0.1 is the port's own address"},
    {"gateway_is_broadcast", port_with("gateway = \"10.77.0.255\"\n"),
     "t.toml:6:11: key 'port[0].gateway': 10.77.0.255 is the broadcast address of "
     "10.77.0.0/24"},
    {"gateway_is_network", port_with("gateway = \"10.77.0.0\"\n"),
     "t.toml:6:11: key 'port[0].gateway': 10.77.0.0 is the network address of 10.77.0.0/24"},
    {"gateway_with_prefix", port_with("gateway = \"10.77.0.254/24\"\n"),
     "t.toml:6:11: key 'port[0].gateway': expected an IPv4 address a.b.c.d, got "
     "'10.77.0.254/24'"},

    // Ports: mac.
    {"mac_multicast", port_with("mac = \"01:00:5e:00:00:01\"\n"),
     "t.toml:6:7: key 'port[0].mac': 01:00:5e:00:00:01 is a multicast address (the first "
     "octet's low bit is set); a port needs a unicast address"},
    {"mac_broadcast", port_with("mac = \"ff:ff:ff:ff:ff:ff\"\n"),
     "t.toml:6:7: key 'port[0].mac': ff:ff:ff:ff:ff:ff is a multicast address (the first "
     "octet's low bit is set); a port needs a unicast address"},
    {"mac_all_zero", port_with("mac = \"00:00:00:00:00:00\"\n"),
     "t.toml:6:7: key 'port[0].mac': 00:00:00:00:00:00 is the all-zero address"},
    {"mac_dashes", port_with("mac = \"02-00-00-00-00-01\"\n"),
     "t.toml:6:7: key 'port[0].mac': expected a MAC address xx:xx:xx:xx:xx:xx, got "
     "'02-00-00-00-00-01'"},
    {"mac_short", port_with("mac = \"02:00:00:00:01\"\n"),
     "t.toml:6:7: key 'port[0].mac': expected a MAC address xx:xx:xx:xx:xx:xx, got "
     "'02:00:00:00:01'"},

    // Ports: address6.
    {"address6_no_prefix", port_with("address6 = \"fd00:77::1\"\n"),
     "t.toml:6:12: key 'port[0].address6': expected an IPv6 address with its prefix length, "
     "e.g. fd00:77::1/64, got 'fd00:77::1'"},
    {"address6_bad_text", port_with("address6 = \"fd00:::1/64\"\n"),
     "t.toml:6:12: key 'port[0].address6': expected an IPv6 address with its prefix length, "
     "e.g. fd00:77::1/64, got 'fd00:::1/64'"},
    {"address6_multicast", port_with("address6 = \"ff02::1/64\"\n"),
     "t.toml:6:12: key 'port[0].address6': ff02::1/64 is a multicast address"},
    {"address6_link_local", port_with("address6 = \"fe80::1/64\"\n"),
     "t.toml:6:12: key 'port[0].address6': fe80::1/64 is a link-local address (fe80::/10; "
     "ferry takes a unique local or global one)"},
    {"address6_loopback", port_with("address6 = \"::1/128\"\n"),
     "t.toml:6:12: key 'port[0].address6': ::1/128 is an unspecified, loopback or "
     "IPv4-mapped address"},
    {"address6_prefix_0", port_with("address6 = \"fd00::1/0\"\n"),
     "t.toml:6:12: key 'port[0].address6': the prefix length must be 1..128, got 0"},

    // Ports: sizes.
    {"icmp6_rate_too_big", port_with("icmp6_errors_per_s = 100001\n"),
     "t.toml:6:22: key 'port[0].icmp6_errors_per_s': must be in 0..100000, got 100001"},
    {"icmp6_burst_zero", port_with("icmp6_error_burst = 0\n"),
     "t.toml:6:21: key 'port[0].icmp6_error_burst': must be in 1..100000, got 0"},
    {"mtu_too_small", port_with("mtu = 67\n"),
     "t.toml:6:7: key 'port[0].mtu': must be in 68..9000, got 67"},
    {"mtu_too_big", port_with("mtu = 9001\n"),
     "t.toml:6:7: key 'port[0].mtu': must be in 68..9000, got 9001"},
    {"mbufs_too_few", port_with("mbufs = 1000\n"),
     "t.toml:6:9: key 'port[0].mbufs': must be in 1024..16777216, got 1000"},
    {"rx_desc_not_power_of_two", port_with("rx_desc = 1000\n"),
     "t.toml:6:11: key 'port[0].rx_desc': must be 0 (the profile's) or a power of two in "
     "32..32768, got 1000"},
    {"tx_desc_too_small", port_with("tx_desc = 16\n"),
     "t.toml:6:11: key 'port[0].tx_desc': must be 0 (the profile's) or a power of two in "
     "32..32768, got 16"},
    {"tx_desc_too_big", port_with("tx_desc = 65536\n"),
     "t.toml:6:11: key 'port[0].tx_desc': must be in 0..32768, got 65536"},
    {"ring_frames_not_power_of_two", port_with("ring_frames = 3000\n"),
     "t.toml:6:15: key 'port[0].ring_frames': must be 0 (the profile's) or a power of two in "
     "16..65536, got 3000"},
    {"ring_frames_too_small", port_with("ring_frames = 8\n"),
     "t.toml:6:15: key 'port[0].ring_frames': must be 0 (the profile's) or a power of two in "
     "16..65536, got 8"},
    {"ring_frames_too_big", port_with("ring_frames = 131072\n"),
     "t.toml:6:15: key 'port[0].ring_frames': must be in 0..65536, got 131072"},
    {"ring_frames_negative", port_with("ring_frames = -4096\n"),
     "t.toml:6:15: key 'port[0].ring_frames': must be in 0..65536, got -4096"},
    {"ring_frames_string", port_with("ring_frames = \"4096\"\n"),
     "t.toml:6:15: key 'port[0].ring_frames': expected an integer, got a string"},

    // Ports: [port.fault]. The sub-table starts at line 6, its keys at line 7.
    {"fault_probability_above_one", port_with("[port.fault]\nrx_drop = 1.5\n"),
     "t.toml:7:11: key 'port[0].fault.rx_drop': must be in 0.0..1.0, got 1.5"},
    {"fault_probability_negative", port_with("[port.fault]\ntx_reorder = -0.01\n"),
     "t.toml:7:14: key 'port[0].fault.tx_reorder': must be in 0.0..1.0, got -0.01"},
    {"fault_probability_nan", port_with("[port.fault]\nrx_duplicate = nan\n"),
     "t.toml:7:16: key 'port[0].fault.rx_duplicate': must be in 0.0..1.0, got nan"},
    {"fault_probability_inf", port_with("[port.fault]\ntx_drop = inf\n"),
     "t.toml:7:11: key 'port[0].fault.tx_drop': must be in 0.0..1.0, got inf"},
    {"fault_probability_integer_two", port_with("[port.fault]\nrx_reorder = 2\n"),
     "t.toml:7:14: key 'port[0].fault.rx_reorder': must be in 0.0..1.0, got 2"},
    {"fault_probability_integer_negative", port_with("[port.fault]\nrx_drop = -1\n"),
     "t.toml:7:11: key 'port[0].fault.rx_drop': must be in 0.0..1.0, got -1"},
    {"fault_probability_string", port_with("[port.fault]\nrx_drop = \"2%\"\n"),
     "t.toml:7:11: key 'port[0].fault.rx_drop': expected a probability (a number in "
     "0.0..1.0), got a string"},
    {"fault_probability_bool", port_with("[port.fault]\ntx_duplicate = true\n"),
     "t.toml:7:16: key 'port[0].fault.tx_duplicate': expected a probability (a number in "
     "0.0..1.0), got a boolean"},
    {"fault_hold_zero", port_with("[port.fault]\nreorder_hold_us = 0\n"),
     "t.toml:7:19: key 'port[0].fault.reorder_hold_us': must be in 1..100000, got 0"},
    {"fault_hold_too_long", port_with("[port.fault]\nreorder_hold_us = 100001\n"),
     "t.toml:7:19: key 'port[0].fault.reorder_hold_us': must be in 1..100000, got 100001"},
    {"fault_hold_float", port_with("[port.fault]\nreorder_hold_us = 1.5\n"),
     "t.toml:7:19: key 'port[0].fault.reorder_hold_us': expected an integer, got a "
     "floating-point number"},
    {"fault_seed_negative", port_with("[port.fault]\nseed = -1\n"),
     "t.toml:7:8: key 'port[0].fault.seed': must be in 0..9223372036854775807, got -1"},
    {"fault_seed_string", port_with("[port.fault]\nseed = \"42\"\n"),
     "t.toml:7:8: key 'port[0].fault.seed': expected an integer, got a string"},
    {"fault_unknown_key", port_with("[port.fault]\nrx_dropp = 0.1\n"),
     "t.toml:7:1: key 'port[0].fault.rx_dropp': unknown key (did you mean 'rx_drop'?)"},
    {"fault_unknown_key_no_suggestion", port_with("[port.fault]\ndelay_us = 5\n"),
     "t.toml:7:1: key 'port[0].fault.delay_us': unknown key"},
    {"fault_not_a_table", port_with("fault = 0.1\n"),
     "t.toml:6:9: key 'port[0].fault': expected a table, got a floating-point number"},
    {"fault_inline_table_checked", port_with("fault = { rx_drop = 3 }\n"),
     "t.toml:6:21: key 'port[0].fault.rx_drop': must be in 0.0..1.0, got 3"},
    {"fault_in_second_port",
     port_with("\n[[port]]\nname = \"tap1\"\nprofile = \"net_tap\"\niface = \"ferry1\"\n"
               "address = \"10.78.0.1/24\"\n[port.fault]\nrx_drop = 0.5\ntx_drop = 1.01\n"),
     "t.toml:14:11: key 'port[1].fault.tx_drop': must be in 0.0..1.0, got 1.01"},

    // [admin]: the metrics listener's address.
    {"admin_metrics_address_no_port", with_port("[admin]\nmetrics_address = \"127.0.0.1\"\n"),
     "t.toml:2:19: key 'admin.metrics_address': expected a.b.c.d:port, got '127.0.0.1'"},
    {"admin_metrics_address_port_zero",
     with_port("[admin]\nmetrics_address = \"127.0.0.1:0\"\n"),
     "t.toml:2:19: key 'admin.metrics_address': expected a.b.c.d:port, got '127.0.0.1:0'"},
    {"admin_metrics_address_port_too_big",
     with_port("[admin]\nmetrics_address = \"127.0.0.1:65536\"\n"),
     "t.toml:2:19: key 'admin.metrics_address': expected a.b.c.d:port, got '127.0.0.1:65536'"},
    {"admin_metrics_address_host_name",
     with_port("[admin]\nmetrics_address = \"localhost:9180\"\n"),
     "t.toml:2:19: key 'admin.metrics_address': expected a.b.c.d:port, got 'localhost:9180'"},
    {"admin_metrics_address_leading_zero_octet",
     with_port("[admin]\nmetrics_address = \"127.0.0.01:9180\"\n"),
     "t.toml:2:19: key 'admin.metrics_address': expected a.b.c.d:port, got '127.0.0.01:9180'"},
    {"admin_metrics_address_multicast",
     with_port("[admin]\nmetrics_address = \"224.0.0.1:9180\"\n"),
     "t.toml:2:19: key 'admin.metrics_address': 224.0.0.1 cannot be listened on (multicast); "
     "use a local address such as 127.0.0.1, or 0.0.0.0"},
    {"admin_metrics_address_broadcast",
     with_port("[admin]\nmetrics_address = \"255.255.255.255:9180\"\n"),
     "t.toml:2:19: key 'admin.metrics_address': 255.255.255.255 cannot be listened on "
     "(reserved or broadcast); use a local address such as 127.0.0.1, or 0.0.0.0"},
    {"admin_metrics_address_integer", with_port("[admin]\nmetrics_address = 9180\n"),
     "t.toml:2:19: key 'admin.metrics_address': expected a string, got an integer"},
    {"admin_unknown_key", with_port("[admin]\nmetrics_adress = \"127.0.0.1:9180\"\n"),
     "t.toml:2:1: key 'admin.metrics_adress': unknown key (did you mean 'metrics_address'?)"},
    {"admin_not_a_table", with_port("admin = \"127.0.0.1:9180\"\n"),
     "t.toml:1:9: key 'admin': expected a table, got a string"},
    {"admin_array_of_tables", with_port("[[admin]]\nmetrics_address = \"127.0.0.1:9180\"\n"),
     "t.toml:1:1: key 'admin': expected a table, got an array"},
};

INSTANTIATE_TEST_SUITE_P(config, bad_config, testing::ValuesIn(bad_cases),
                         [](const auto &info) { return std::string(info.param.name); });

TEST(config_parse, full_config_parses_to_expected_values) {
    auto r = parse(R"(
[ferry]
workers = 2
wakeup_mode = "always"
idle_threshold_us = 500
neighbor_timeout_s = 30

[[port]]
name = "tap0"
profile = "net_tap"
iface = "ferry0"
address = "10.77.0.1/24"
gateway = "10.77.0.254"
address6 = "FD00:77:0::1/64"
mac = "02:00:0A:4d:00:01"
mtu = 9000
mbufs = 32768
rx_desc = 256
tx_desc = 512
ring_frames = 1024

[[port]]
name = "nic_1"
profile = "ixgbe"
pci = "0000:03:00.1"
address = "192.168.1.2/31"
)",
                   "full.toml");
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    const ferry_config &c = *r;
    EXPECT_EQ(c.source, "full.toml");
    EXPECT_EQ(c.workers, 2u);
    EXPECT_EQ(c.wakeup, wakeup_mode::always);
    EXPECT_EQ(c.idle_threshold_us, 500u);
    EXPECT_EQ(c.nap_budget_us, 100u);  // the default
    EXPECT_EQ(c.latency_weight_pct, 1000u);  // the default
    EXPECT_EQ(c.busy_latency_weight_pct, 1000u);
    EXPECT_EQ(c.spin_yield_us, 20u);  // the default
    EXPECT_EQ(c.neighbor_timeout_s, 30u);
    ASSERT_EQ(c.ports.size(), 2u);

    const port_config &p = c.ports[0];
    EXPECT_EQ(p.name, "tap0");
    EXPECT_EQ(p.profile, "net_tap");
    EXPECT_EQ(p.iface, "ferry0");
    EXPECT_EQ(p.pci, "");
    EXPECT_EQ(p.address, 0x0a4d0001u);
    EXPECT_EQ(p.prefix_len, 24);
    ASSERT_TRUE(p.gateway.has_value());
    EXPECT_EQ(*p.gateway, 0x0a4d00feu);
    ASSERT_TRUE(p.address6.has_value());
    EXPECT_EQ(format_ipv6(*p.address6), "fd00:77::1");
    EXPECT_EQ(p.prefix6_len, 64);
    EXPECT_FALSE(c.ports[1].address6.has_value());
    ASSERT_TRUE(p.mac.has_value());
    EXPECT_EQ(*p.mac, (std::array<uint8_t, 6>{0x02, 0x00, 0x0a, 0x4d, 0x00, 0x01}));
    EXPECT_EQ(p.mtu, 9000);
    EXPECT_EQ(p.mbufs, 32768u);
    EXPECT_EQ(p.rx_desc, 256);
    EXPECT_EQ(p.tx_desc, 512);
    EXPECT_EQ(p.ring_frames, 1024u);
    EXPECT_EQ(p.index, 0u);
    EXPECT_EQ(p.where.file, "full.toml");
    EXPECT_EQ(p.where.line, 8u);
    EXPECT_EQ(p.where.column, 1u);

    const port_config &q = c.ports[1];
    EXPECT_EQ(q.name, "nic_1");
    EXPECT_EQ(q.pci, "0000:03:00.1");
    EXPECT_EQ(q.iface, "");
    // /31 (RFC 3021): both addresses are hosts.
    EXPECT_EQ(q.address, 0xc0a80102u);
    EXPECT_EQ(q.prefix_len, 31);
    EXPECT_FALSE(q.gateway.has_value());
    EXPECT_FALSE(q.mac.has_value());
    EXPECT_EQ(q.mtu, 1500);
    EXPECT_EQ(q.mbufs, 16384u);
    EXPECT_EQ(q.rx_desc, 0);
    EXPECT_EQ(q.tx_desc, 0);
    EXPECT_EQ(q.ring_frames, 0u);  // the profile's
    EXPECT_EQ(q.index, 1u);
    EXPECT_EQ(q.where.line, 22u);
}

TEST(config_parse, defaults_when_ferry_table_is_absent) {
    auto r = parse("port = [{name = \"a\", profile = \"net_tap\", address = \"10.0.0.1/32\"}]\n",
                   "t.toml");
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ(r->workers, 0u);
    EXPECT_EQ(r->wakeup, wakeup_mode::adaptive);
    EXPECT_EQ(r->idle_threshold_us, 200u);
    EXPECT_EQ(r->neighbor_timeout_s, 60u);
    ASSERT_EQ(r->ports.size(), 1u);
    EXPECT_EQ(r->ports[0].address, 0x0a000001u);
    EXPECT_EQ(r->ports[0].prefix_len, 32);
}

TEST(config_parse, every_wakeup_mode_is_accepted) {
    for (wakeup_mode m : {wakeup_mode::conditional, wakeup_mode::always, wakeup_mode::poll, wakeup_mode::adaptive}) {
        std::string text =
            with_port("[ferry]\nwakeup_mode = \"" + std::string(to_string(m)) + "\"\n");
        auto r = parse(text, "t.toml");
        ASSERT_TRUE(r.ok()) << r.error().to_string();
        EXPECT_EQ(r->wakeup, m);
    }
}

TEST(config_parse, range_limits_are_inclusive) {
    // The port table comes last, so the appended keys belong to it.
    auto r = parse(with_port("[ferry]\nworkers = 128\nidle_threshold_us = 1000000\n"
                             "nap_budget_us = 100000\nneighbor_timeout_s = 86400\n"
                             "latency_weight_pct = 10000\nbusy_latency_weight_pct = 0\n"
                             "spin_yield_us = 1000000\n") +
                       "mtu = 68\nmbufs = 16777216\nrx_desc = 32768\ntx_desc = 32\n"
                       "ring_frames = 65536\n",
                   "t.toml");
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ(r->workers, 128u);
    EXPECT_EQ(r->idle_threshold_us, 1000000u);
    EXPECT_EQ(r->nap_budget_us, 100000u);
    EXPECT_EQ(r->latency_weight_pct, 10000u);
    EXPECT_EQ(r->busy_latency_weight_pct, 0u);
    EXPECT_EQ(r->spin_yield_us, 1000000u);
    EXPECT_EQ(r->neighbor_timeout_s, 86400u);
    EXPECT_EQ(r->ports[0].mtu, 68);
    EXPECT_EQ(r->ports[0].mbufs, 16777216u);
    EXPECT_EQ(r->ports[0].rx_desc, 32768);
    EXPECT_EQ(r->ports[0].tx_desc, 32);
    EXPECT_EQ(r->ports[0].ring_frames, 65536u);
    auto low = parse(port_with("ring_frames = 16\n"), "t.toml");
    ASSERT_TRUE(low.ok()) << low.error().to_string();
    EXPECT_EQ(low->ports[0].ring_frames, 16u);
    // ICMPv6 errors: 10 a second, 10 at once by default; 0 a second sends none.
    EXPECT_EQ(low->ports[0].icmp6_errors_per_s, 10u);
    EXPECT_EQ(low->ports[0].icmp6_error_burst, 10u);
    auto icmp = parse(port_with("icmp6_errors_per_s = 0\nicmp6_error_burst = 1\n"), "t.toml");
    ASSERT_TRUE(icmp.ok()) << icmp.error().to_string();
    EXPECT_EQ(icmp->ports[0].icmp6_errors_per_s, 0u);
    EXPECT_EQ(icmp->ports[0].icmp6_error_burst, 1u);
    icmp = parse(port_with("icmp6_errors_per_s = 100000\nicmp6_error_burst = 100000\n"), "t.toml");
    ASSERT_TRUE(icmp.ok()) << icmp.error().to_string();
    EXPECT_EQ(icmp->ports[0].icmp6_errors_per_s, 100000u);
    EXPECT_EQ(icmp->ports[0].icmp6_error_burst, 100000u);
}

TEST(config_parse, disjoint_subnets_and_distinct_ifaces_are_accepted) {
    auto r = parse(port_with("\n[[port]]\nname = \"tap1\"\nprofile = \"net_tap\"\niface = "
                             "\"ferry1\"\naddress = \"10.77.1.1/24\"\n"),
                   "t.toml");
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ(r->ports.size(), 2u);
}

TEST(config_parse, tcp_sections) {
    auto r = parse(with_port("[tcp]\nmax_connections = 64\nsyn_backlog = 4\nsyn_cookies = false\n"
                             "time_wait_ms = 1000\ntx_checksum_offload = true\n"
                             "upstream_keepalive_ms = 0\nrack = false\nprr = false\n"
                             "frto = false\ndsack = false\ntlp_new_data = true\n"
                             "congestion_control = \"bbr\"\n"
                             "[tcp_test]\necho_port = 7\ndiscard_port = 9\nsource_port = 19\n"
                             "source_bytes = 4096\n"),
                   "t.toml");
    ASSERT_TRUE(r) << r.error().to_string();
    EXPECT_EQ(r->tcp.max_connections, 64u);
    EXPECT_EQ(r->tcp.syn_backlog, 4u);
    EXPECT_FALSE(r->tcp.syn_cookies);
    EXPECT_EQ(r->tcp.time_wait_ms, 1000u);
    EXPECT_TRUE(r->tcp.tx_checksum_offload);
    EXPECT_EQ(r->tcp.upstream_keepalive_ms, 0u);
    EXPECT_FALSE(r->tcp.rack);
    EXPECT_FALSE(r->tcp.prr);
    EXPECT_FALSE(r->tcp.frto);
    EXPECT_FALSE(r->tcp.dsack);
    EXPECT_TRUE(r->tcp.tlp_new_data);
    EXPECT_EQ(r->tcp.congestion_control, "bbr");
    EXPECT_EQ(r->tcp_test.echo_port, 7);
    EXPECT_EQ(r->tcp_test.discard_port, 9);
    EXPECT_EQ(r->tcp_test.source_port, 19);
    EXPECT_EQ(r->tcp_test.source_bytes, 4096u);
    auto d = parse(port_tap0, "t.toml");
    ASSERT_TRUE(d);
    EXPECT_EQ(d->tcp.max_connections, 1024u);
    EXPECT_EQ(d->tcp.upstream_keepalive_ms, 5000u);
    EXPECT_TRUE(d->tcp.rack);
    EXPECT_TRUE(d->tcp.prr && d->tcp.frto && d->tcp.dsack);
    EXPECT_FALSE(d->tcp.tlp_new_data);
    EXPECT_EQ(d->tcp.congestion_control, "cubic");
    EXPECT_TRUE(d->tcp.syn_cookies);
    EXPECT_EQ(d->tcp_test.echo_port, 0);
}

TEST(config_parse, unknown_congestion_control_names_the_choices) {
    auto r = parse(with_port("[tcp]\ncongestion_control = \"reno\"\n"), "t.toml");
    ASSERT_FALSE(r);
    const std::string e = r.error().to_string();
    EXPECT_NE(e.find("t.toml:"), std::string::npos) << e;
    EXPECT_NE(e.find("unknown congestion control 'reno'"), std::string::npos) << e;
    EXPECT_NE(e.find("bbr"), std::string::npos) << e;
}

TEST(config_parse, tcp_test_relay) {
    auto r = parse(with_port("[tcp_test]\nrelay_port = 8000\nrelay_to = \"10.77.0.2:65535\"\n"),
                   "t.toml");
    ASSERT_TRUE(r) << r.error().to_string();
    EXPECT_EQ(r->tcp_test.relay_port, 8000);
    EXPECT_EQ(r->tcp_test.relay_addr, 0x0a4d0002u);
    EXPECT_EQ(r->tcp_test.relay_to_port, 65535);
}

TEST(config_parse, admin_metrics_address) {
    auto r = parse(with_port("[admin]\nmetrics_address = \"127.0.0.1:9180\"\n"), "t.toml");
    ASSERT_TRUE(r) << r.error().to_string();
    ASSERT_TRUE(r->admin.addr.has_value());
    EXPECT_EQ(*r->admin.addr, 0x7f000001u);
    EXPECT_EQ(r->admin.port, 9180);
    EXPECT_EQ(r->admin.where.file, "t.toml");
    EXPECT_EQ(r->admin.where.line, 2u);
    EXPECT_EQ(r->admin.where.column, 19u);

    // Every address (INADDR_ANY) and the port limits.
    auto any = parse(with_port("[admin]\nmetrics_address = \"0.0.0.0:65535\"\n"), "t.toml");
    ASSERT_TRUE(any) << any.error().to_string();
    EXPECT_EQ(any->admin.addr, 0u);
    EXPECT_EQ(any->admin.port, 65535);
    auto one = parse(with_port("[admin]\nmetrics_address = \"10.1.2.3:1\"\n"), "t.toml");
    ASSERT_TRUE(one) << one.error().to_string();
    EXPECT_EQ(one->admin.addr, 0x0a010203u);
    EXPECT_EQ(one->admin.port, 1);

    // Absent table, or a table without the key: no listener.
    auto none = parse(port_tap0, "t.toml");
    ASSERT_TRUE(none);
    EXPECT_FALSE(none->admin.addr.has_value());
    auto empty = parse(with_port("[admin]\n"), "t.toml");
    ASSERT_TRUE(empty) << empty.error().to_string();
    EXPECT_FALSE(empty->admin.addr.has_value());
}

TEST(config_parse, port_fault_keys) {
    // [port.fault] belongs to the [[port]] above it; integers 0 and 1 are probabilities too.
    auto r = parse(port_with("[port.fault]\nrx_drop = 0.02\nrx_duplicate = 1\nrx_reorder = 0\n"
                             "tx_drop = 1.0\ntx_duplicate = 0.5\ntx_reorder = 1e-3\n"
                             "reorder_hold_us = 250\nseed = 42\n"
                             "\n[[port]]\nname = \"tap1\"\nprofile = \"net_tap\"\n"
                             "iface = \"ferry1\"\naddress = \"10.78.0.1/24\"\n"),
                   "t.toml");
    ASSERT_TRUE(r) << r.error().to_string();
    ASSERT_EQ(r->ports.size(), 2u);
    const fault_config &f = r->ports[0].fault;
    EXPECT_TRUE(f.enabled());
    EXPECT_DOUBLE_EQ(f.rx_drop, 0.02);
    EXPECT_DOUBLE_EQ(f.rx_duplicate, 1.0);
    EXPECT_DOUBLE_EQ(f.rx_reorder, 0.0);
    EXPECT_DOUBLE_EQ(f.tx_drop, 1.0);
    EXPECT_DOUBLE_EQ(f.tx_duplicate, 0.5);
    EXPECT_DOUBLE_EQ(f.tx_reorder, 0.001);
    EXPECT_EQ(f.reorder_hold_us, 250u);
    EXPECT_EQ(f.seed, 42u);
    // The second port has no [port.fault]: defaults, off.
    const fault_config &g = r->ports[1].fault;
    EXPECT_FALSE(g.enabled());
    EXPECT_EQ(g.rx_drop, 0.0);
    EXPECT_EQ(g.reorder_hold_us, 1000u);
    EXPECT_EQ(g.seed, 0u);
}

TEST(config_parse, port_fault_limits_and_defaults) {
    auto r = parse(port_with("[port.fault]\nreorder_hold_us = 1\nseed = 9223372036854775807\n"
                             "rx_drop = 0.0\ntx_drop = -0.0\n"),
                   "t.toml");
    ASSERT_TRUE(r) << r.error().to_string();
    const fault_config &f = r->ports[0].fault;
    // Present but all zero: the same as no [port.fault] at all.
    EXPECT_FALSE(f.enabled());
    EXPECT_FALSE(std::signbit(f.tx_drop));
    EXPECT_EQ(f.reorder_hold_us, 1u);
    EXPECT_EQ(f.seed, 9223372036854775807u);

    auto hi = parse(port_with("[port.fault]\nreorder_hold_us = 100000\n"), "t.toml");
    ASSERT_TRUE(hi) << hi.error().to_string();
    EXPECT_EQ(hi->ports[0].fault.reorder_hold_us, 100000u);
    EXPECT_FALSE(hi->ports[0].fault.enabled());

    // Each probability alone turns the injector on.
    for (const char *k :
         {"rx_drop", "rx_duplicate", "rx_reorder", "tx_drop", "tx_duplicate", "tx_reorder"}) {
        auto one = parse(port_with("fault = { " + std::string(k) + " = 1e-9 }\n"), "t.toml");
        ASSERT_TRUE(one) << one.error().to_string();
        EXPECT_TRUE(one->ports[0].fault.enabled()) << k;
    }
}

TEST(config_parse, embedded_default_parses) {
    auto r = parse(embedded_default(), embedded_default_name);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ(r->source, "<embedded default>");
    EXPECT_EQ(r->workers, 0u);
    EXPECT_EQ(r->wakeup, wakeup_mode::adaptive);
    EXPECT_EQ(r->latency_weight_pct, 1000u);
    ASSERT_EQ(r->ports.size(), 1u);
    const port_config &p = r->ports[0];
    EXPECT_EQ(p.name, "tap0");
    EXPECT_EQ(p.profile, "net_tap");
    EXPECT_EQ(p.iface, "ferry0");
    EXPECT_EQ(format_ipv4(p.address), "10.77.0.1");
    EXPECT_EQ(p.prefix_len, 24);
    EXPECT_FALSE(p.gateway.has_value());
    EXPECT_FALSE(p.mac.has_value());
    EXPECT_EQ(p.where.file, "<embedded default>");
}

TEST(config_load_file, missing_file_names_path_and_errno_text) {
    auto r = load_file("/nonexistent-ferry-dir/ferry.toml");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().to_string(),
              "/nonexistent-ferry-dir/ferry.toml: cannot read file: No such file or directory");
}

TEST(config_load_file, directory_is_not_a_file) {
    auto r = load_file("/");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().to_string(), "/: cannot read file: Is a directory");
}

// A temporary file that is removed at the end of the test.
class temp_file {
public:
    explicit temp_file(std::string_view text) {
        char tmpl[] = "/tmp/ferry_config_test_XXXXXX";
        int fd = mkstemp(tmpl);
        EXPECT_GE(fd, 0);
        path_ = tmpl;
        EXPECT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
        close(fd);
    }
    ~temp_file() { unlink(path_.c_str()); }
    const std::string &path() const { return path_; }

private:
    std::string path_;
};

TEST(config_load_file, reads_and_parses_with_the_path_as_source) {
    temp_file f(with_port("[ferry]\nworkers = 3\n"));
    auto r = load_file(f.path());
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ(r->source, f.path());
    EXPECT_EQ(r->workers, 3u);
    EXPECT_EQ(r->ports[0].where.file, f.path());
}

TEST(config_load_file, errors_name_the_file) {
    temp_file f(with_port("[ferry]\nworkers = 300\n"));
    auto r = load_file(f.path());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().to_string(),
              f.path() + ":2:11: key 'ferry.workers': must be in 0..128, got 300");
}

TEST(config_wakeup_mode, names_round_trip) {
    EXPECT_EQ(to_string(wakeup_mode::conditional), "conditional");
    EXPECT_EQ(to_string(wakeup_mode::always), "always");
    EXPECT_EQ(to_string(wakeup_mode::poll), "poll");
    for (wakeup_mode m : {wakeup_mode::conditional, wakeup_mode::always, wakeup_mode::poll, wakeup_mode::adaptive})
        EXPECT_EQ(parse_wakeup_mode(to_string(m)), m);
    EXPECT_EQ(parse_wakeup_mode(""), std::nullopt);
    EXPECT_EQ(parse_wakeup_mode("POLL"), std::nullopt);
    EXPECT_EQ(parse_wakeup_mode("poll "), std::nullopt);
}

struct to_string_case {
    const char *name;
    error e;
    const char *expected;
};

void PrintTo(const to_string_case &c, std::ostream *os) {
    *os << c.name;
}

class error_to_string : public testing::TestWithParam<to_string_case> {};

TEST_P(error_to_string, leaves_out_unknown_parts) {
    EXPECT_EQ(GetParam().e.to_string(), GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(
    config, error_to_string,
    testing::Values(
        to_string_case{"everything",
                       {{"f.toml", 3, 7}, "port[0].address", "bad"},
                       "f.toml:3:7: key 'port[0].address': bad"},
        to_string_case{"no_column", {{"f.toml", 3, 0}, "k", "bad"}, "f.toml:3: key 'k': bad"},
        to_string_case{"no_line", {{"f.toml", 0, 0}, "k", "bad"}, "f.toml: key 'k': bad"},
        to_string_case{"no_key", {{"f.toml", 1, 2}, "", "bad"}, "f.toml:1:2: bad"},
        to_string_case{"no_file", {{"", 4, 5}, "k", "bad"}, "4:5: key 'k': bad"},
        to_string_case{"key_only", {{}, "k", "bad"}, "key 'k': bad"},
        to_string_case{"message_only", {{}, "", "bad"}, "bad"}),
    [](const auto &info) { return std::string(info.param.name); });

TEST(config_format, ipv4_and_mac) {
    EXPECT_EQ(format_ipv4(0x0a4d0001u), "10.77.0.1");
    EXPECT_EQ(format_ipv4(0xffffffffu), "255.255.255.255");
    EXPECT_EQ(format_ipv4(0), "0.0.0.0");
    EXPECT_EQ(format_mac({0x02, 0x00, 0x0a, 0x4d, 0xab, 0xff}), "02:00:0a:4d:ab:ff");
}

}  // namespace
}  // namespace ferry::config
