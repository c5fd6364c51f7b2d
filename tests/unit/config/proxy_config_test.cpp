// lib/config: the proxy's tables, [http], [[listener]], [[route]], [[upstream]] and
// [[upstream.server]]. Like config_test.cpp, bad configs are {name, toml, exact error}.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "ferry/config/config.h"

namespace ferry::config {
namespace {

// One valid port, lines 1-5; cfg() appends the proxy's tables from line 6 on.
constexpr std::string_view port_tap0 = R"([[port]]
name = "tap0"
profile = "net_tap"
iface = "ferry0"
address = "10.77.0.1/24"
)";

std::string cfg(std::string_view tables) {
    return std::string(port_tap0) + std::string(tables);
}

// An upstream "app" with one server on tap0's subnet (4 lines).
constexpr std::string_view upstream_app = R"([[upstream]]
name = "app"
[[upstream.server]]
address = "10.77.0.2:8080"
)";

// [[upstream]] "app" with `lines` after its name: at line 8 when it starts at line 6.
std::string upstream_with(std::string_view lines) {
    return "[[upstream]]\nname = \"app\"\n" + std::string(lines) +
           "[[upstream.server]]\naddress = \"10.77.0.2:8080\"\n";
}

// [[listener]] "web" on port 80 with `lines` after it: at line 9 when it starts at line 6.
std::string listener_with(std::string_view lines) {
    return "[[listener]]\nname = \"web\"\nport = 80\n" + std::string(lines);
}

// [[route]] with `lines`: at line 7 when it starts at line 6.
std::string route_with(std::string_view lines) {
    return "[[route]]\n" + std::string(lines);
}

constexpr std::string_view log_path_rule =
    "must be \"\" (off) or an absolute file path (starting with '/', not ending with '/', at "
    "most 4095 bytes, no control characters)";

struct bad_case {
    const char *name;
    std::string text;
    std::string expected;
};

void PrintTo(const bad_case &c, std::ostream *os) {
    *os << c.name;
}

class bad_proxy_config : public testing::TestWithParam<bad_case> {};

TEST_P(bad_proxy_config, reports_position_key_and_message) {
    const bad_case &c = GetParam();
    auto r = parse(c.text, "t.toml");
    ASSERT_FALSE(r.ok()) << "accepted:\n" << c.text;
    EXPECT_EQ(r.error().to_string(), c.expected) << c.text;
}

const bad_case bad_cases[] = {
    // [http]
    {"http_unknown_table_suggests", cfg("[htttp]\nvia = \"x\"\n"),
     "t.toml:6:2: key 'htttp': unknown table (did you mean 'http'?)"},
    {"http_unknown_key_suggests", cfg("[http]\nmax_header_byte = 4096\n"),
     "t.toml:7:1: key 'http.max_header_byte': unknown key (did you mean 'max_header_bytes'?)"},
    // Top-level keys must come before the first table (else they belong to it).
    {"http_not_a_table", "http = 1\n" + std::string(port_tap0),
     "t.toml:1:8: key 'http': expected a table, got an integer"},
    {"http_key_after_port_belongs_to_the_port", cfg("http = {}\n"),
     "t.toml:6:1: key 'port[0].http': unknown table"},
    {"http_via_empty", cfg("[http]\nvia = \"\"\n"),
     "t.toml:7:7: key 'http.via': must be 1..32 characters of [A-Za-z0-9._-], got ''"},
    {"http_via_space", cfg("[http]\nvia = \"my proxy\"\n"),
     "t.toml:7:7: key 'http.via': must be 1..32 characters of [A-Za-z0-9._-], got 'my proxy'"},
    {"http_via_too_long", cfg("[http]\nvia = \"" + std::string(33, 'v') + "\"\n"),
     "t.toml:7:7: key 'http.via': must be 1..32 characters of [A-Za-z0-9._-], got "
     "'vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv'"},
    {"http_via_not_string", cfg("[http]\nvia = 1\n"),
     "t.toml:7:7: key 'http.via': expected a string, got an integer"},
    {"http_add_x_forwarded_not_bool", cfg("[http]\nadd_x_forwarded = 1\n"),
     "t.toml:7:19: key 'http.add_x_forwarded': expected a boolean, got an integer"},
    {"http_timeout_float", cfg("[http]\nclient_idle_timeout_ms = 1.5\n"),
     "t.toml:7:26: key 'http.client_idle_timeout_ms': expected an integer, got a "
     "floating-point number"},
    {"http_access_log_relative", cfg("[http]\naccess_log = \"logs/access.log\"\n"),
     "t.toml:7:14: key 'http.access_log': " + std::string(log_path_rule) +
         ", got 'logs/access.log'"},
    {"http_access_log_directory", cfg("[http]\naccess_log = \"/var/log/ferry/\"\n"),
     "t.toml:7:14: key 'http.access_log': " + std::string(log_path_rule) +
         ", got '/var/log/ferry/'"},
    {"http_access_log_control_char", cfg("[http]\naccess_log = \"/tmp/a\\tb.log\"\n"),
     "t.toml:7:14: key 'http.access_log': " + std::string(log_path_rule) + ", got '/tmp/a\tb.log'"},
    {"http_access_log_too_long", cfg("[http]\naccess_log = \"/" + std::string(4095, 'a') + "\"\n"),
     "t.toml:7:14: key 'http.access_log': " + std::string(log_path_rule) + ", got '/" +
         std::string(4095, 'a') + "'"},
    {"http_access_log_not_string", cfg("[http]\naccess_log = true\n"),
     "t.toml:7:14: key 'http.access_log': expected a string, got a boolean"},
    {"http_access_log_format_unknown", cfg("[http]\naccess_log_format = \"clf\"\n"),
     "t.toml:7:21: key 'http.access_log_format': unknown access log format 'clf' (expected "
     "combined or json)"},
    {"http_access_log_format_case", cfg("[http]\naccess_log_format = \"JSON\"\n"),
     "t.toml:7:21: key 'http.access_log_format': unknown access log format 'JSON' (expected "
     "combined or json)"},
    {"http_access_log_format_not_string", cfg("[http]\naccess_log_format = 1\n"),
     "t.toml:7:21: key 'http.access_log_format': expected a string, got an integer"},
    {"http_access_log_typo", cfg("[http]\naccess_logs = \"/a.log\"\n"),
     "t.toml:7:1: key 'http.access_logs': unknown key (did you mean 'access_log'?)"},

    // [[listener]]
    {"listener_single_table", cfg("[listener]\nname = \"web\"\nport = 80\n"),
     "t.toml:6:1: key 'listener': expected an array of tables ([[listener]]), got a table"},
    {"listener_array_of_int", "listener = [1]\n" + std::string(port_tap0),
     "t.toml:1:13: key 'listener[0]': expected a table, got an integer"},
    {"listener_missing_name", cfg("[[listener]]\nport = 80\n"),
     "t.toml:6:1: key 'listener[0].name': missing required key"},
    {"listener_missing_port", cfg("[[listener]]\nname = \"web\"\n"),
     "t.toml:6:1: key 'listener[0].port': missing required key"},
    {"listener_name_uppercase", cfg("[[listener]]\nname = \"Web\"\nport = 80\n"),
     "t.toml:7:8: key 'listener[0].name': must be 1..32 characters of [a-z0-9_], got 'Web'"},
    {"listener_name_too_long", cfg("[[listener]]\nname = \"" + std::string(33, 'a') + "\"\n"),
     "t.toml:7:8: key 'listener[0].name': must be 1..32 characters of [a-z0-9_], got "
     "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'"},
    {"listener_port_zero", cfg("[[listener]]\nname = \"web\"\nport = 0\n"),
     "t.toml:8:8: key 'listener[0].port': must be in 1..65535, got 0"},
    {"listener_port_too_big", cfg("[[listener]]\nname = \"web\"\nport = 65536\n"),
     "t.toml:8:8: key 'listener[0].port': must be in 1..65535, got 65536"},
    {"listener_port_string", cfg("[[listener]]\nname = \"web\"\nport = \"80\"\n"),
     "t.toml:8:8: key 'listener[0].port': expected an integer, got a string"},
    {"listener_unknown_key", cfg(listener_with("default_upsteam = \"app\"\n")),
     "t.toml:9:1: key 'listener[0].default_upsteam': unknown key (did you mean "
     "'default_upstream'?)"},
    {"listener_duplicate_name", cfg(listener_with("[[listener]]\nname = \"web\"\nport = 81\n")),
     "t.toml:10:8: key 'listener[1].name': duplicate listener name 'web' (first defined at "
     "t.toml:7:8)"},
    {"listener_duplicate_port", cfg(listener_with("[[listener]]\nname = \"alt\"\nport = 80\n")),
     "t.toml:11:8: key 'listener[1].port': port 80 is already used by listener 'web' (two "
     "listeners share a port number only when each is bound to a different [[port]] with 'on' "
     "or 'address')"},
    {"listener_duplicate_port_one_bound",
     cfg(listener_with("on = \"tap0\"\n[[listener]]\nname = \"alt\"\nport = 80\n")),
     "t.toml:12:8: key 'listener[1].port': port 80 is already used by listener 'web' (two "
     "listeners share a port number only when each is bound to a different [[port]] with 'on' "
     "or 'address')"},
    {"listener_on_unknown_port", cfg(listener_with("on = \"tap1\"\n")),
     "t.toml:9:6: key 'listener[0].on': unknown port 'tap1' (did you mean 'tap0'?)"},
    {"listener_address_not_a_port", cfg(listener_with("address = \"10.77.0.9\"\n")),
     "t.toml:9:11: key 'listener[0].address': 10.77.0.9 is not the address of a [[port]]: "
     "10.77.0.1 (tap0)"},
    {"listener_address_malformed", cfg(listener_with("address = \"10.77.0\"\n")),
     "t.toml:9:11: key 'listener[0].address': expected an IPv4 address a.b.c.d or an IPv6 "
     "address, got '10.77.0'"},
    {"listener_address6_not_a_port", cfg(listener_with("address = \"fd00:77::1\"\n")),
     "t.toml:9:11: key 'listener[0].address': fd00:77::1 is not the address of a [[port]]: "
     "10.77.0.1 (tap0)"},
    {"listener_port_is_tcp_test_echo",
     cfg("[tcp_test]\necho_port = 7\n[[listener]]\nname = \"web\"\nport = 7\n"),
     "t.toml:10:8: key 'listener[0].port': port 7 is already used by tcp_test.echo_port"},
    {"listener_port_is_tcp_test_source_defined_later",
     cfg("[[listener]]\nname = \"web\"\nport = 19\n[tcp_test]\nsource_port = 19\n"),
     "t.toml:8:8: key 'listener[0].port': port 19 is already used by tcp_test.source_port"},
    {"listener_port_is_tcp_test_relay",
     cfg(listener_with("[tcp_test]\nrelay_port = 80\nrelay_to = \"10.77.0.2:9000\"\n")),
     "t.toml:8:8: key 'listener[0].port': port 80 is already used by tcp_test.relay_port"},
    {"listener_default_upstream_without_upstreams",
     cfg(listener_with("default_upstream = \"app\"\n")),
     "t.toml:9:20: key 'listener[0].default_upstream': unknown upstream 'app' (there is no "
     "[[upstream]] table)"},
    {"listener_default_upstream_typo",
     cfg(listener_with("default_upstream = \"ap\"\n") + std::string(upstream_app)),
     "t.toml:9:20: key 'listener[0].default_upstream': unknown upstream 'ap' (did you mean "
     "'app'?)"},
    {"listener_default_upstream_unknown_no_suggestion",
     cfg(listener_with("default_upstream = \"backend\"\n") + std::string(upstream_app)),
     "t.toml:9:20: key 'listener[0].default_upstream': unknown upstream 'backend'"},
    {"listener_default_upstream_empty", cfg(listener_with("default_upstream = \"\"\n")),
     "t.toml:9:20: key 'listener[0].default_upstream': must be an [[upstream]] name (1..32 "
     "characters of [a-z0-9_]), got ''"},

    // [[route]]
    {"route_single_table", cfg("[route]\nupstream = \"app\"\n"),
     "t.toml:6:1: key 'route': expected an array of tables ([[route]]), got a table"},
    {"route_missing_upstream", cfg(route_with("host = \"example.com\"\n")),
     "t.toml:6:1: key 'route[0].upstream': missing required key"},
    {"route_unknown_upstream_without_upstreams", cfg(route_with("upstream = \"app\"\n")),
     "t.toml:7:12: key 'route[0].upstream': unknown upstream 'app' (there is no [[upstream]] "
     "table)"},
    {"route_upstream_typo", cfg(std::string(upstream_app) + route_with("upstream = \"apq\"\n")),
     "t.toml:11:12: key 'route[0].upstream': unknown upstream 'apq' (did you mean 'app'?)"},
    {"route_unknown_listener_without_listeners",
     cfg(route_with("listener = \"web\"\nupstream = \"app\"\n") + std::string(upstream_app)),
     "t.toml:7:12: key 'route[0].listener': unknown listener 'web' (there is no [[listener]] "
     "table)"},
    {"route_listener_typo",
     cfg(listener_with("") + route_with("listener = \"webb\"\nupstream = \"app\"\n") +
         std::string(upstream_app)),
     "t.toml:10:12: key 'route[0].listener': unknown listener 'webb' (did you mean 'web'?)"},
    {"route_upstream_not_a_name", cfg(route_with("upstream = \"App\"\n")),
     "t.toml:7:12: key 'route[0].upstream': must be an [[upstream]] name (1..32 characters of "
     "[a-z0-9_]), got 'App'"},
    {"route_host_with_port", cfg(route_with("host = \"example.com:8080\"\n")),
     "t.toml:7:8: key 'route[0].host': must not have a port (the request's Host is compared "
     "without its :port), got 'example.com:8080'"},
    {"route_host_bare_star", cfg(route_with("host = \"*\"\n")),
     "t.toml:7:8: key 'route[0].host': expected a host name or *.domain (labels of "
     "[A-Za-z0-9_-]), got '*'"},
    {"route_host_star_inside", cfg(route_with("host = \"api.*.com\"\n")),
     "t.toml:7:8: key 'route[0].host': expected a host name or *.domain (labels of "
     "[A-Za-z0-9_-]), got 'api.*.com'"},
    {"route_host_star_without_dot", cfg(route_with("host = \"*example.com\"\n")),
     "t.toml:7:8: key 'route[0].host': expected a host name or *.domain (labels of "
     "[A-Za-z0-9_-]), got '*example.com'"},
    {"route_host_star_dot_only", cfg(route_with("host = \"*.\"\n")),
     "t.toml:7:8: key 'route[0].host': expected a host name or *.domain (labels of "
     "[A-Za-z0-9_-]), got '*.'"},
    {"route_host_leading_dot", cfg(route_with("host = \".example.com\"\n")),
     "t.toml:7:8: key 'route[0].host': expected a host name or *.domain (labels of "
     "[A-Za-z0-9_-]), got '.example.com'"},
    {"route_host_trailing_dot", cfg(route_with("host = \"example.com.\"\n")),
     "t.toml:7:8: key 'route[0].host': expected a host name or *.domain (labels of "
     "[A-Za-z0-9_-]), got 'example.com.'"},
    {"route_host_double_dot", cfg(route_with("host = \"example..com\"\n")),
     "t.toml:7:8: key 'route[0].host': expected a host name or *.domain (labels of "
     "[A-Za-z0-9_-]), got 'example..com'"},
    {"route_host_empty", cfg(route_with("host = \"\"\n")),
     "t.toml:7:8: key 'route[0].host': expected a host name or *.domain (labels of "
     "[A-Za-z0-9_-]), got ''"},
    {"route_host_label_too_long", cfg(route_with("host = \"" + std::string(64, 'a') + ".com\"\n")),
     "t.toml:7:8: key 'route[0].host': expected a host name or *.domain (labels of "
     "[A-Za-z0-9_-]), got '" +
         std::string(64, 'a') + ".com'"},
    {"route_path_prefix_relative", cfg(route_with("path_prefix = \"api/\"\n")),
     "t.toml:7:15: key 'route[0].path_prefix': must start with '/' and be at most 1024 bytes "
     "of visible ASCII without '?' or '#', got 'api/'"},
    {"route_path_prefix_empty", cfg(route_with("path_prefix = \"\"\n")),
     "t.toml:7:15: key 'route[0].path_prefix': must start with '/' and be at most 1024 bytes "
     "of visible ASCII without '?' or '#', got ''"},
    {"route_path_prefix_space", cfg(route_with("path_prefix = \"/a b\"\n")),
     "t.toml:7:15: key 'route[0].path_prefix': must start with '/' and be at most 1024 bytes "
     "of visible ASCII without '?' or '#', got '/a b'"},
    {"route_path_prefix_query", cfg(route_with("path_prefix = \"/a?b=1\"\n")),
     "t.toml:7:15: key 'route[0].path_prefix': must start with '/' and be at most 1024 bytes "
     "of visible ASCII without '?' or '#', got '/a?b=1'"},
    {"route_path_prefix_too_long",
     cfg(route_with("path_prefix = \"/" + std::string(1024, 'p') + "\"\n")),
     "t.toml:7:15: key 'route[0].path_prefix': must start with '/' and be at most 1024 bytes "
     "of visible ASCII without '?' or '#', got '/" +
         std::string(1024, 'p') + "'"},
    {"route_unknown_key", cfg(route_with("prefix = \"/\"\n")),
     "t.toml:7:1: key 'route[0].prefix': unknown key"},

    // [[upstream]]
    {"upstream_single_table", cfg("[upstream]\nname = \"app\"\n"),
     "t.toml:6:1: key 'upstream': expected an array of tables ([[upstream]]), got a table"},
    {"upstream_missing_name",
     cfg("[[upstream]]\n[[upstream.server]]\naddress = \"10.77.0.2:80\"\n"),
     "t.toml:6:1: key 'upstream[0].name': missing required key"},
    {"upstream_without_servers", cfg("[[upstream]]\nname = \"app\"\n"),
     "t.toml:6:1: key 'upstream[0].server': at least one [[upstream.server]] table is required"},
    {"upstream_empty_server_array", cfg("[[upstream]]\nname = \"app\"\nserver = []\n"),
     "t.toml:8:10: key 'upstream[0].server': at least one [[upstream.server]] table is "
     "required"},
    {"upstream_server_single_table",
     cfg("[[upstream]]\nname = \"app\"\n[upstream.server]\naddress = \"10.77.0.2:80\"\n"),
     "t.toml:8:1: key 'upstream[0].server': expected an array of tables ([[upstream.server]]), "
     "got a table"},
    {"upstream_duplicate_name", cfg(std::string(upstream_app) + std::string(upstream_app)),
     "t.toml:11:8: key 'upstream[1].name': duplicate upstream name 'app' (first defined at "
     "t.toml:7:8)"},
    {"upstream_unknown_key", cfg(upstream_with("balanse = \"least_conn\"\n")),
     "t.toml:8:1: key 'upstream[0].balanse': unknown key (did you mean 'balance'?)"},
    {"upstream_balance_unknown", cfg(upstream_with("balance = \"random\"\n")),
     "t.toml:8:11: key 'upstream[0].balance': unknown balance mode 'random' (expected "
     "round_robin, least_conn or consistent_hash)"},
    {"upstream_balance_case", cfg(upstream_with("balance = \"Round_Robin\"\n")),
     "t.toml:8:11: key 'upstream[0].balance': unknown balance mode 'Round_Robin' (expected "
     "round_robin, least_conn or consistent_hash)"},
    {"upstream_hash_key_unknown",
     cfg(upstream_with("balance = \"consistent_hash\"\nhash_key = \"cookie\"\n")),
     "t.toml:9:12: key 'upstream[0].hash_key': unknown hash key 'cookie' (expected client_ip, "
     "uri or host)"},
    {"upstream_when_all_down_unknown", cfg(upstream_with("when_all_down = \"panic\"\n")),
     "t.toml:8:17: key 'upstream[0].when_all_down': unknown when_all_down mode 'panic' "
     "(expected try or refuse)"},
    {"upstream_pool_unknown", cfg(upstream_with("pool = \"global\"\n")),
     "t.toml:8:8: key 'upstream[0].pool': unknown pool mode 'global' (expected local or "
     "shared)"},
    {"upstream_hash_key_without_consistent_hash", cfg(upstream_with("hash_key = \"uri\"\n")),
     "t.toml:8:12: key 'upstream[0].hash_key': hash_key is only used with balance = "
     "\"consistent_hash\" (this upstream's balance is \"round_robin\")"},
    {"upstream_hash_key_before_least_conn",
     cfg(upstream_with("hash_key = \"host\"\nbalance = \"least_conn\"\n")),
     "t.toml:8:12: key 'upstream[0].hash_key': hash_key is only used with balance = "
     "\"consistent_hash\" (this upstream's balance is \"least_conn\")"},
    {"upstream_shared_connections_with_local_pool", cfg(upstream_with("shared_connections = 8\n")),
     "t.toml:8:22: key 'upstream[0].shared_connections': shared_connections is only used with "
     "pool = \"shared\" (this upstream's pool is \"local\")"},
    {"upstream_shared_pick_with_local_pool",
     cfg(upstream_with("shared_pick = \"own_idle_first\"\n")),
     "t.toml:8:15: key 'upstream[0].shared_pick': shared_pick is only used with "
     "pool = \"shared\" (this upstream's pool is \"local\")"},
    {"upstream_shared_pick_unknown",
     cfg(upstream_with("pool = \"shared\"\nshared_pick = \"local_first\"\n")),
     "t.toml:9:15: key 'upstream[0].shared_pick': unknown shared_pick mode 'local_first' "
     "(expected round_robin or own_idle_first)"},
    {"upstream_max_idle_with_shared_pool", cfg(upstream_with("max_idle = 8\npool = \"shared\"\n")),
     "t.toml:8:12: key 'upstream[0].max_idle': max_idle is only used with pool = \"local\" "
     "(this upstream's pool is \"shared\")"},
    {"upstream_health_check_path_relative", cfg(upstream_with("health_check_path = \"health\"\n")),
     "t.toml:8:21: key 'upstream[0].health_check_path': must be \"\" (no checks) or start with "
     "'/' and be at most 1024 bytes of visible ASCII without '#', got 'health'"},
    {"upstream_health_check_path_space", cfg(upstream_with("health_check_path = \"/a b\"\n")),
     "t.toml:8:21: key 'upstream[0].health_check_path': must be \"\" (no checks) or start with "
     "'/' and be at most 1024 bytes of visible ASCII without '#', got '/a b'"},
    {"upstream_health_check_host_space", cfg(upstream_with("health_check_host = \"a b\"\n")),
     "t.toml:8:21: key 'upstream[0].health_check_host': must be \"\" (the server's address) or "
     "a host name with an optional :port, got 'a b'"},
    {"upstream_health_check_host_port_zero",
     cfg(upstream_with("health_check_host = \"api.local:0\"\n")),
     "t.toml:8:21: key 'upstream[0].health_check_host': must be \"\" (the server's address) or "
     "a host name with an optional :port, got 'api.local:0'"},
    {"upstream_health_check_host_port_too_big",
     cfg(upstream_with("health_check_host = \"api.local:65536\"\n")),
     "t.toml:8:21: key 'upstream[0].health_check_host': must be \"\" (the server's address) or "
     "a host name with an optional :port, got 'api.local:65536'"},
    {"upstream_health_check_host_empty_port",
     cfg(upstream_with("health_check_host = \"api.local:\"\n")),
     "t.toml:8:21: key 'upstream[0].health_check_host': must be \"\" (the server's address) or "
     "a host name with an optional :port, got 'api.local:'"},

    // [[upstream.server]]
    {"server_missing_address",
     cfg("[[upstream]]\nname = \"app\"\n[[upstream.server]]\nweight = 2\n"),
     "t.toml:8:1: key 'upstream[0].server[0].address': missing required key"},
    {"server_unknown_key",
     cfg("[[upstream]]\nname = \"app\"\n[[upstream.server]]\naddress = \"10.77.0.2:80\"\n"
         "wieght = 2\n"),
     "t.toml:10:1: key 'upstream[0].server[0].wieght': unknown key (did you mean 'weight'?)"},
    {"server_address_without_port",
     cfg("[[upstream]]\nname = \"app\"\n[[upstream.server]]\naddress = \"10.77.0.2\"\n"),
     "t.toml:9:11: key 'upstream[0].server[0].address': expected a.b.c.d:port or [ipv6]:port, got "
     "'10.77.0.2'"},
    {"server_address_port_zero",
     cfg("[[upstream]]\nname = \"app\"\n[[upstream.server]]\naddress = \"10.77.0.2:0\"\n"),
     "t.toml:9:11: key 'upstream[0].server[0].address': expected a.b.c.d:port or [ipv6]:port, got "
     "'10.77.0.2:0'"},
    {"server_address_port_too_big",
     cfg("[[upstream]]\nname = \"app\"\n[[upstream.server]]\naddress = \"10.77.0.2:65536\"\n"),
     "t.toml:9:11: key 'upstream[0].server[0].address': expected a.b.c.d:port or [ipv6]:port, got "
     "'10.77.0.2:65536'"},
    {"server_address_port_leading_zero",
     cfg("[[upstream]]\nname = \"app\"\n[[upstream.server]]\naddress = \"10.77.0.2:080\"\n"),
     "t.toml:9:11: key 'upstream[0].server[0].address': expected a.b.c.d:port or [ipv6]:port, got "
     "'10.77.0.2:080'"},
    {"server_address_hostname",
     cfg("[[upstream]]\nname = \"app\"\n[[upstream.server]]\naddress = \"backend:80\"\n"),
     "t.toml:9:11: key 'upstream[0].server[0].address': expected a.b.c.d:port or [ipv6]:port, got "
     "'backend:80'"},
    {"server_address_loopback",
     cfg("[[upstream]]\nname = \"app\"\n[[upstream.server]]\naddress = \"127.0.0.1:80\"\n"),
     "t.toml:9:11: key 'upstream[0].server[0].address': 127.0.0.1 is not a usable host address "
     "(127.0.0.0/8 is loopback)"},
    {"server_address_multicast",
     cfg("[[upstream]]\nname = \"app\"\n[[upstream.server]]\naddress = \"224.1.2.3:80\"\n"),
     "t.toml:9:11: key 'upstream[0].server[0].address': 224.1.2.3 is not a usable host address "
     "(224.0.0.0/4 is multicast)"},
    {"server_duplicate",
     cfg(std::string(upstream_app) + "[[upstream.server]]\naddress = \"10.77.0.2:8080\"\n"),
     "t.toml:11:11: key 'upstream[0].server[1].address': duplicate server 10.77.0.2:8080 "
     "(first listed at t.toml:9:11)"},
    {"server_ipv6_without_brackets",
     cfg("[[upstream]]\nname = \"app\"\n[[upstream.server]]\naddress = \"fd00:77::2:80\"\n"),
     "t.toml:9:11: key 'upstream[0].server[0].address': expected a.b.c.d:port or [ipv6]:port, got "
     "'fd00:77::2:80'"},
    {"server_ipv6_without_port",
     cfg("[[upstream]]\nname = \"app\"\n[[upstream.server]]\naddress = \"[fd00:77::2]\"\n"),
     "t.toml:9:11: key 'upstream[0].server[0].address': expected a.b.c.d:port or [ipv6]:port, got "
     "'[fd00:77::2]'"},
    {"server_ipv6_multicast",
     cfg("[[upstream]]\nname = \"app\"\n[[upstream.server]]\naddress = \"[ff02::1]:80\"\n"),
     "t.toml:9:11: key 'upstream[0].server[0].address': ff02::1 is not a usable host address "
     "(ff00::/8 is multicast)"},
    {"server_ipv6_mapped",
     cfg("[[upstream]]\nname = \"app\"\n[[upstream.server]]\naddress = \"[::ffff:a4d:2]:80\"\n"),
     "t.toml:9:11: key 'upstream[0].server[0].address': 10.77.0.2 is not a usable host address "
     "(an IPv4-mapped address: write the IPv4 address)"},
    {"server_ipv6_off_link",
     cfg("[[upstream]]\nname = \"app\"\n[[upstream.server]]\naddress = \"[fd00:77::2]:80\"\n"),
     "t.toml:9:11: key 'upstream[0].server[0].address': server fd00:77::2 is on no port's "
     "address6 prefix and no port has a gateway6 or router_discovery"},
    {"server_unreachable",
     cfg("[[upstream]]\nname = \"app\"\n[[upstream.server]]\naddress = \"10.9.9.9:80\"\n"),
     "t.toml:9:11: key 'upstream[0].server[0].address': server 10.9.9.9 is on no port's subnet "
     "and no port has a gateway"},
    {"server_is_ferry_itself",
     cfg("[[upstream]]\nname = \"app\"\n[[upstream.server]]\naddress = \"10.77.0.1:80\"\n"),
     "t.toml:9:11: key 'upstream[0].server[0].address': server 10.77.0.1 is the address of "
     "port 'tap0' (ferry itself)"},
    {"server_is_network_address",
     cfg("[[upstream]]\nname = \"app\"\n[[upstream.server]]\naddress = \"10.77.0.0:80\"\n"),
     "t.toml:9:11: key 'upstream[0].server[0].address': server 10.77.0.0 is the network "
     "address of 10.77.0.0/24 (port 'tap0')"},
    {"server_is_broadcast_address",
     cfg("[[upstream]]\nname = \"app\"\n[[upstream.server]]\naddress = \"10.77.0.255:80\"\n"),
     "t.toml:9:11: key 'upstream[0].server[0].address': server 10.77.0.255 is the broadcast "
     "address of 10.77.0.0/24 (port 'tap0')"},
    {"server_is_ferry_itself_even_with_gateway",
     "[[port]]\nname = \"tap0\"\nprofile = \"net_tap\"\naddress = \"10.77.0.1/24\"\n"
     "gateway = \"10.77.0.254\"\n" +
         upstream_with("") + "[[upstream.server]]\naddress = \"10.77.0.1:80\"\n",
     "t.toml:11:11: key 'upstream[0].server[1].address': server 10.77.0.1 is the address of "
     "port 'tap0' (ferry itself)"},
    {"server_error_in_second_upstream",
     cfg(std::string(upstream_app) +
         "[[upstream]]\nname = \"api\"\n[[upstream.server]]\naddress = \"10.77.0.3:80\"\n"
         "[[upstream.server]]\naddress = \"10.88.0.3:80\"\n"),
     "t.toml:15:11: key 'upstream[1].server[1].address': server 10.88.0.3 is on no port's "
     "subnet and no port has a gateway"},
    {"server_inline_array_checked",
     cfg("[[upstream]]\nname = \"app\"\nserver = [{ address = \"10.77.0.2:80\", weight = 0 }]\n"),
     "t.toml:8:48: key 'upstream[0].server[0].weight': must be in 1..1000, got 0"},

    // Checks made after the whole file is read report the earliest problem in the file.
    {"reference_errors_in_file_order_route_first",
     cfg(route_with("upstream = \"nope\"\n") + listener_with("default_upstream = \"gone\"\n")),
     "t.toml:7:12: key 'route[0].upstream': unknown upstream 'nope' (there is no [[upstream]] "
     "table)"},
    {"reference_errors_in_file_order_listener_first",
     cfg(listener_with("default_upstream = \"gone\"\n") + route_with("upstream = \"nope\"\n")),
     "t.toml:9:20: key 'listener[0].default_upstream': unknown upstream 'gone' (there is no "
     "[[upstream]] table)"},
    {"servers_checked_against_ports_defined_later",
     "[[upstream]]\nname = \"app\"\n[[upstream.server]]\naddress = \"10.78.0.2:80\"\n" +
         std::string(port_tap0),
     "t.toml:4:11: key 'upstream[0].server[0].address': server 10.78.0.2 is on no port's "
     "subnet and no port has a gateway"},
    // Without any port the port error comes first (the proxy needs one anyway).
    {"proxy_without_ports", std::string(upstream_app) + listener_with(""),
     "t.toml: key 'port': at least one [[port]] table is required"},
};

INSTANTIATE_TEST_SUITE_P(proxy, bad_proxy_config, testing::ValuesIn(bad_cases),
                         [](const auto &info) { return std::string(info.param.name); });

// ---------------------------------------------------------------------------------------
// Integer ranges: both limits accepted and stored, one beyond either rejected, with the
// exact error.

struct range_case {
    const char *name;
    std::string before, after;  // text around "key = value\n" (after port_tap0)
    const char *key;
    const char *table_path;  // key path of the key's table
    uint32_t line;           // the key's line
    int64_t lo, hi;
    uint64_t (*get)(const ferry_config &);
};

void PrintTo(const range_case &c, std::ostream *os) {
    *os << c.name;
}

class proxy_range : public testing::TestWithParam<range_case> {
protected:
    std::string text(int64_t v) const {
        const range_case &c = GetParam();
        return cfg(c.before + c.key + " = " + std::to_string(v) + "\n" + c.after);
    }
    std::string error_for(int64_t v) const {
        const range_case &c = GetParam();
        return "t.toml:" + std::to_string(c.line) + ":" + std::to_string(std::strlen(c.key) + 4) +
               ": key '" + c.table_path + "." + c.key + "': must be in " + std::to_string(c.lo) +
               ".." + std::to_string(c.hi) + ", got " + std::to_string(v);
    }
};

TEST_P(proxy_range, limits_are_inclusive) {
    const range_case &c = GetParam();
    for (int64_t v : {c.lo, c.hi}) {
        auto r = parse(text(v), "t.toml");
        ASSERT_TRUE(r) << r.error().to_string() << "\n" << text(v);
        EXPECT_EQ(c.get(*r), static_cast<uint64_t>(v));
    }
}

TEST_P(proxy_range, one_beyond_either_limit_is_an_error) {
    const range_case &c = GetParam();
    for (int64_t v : {c.lo - 1, c.hi + 1}) {
        auto r = parse(text(v), "t.toml");
        ASSERT_FALSE(r) << text(v);
        EXPECT_EQ(r.error().to_string(), error_for(v));
    }
}

const std::string server_line = "[[upstream.server]]\naddress = \"10.77.0.2:8080\"\n";
const std::string upstream_head = "[[upstream]]\nname = \"app\"\n";

const range_case range_cases[] = {
    {"client_header_timeout_ms", "[http]\n", "", "client_header_timeout_ms", "http", 7, 1, 3600000,
     [](const ferry_config &c) -> uint64_t { return c.http.client_header_timeout_ms; }},
    {"client_idle_timeout_ms", "[http]\n", "", "client_idle_timeout_ms", "http", 7, 1, 3600000,
     [](const ferry_config &c) -> uint64_t { return c.http.client_idle_timeout_ms; }},
    {"client_body_timeout_ms", "[http]\n", "", "client_body_timeout_ms", "http", 7, 1, 3600000,
     [](const ferry_config &c) -> uint64_t { return c.http.client_body_timeout_ms; }},
    {"tunnel_idle_timeout_ms", "[http]\n", "", "tunnel_idle_timeout_ms", "http", 7, 1, 86400000,
     [](const ferry_config &c) -> uint64_t { return c.http.tunnel_idle_timeout_ms; }},
    {"max_pending_heads", "[http]\n", "", "max_pending_heads", "http", 7, 0, 1048576,
     [](const ferry_config &c) -> uint64_t { return c.http.max_pending_heads; }},
    {"client_head_buffers", "[http]\n", "", "client_head_buffers", "http", 7, 0, 4194304,
     [](const ferry_config &c) -> uint64_t { return c.http.client_head_buffers; }},
    {"max_requests_per_connection", "[http]\n", "", "max_requests_per_connection", "http", 7, 0,
     1000000000,
     [](const ferry_config &c) -> uint64_t { return c.http.max_requests_per_connection; }},
    {"max_header_bytes", "[http]\n", "", "max_header_bytes", "http", 7, 256, 65536,
     [](const ferry_config &c) -> uint64_t { return c.http.max_header_bytes; }},
    {"max_headers", "[http]\n", "", "max_headers", "http", 7, 8, 512,
     [](const ferry_config &c) -> uint64_t { return c.http.max_headers; }},
    {"max_body_bytes", "[http]\n", "", "max_body_bytes", "http", 7, 0, int64_t{1} << 62,
     [](const ferry_config &c) -> uint64_t { return c.http.max_body_bytes; }},
    {"drain_timeout_ms", "[http]\n", "", "drain_timeout_ms", "http", 7, 0, 600000,
     [](const ferry_config &c) -> uint64_t { return c.http.drain_timeout_ms; }},
    {"drain_grace_ms", "[http]\n", "", "drain_grace_ms", "http", 7, 0, 600000,
     [](const ferry_config &c) -> uint64_t { return c.http.drain_grace_ms; }},
    {"listener_port", "[[listener]]\nname = \"web\"\n", "", "port", "listener[0]", 8, 1, 65535,
     [](const ferry_config &c) -> uint64_t { return c.listeners[0].port; }},
    {"listener_max_connections", "[[listener]]\nname = \"web\"\nport = 80\n", "", "max_connections",
     "listener[0]", 9, 0, 1048576,
     [](const ferry_config &c) -> uint64_t { return c.listeners[0].max_connections; }},
    {"shared_connections", upstream_head + "pool = \"shared\"\n", server_line, "shared_connections",
     "upstream[0]", 9, 1, 1024,
     [](const ferry_config &c) -> uint64_t { return c.upstreams[0].shared_connections; }},
    {"max_idle", upstream_head, server_line, "max_idle", "upstream[0]", 8, 0, 65535,
     [](const ferry_config &c) -> uint64_t { return c.upstreams[0].max_idle; }},
    {"connect_timeout_ms", upstream_head, server_line, "connect_timeout_ms", "upstream[0]", 8, 1,
     600000, [](const ferry_config &c) -> uint64_t { return c.upstreams[0].connect_timeout_ms; }},
    {"response_timeout_ms", upstream_head, server_line, "response_timeout_ms", "upstream[0]", 8, 1,
     3600000, [](const ferry_config &c) -> uint64_t { return c.upstreams[0].response_timeout_ms; }},
    {"read_timeout_ms", upstream_head, server_line, "read_timeout_ms", "upstream[0]", 8, 1, 3600000,
     [](const ferry_config &c) -> uint64_t { return c.upstreams[0].read_timeout_ms; }},
    {"write_timeout_ms", upstream_head, server_line, "write_timeout_ms", "upstream[0]", 8, 1,
     3600000, [](const ferry_config &c) -> uint64_t { return c.upstreams[0].write_timeout_ms; }},
    {"total_timeout_ms", upstream_head, server_line, "total_timeout_ms", "upstream[0]", 8, 0,
     3600000, [](const ferry_config &c) -> uint64_t { return c.upstreams[0].total_timeout_ms; }},
    {"retries", upstream_head, server_line, "retries", "upstream[0]", 8, 0, 10,
     [](const ferry_config &c) -> uint64_t { return c.upstreams[0].retries; }},
    {"max_fails", upstream_head, server_line, "max_fails", "upstream[0]", 8, 0, 1000,
     [](const ferry_config &c) -> uint64_t { return c.upstreams[0].max_fails; }},
    {"fail_timeout_ms", upstream_head, server_line, "fail_timeout_ms", "upstream[0]", 8, 1, 3600000,
     [](const ferry_config &c) -> uint64_t { return c.upstreams[0].fail_timeout_ms; }},
    {"health_check_interval_ms", upstream_head, server_line, "health_check_interval_ms",
     "upstream[0]", 8, 100, 3600000,
     [](const ferry_config &c) -> uint64_t { return c.upstreams[0].health_check_interval_ms; }},
    {"health_check_timeout_ms", upstream_head, server_line, "health_check_timeout_ms",
     "upstream[0]", 8, 1, 3600000,
     [](const ferry_config &c) -> uint64_t { return c.upstreams[0].health_check_timeout_ms; }},
    {"server_weight", upstream_head + server_line, "", "weight", "upstream[0].server[0]", 10, 1,
     1000, [](const ferry_config &c) -> uint64_t { return c.upstreams[0].servers[0].weight; }},
};

INSTANTIATE_TEST_SUITE_P(proxy, proxy_range, testing::ValuesIn(range_cases),
                         [](const auto &info) { return std::string(info.param.name); });

// ---------------------------------------------------------------------------------------
// Valid configurations.

TEST(proxy_config, full_config_parses_to_expected_values) {
    // Tables in an unusual order on purpose: references resolve whatever comes first.
    auto r = parse(R"([[route]]
listener = "web"
host = "API.Example.com"
path_prefix = "/v1/"
upstream = "api"

[[route]]
host = "*.Example.COM"
upstream = "app"

[[route]]
upstream = "api"

[http]
client_header_timeout_ms = 5000
client_idle_timeout_ms = 30000
client_body_timeout_ms = 20000
max_requests_per_connection = 0
max_header_bytes = 16384
max_headers = 100
max_body_bytes = 1048576
# (one request at a time per client connection; no pipelining queue)
drain_timeout_ms = 0
via = "edge-1.example"
add_x_forwarded = false

[[listener]]
name = "web"
port = 80
max_connections = 5000
default_upstream = "app"

[[listener]]
name = "admin"
port = 8081

[[upstream]]
name = "app"
balance = "least_conn"
pool = "local"
max_idle = 0
connect_timeout_ms = 100
response_timeout_ms = 200
read_timeout_ms = 300
write_timeout_ms = 400
retries = 0
max_fails = 0
fail_timeout_ms = 500
when_all_down = "refuse"
health_check_path = "/healthz?full=1"
health_check_interval_ms = 600
health_check_timeout_ms = 700
health_check_host = "app.internal:8080"
  [[upstream.server]]
  address = "10.77.0.2:8080"
  weight = 3
  [[upstream.server]]
  address = "10.77.0.2:8081"
  [[upstream.server]]
  address = "192.168.7.9:80"

[[upstream]]
name = "api"
balance = "consistent_hash"
hash_key = "uri"
pool = "shared"
shared_connections = 16
server = [{ address = "10.78.0.5:9000", weight = 1000 }]

[[port]]
name = "tap0"
profile = "net_tap"
iface = "ferry0"
address = "10.77.0.1/24"

[[port]]
name = "tap1"
profile = "net_tap"
iface = "ferry1"
address = "10.78.0.1/16"
gateway = "10.78.255.254"
)",
                   "full.toml");
    ASSERT_TRUE(r) << r.error().to_string();
    const ferry_config &c = *r;

    const http_config &h = c.http;
    EXPECT_EQ(h.client_header_timeout_ms, 5000u);
    EXPECT_EQ(h.client_idle_timeout_ms, 30000u);
    EXPECT_EQ(h.client_body_timeout_ms, 20000u);
    EXPECT_EQ(h.max_requests_per_connection, 0u);
    EXPECT_EQ(h.max_header_bytes, 16384u);
    EXPECT_EQ(h.max_headers, 100u);
    EXPECT_EQ(h.max_body_bytes, 1048576u);
    EXPECT_EQ(h.drain_timeout_ms, 0u);
    EXPECT_EQ(h.via, "edge-1.example");
    EXPECT_FALSE(h.add_x_forwarded);

    ASSERT_EQ(c.listeners.size(), 2u);
    const listener_config &web = c.listeners[0];
    EXPECT_EQ(web.name, "web");
    EXPECT_EQ(web.port, 80);
    EXPECT_EQ(web.max_connections, 5000u);
    EXPECT_EQ(web.default_upstream, "app");
    EXPECT_EQ(web.default_upstream_index, 0);
    EXPECT_EQ(web.where.file, "full.toml");
    EXPECT_EQ(web.where.line, 27u);
    EXPECT_EQ(web.where.column, 1u);
    const listener_config &admin = c.listeners[1];
    EXPECT_EQ(admin.name, "admin");
    EXPECT_EQ(admin.port, 8081);
    EXPECT_EQ(admin.max_connections, 0u);
    EXPECT_EQ(admin.default_upstream, "");
    EXPECT_EQ(admin.default_upstream_index, -1);
    EXPECT_EQ(admin.where.line, 33u);

    ASSERT_EQ(c.routes.size(), 3u);
    const route_config &r0 = c.routes[0];
    EXPECT_EQ(r0.listener, "web");
    EXPECT_EQ(r0.listener_index, 0);
    EXPECT_EQ(r0.host, "api.example.com");  // lowercased
    EXPECT_FALSE(r0.host_wildcard);
    EXPECT_EQ(r0.path_prefix, "/v1/");
    EXPECT_EQ(r0.upstream, "api");
    EXPECT_EQ(r0.upstream_index, 1);
    EXPECT_EQ(r0.where.line, 1u);
    const route_config &r1 = c.routes[1];
    EXPECT_EQ(r1.listener, "");
    EXPECT_EQ(r1.listener_index, -1);
    EXPECT_EQ(r1.host, ".example.com");  // "*." -> suffix with its dot, lowercased
    EXPECT_TRUE(r1.host_wildcard);
    EXPECT_EQ(r1.path_prefix, "/");
    EXPECT_EQ(r1.upstream_index, 0);
    EXPECT_EQ(r1.where.line, 7u);
    const route_config &r2 = c.routes[2];
    EXPECT_EQ(r2.host, "");
    EXPECT_FALSE(r2.host_wildcard);
    EXPECT_EQ(r2.upstream_index, 1);

    ASSERT_EQ(c.upstreams.size(), 2u);
    const upstream_config &app = c.upstreams[0];
    EXPECT_EQ(app.name, "app");
    EXPECT_EQ(app.balance, balance_mode::least_conn);
    EXPECT_EQ(app.hash_key, hash_key_kind::client_ip);
    EXPECT_EQ(app.pool, pool_mode::local);
    EXPECT_EQ(app.max_idle, 0u);
    EXPECT_EQ(app.connect_timeout_ms, 100u);
    EXPECT_EQ(app.response_timeout_ms, 200u);
    EXPECT_EQ(app.read_timeout_ms, 300u);
    EXPECT_EQ(app.write_timeout_ms, 400u);
    EXPECT_EQ(app.retries, 0u);
    EXPECT_EQ(app.max_fails, 0u);
    EXPECT_EQ(app.fail_timeout_ms, 500u);
    EXPECT_EQ(app.when_all_down, all_down_mode::refuse);
    EXPECT_TRUE(app.health_checks());
    EXPECT_EQ(app.health_check_path, "/healthz?full=1");
    EXPECT_EQ(app.health_check_interval_ms, 600u);
    EXPECT_EQ(app.health_check_timeout_ms, 700u);
    EXPECT_EQ(app.health_check_host, "app.internal:8080");
    EXPECT_EQ(app.where.line, 37u);
    ASSERT_EQ(app.servers.size(), 3u);
    EXPECT_EQ(app.servers[0].addr, ip_address::v4(0x0a4d0002u));
    EXPECT_EQ(app.servers[0].port, 8080);
    EXPECT_EQ(app.servers[0].weight, 3u);
    EXPECT_EQ(app.servers[0].where.line, 54u);
    EXPECT_EQ(app.servers[0].where.column, 3u);
    EXPECT_EQ(app.servers[1].addr, ip_address::v4(0x0a4d0002u));  // same address, another port
    EXPECT_EQ(app.servers[1].port, 8081);
    EXPECT_EQ(app.servers[1].weight, 1u);
    // Off every subnet, reachable through tap1's gateway.
    EXPECT_EQ(format_endpoint(app.servers[2].addr, app.servers[2].port), "192.168.7.9:80");

    const upstream_config &api = c.upstreams[1];
    EXPECT_EQ(api.balance, balance_mode::consistent_hash);
    EXPECT_EQ(api.hash_key, hash_key_kind::uri);
    EXPECT_EQ(api.pool, pool_mode::shared);
    EXPECT_EQ(api.shared_connections, 16u);
    EXPECT_FALSE(api.health_checks());
    ASSERT_EQ(api.servers.size(), 1u);
    EXPECT_EQ(format_endpoint(api.servers[0].addr, api.servers[0].port), "10.78.0.5:9000");
    EXPECT_EQ(api.servers[0].weight, 1000u);
    EXPECT_EQ(api.where.line, 62u);

    EXPECT_EQ(describe_proxy(c),
              "proxy: 2 listeners, 3 routes, 2 upstreams\n"
              "http: client timeouts header 5000 ms, idle 30000 ms, body 20000 ms, tunnel idle 600000 ms; "
              "max_pending_heads auto, client_head_buffers auto, max_requests_per_connection unlimited, max_header_bytes 16384, max_headers 100, "
              "max_body_bytes 1048576, drain 0 ms, via edge-1.example, "
              "x-forwarded off\n"
              "listener web: port 80 on every port, max_connections 5000 per lcore, default upstream app\n"
              "listener admin: port 8081 on every port, max_connections [tcp] limit, default upstream none "
              "(404)\n"
              "route 0: listener web, host api.example.com, path_prefix /v1/ -> upstream api\n"
              "route 1: listener any, host *.example.com, path_prefix / -> upstream app\n"
              "route 2: listener any, host any, path_prefix / -> upstream api\n"
              "upstream app: balance least_conn, pool local (max_idle 0), timeouts connect 100 "
              "ms, response 200 ms, read 300 ms, write 400 ms, total off; retries 0, max_fails off, when all down refuse, health "
              "checks GET /healthz?full=1 every 600 ms, timeout 700 ms, host app.internal:8080\n"
              "  server 10.77.0.2:8080 weight 3\n"
              "  server 10.77.0.2:8081 weight 1\n"
              "  server 192.168.7.9:80 weight 1\n"
              "upstream api: balance consistent_hash (hash_key uri), pool shared "
              "(shared_connections 16, shared_pick round_robin), timeouts connect 5000 ms, response 60000 ms, read 60000 "
              "ms, write 60000 ms, total off; retries 1, max_fails 3 (down 10000 ms), when all down try, health checks off\n"
              "  server 10.78.0.5:9000 weight 1000\n");
}

TEST(proxy_config, defaults_without_proxy_tables) {
    auto r = parse(port_tap0, "t.toml");
    ASSERT_TRUE(r) << r.error().to_string();
    const http_config &h = r->http;
    EXPECT_EQ(h.client_header_timeout_ms, 10000u);
    EXPECT_EQ(h.client_idle_timeout_ms, 60000u);
    EXPECT_EQ(h.client_body_timeout_ms, 60000u);
    EXPECT_EQ(h.max_requests_per_connection, 1000u);
    EXPECT_EQ(h.max_header_bytes, 8192u);
    EXPECT_EQ(h.max_headers, 64u);
    EXPECT_EQ(h.max_body_bytes, 0u);
    EXPECT_EQ(h.drain_timeout_ms, 10000u);
    EXPECT_EQ(h.drain_grace_ms, 0u);
    EXPECT_EQ(h.via, "ferry");
    EXPECT_TRUE(h.add_x_forwarded);
    EXPECT_TRUE(r->listeners.empty());
    EXPECT_TRUE(r->routes.empty());
    EXPECT_TRUE(r->upstreams.empty());
    EXPECT_EQ(describe_proxy(*r), "proxy: off (no [[listener]])\n");

    // The embedded default proxies port 80 to the demo origin.
    auto d = parse(embedded_default(), embedded_default_name);
    ASSERT_TRUE(d) << d.error().to_string();
    ASSERT_EQ(d->listeners.size(), 1u);
    EXPECT_EQ(d->listeners[0].port, 80);
    EXPECT_EQ(d->listeners[0].default_upstream_index, 0);
    ASSERT_EQ(d->upstreams.size(), 1u);
    ASSERT_EQ(d->upstreams[0].servers.size(), 1u);
    EXPECT_EQ(format_endpoint(d->upstreams[0].servers[0].addr, d->upstreams[0].servers[0].port),
              "10.77.0.2:8080");
}

TEST(proxy_config, defaults_of_a_minimal_proxy) {
    auto r = parse(cfg("[[listener]]\nname = \"web\"\nport = 8080\n" + std::string(upstream_app) +
                       "[[route]]\nupstream = \"app\"\n"),
                   "t.toml");
    ASSERT_TRUE(r) << r.error().to_string();
    ASSERT_EQ(r->listeners.size(), 1u);
    EXPECT_EQ(r->listeners[0].max_connections, 0u);
    EXPECT_EQ(r->listeners[0].default_upstream_index, -1);
    ASSERT_EQ(r->routes.size(), 1u);
    EXPECT_EQ(r->routes[0].listener_index, -1);
    EXPECT_EQ(r->routes[0].host, "");
    EXPECT_EQ(r->routes[0].path_prefix, "/");
    EXPECT_EQ(r->routes[0].upstream_index, 0);
    ASSERT_EQ(r->upstreams.size(), 1u);
    const upstream_config &u = r->upstreams[0];
    EXPECT_EQ(u.balance, balance_mode::round_robin);
    EXPECT_EQ(u.hash_key, hash_key_kind::client_ip);
    EXPECT_EQ(u.pool, pool_mode::local);
    EXPECT_EQ(u.shared_connections, 4u);
    EXPECT_EQ(u.max_idle, 256u);
    EXPECT_EQ(u.connect_timeout_ms, 5000u);
    EXPECT_EQ(u.response_timeout_ms, 60000u);
    EXPECT_EQ(u.read_timeout_ms, 60000u);
    EXPECT_EQ(u.write_timeout_ms, 60000u);
    EXPECT_EQ(u.total_timeout_ms, 0u);
    EXPECT_EQ(u.retries, 1u);
    EXPECT_EQ(u.max_fails, 3u);
    EXPECT_EQ(u.fail_timeout_ms, 10000u);
    EXPECT_EQ(u.when_all_down, all_down_mode::try_anyway);
    EXPECT_EQ(u.health_check_path, "");
    EXPECT_FALSE(u.health_checks());
    EXPECT_EQ(u.health_check_interval_ms, 2000u);
    EXPECT_EQ(u.health_check_timeout_ms, 1000u);
    EXPECT_EQ(u.health_check_host, "");
    ASSERT_EQ(u.servers.size(), 1u);
    EXPECT_EQ(u.servers[0].weight, 1u);
    EXPECT_EQ(u.servers[0].where.line, 11u);

    EXPECT_EQ(describe_proxy(*r),
              "proxy: 1 listener, 1 route, 1 upstream\n"
              "http: client timeouts header 10000 ms, idle 60000 ms, body 60000 ms, tunnel idle 600000 ms; "
              "max_pending_heads auto, client_head_buffers auto, max_requests_per_connection 1000, max_header_bytes 8192, max_headers 64, "
              "max_body_bytes unlimited, drain 10000 ms, via ferry, "
              "x-forwarded on\n"
              "listener web: port 8080 on every port, max_connections [tcp] limit, default upstream none "
              "(404)\n"
              "route 0: listener any, host any, path_prefix / -> upstream app\n"
              "upstream app: balance round_robin, pool local (max_idle 256), timeouts connect "
              "5000 ms, response 60000 ms, read 60000 ms, write 60000 ms, total off; retries 1, max_fails "
              "3 (down 10000 ms), when all down try, health checks off\n"
              "  server 10.77.0.2:8080 weight 1\n");
}

TEST(proxy_config, access_log_keys) {
    // Absent: off, combined.
    auto d = parse(port_tap0, "t.toml");
    ASSERT_TRUE(d) << d.error().to_string();
    EXPECT_EQ(d->http.access_log, "");
    EXPECT_EQ(d->http.access_log_format, log_format::combined);

    struct ok_case {
        std::string lines, path;
        log_format format;
    };
    const ok_case oks[] = {
        {"access_log = \"/var/log/ferry/access.log\"\n", "/var/log/ferry/access.log",
         log_format::combined},
        {"access_log = \"/a\"\naccess_log_format = \"json\"\n", "/a", log_format::json},
        {"access_log_format = \"combined\"\naccess_log = \"/x y/a b.log\"\n", "/x y/a b.log",
         log_format::combined},
        {"access_log = \"\"\n", "", log_format::combined},  // explicitly off
        {"access_log_format = \"json\"\n", "", log_format::json},  // accepted, unused
        {"access_log = \"/" + std::string(4094, 'a') + "\"\n", "/" + std::string(4094, 'a'),
         log_format::combined},  // 4095 bytes: the limit
        {"access_log = \"/caf\\u00e9.log\"\n", "/caf\xc3\xa9.log", log_format::combined},
    };
    for (const ok_case &c : oks) {
        auto r = parse(cfg("[http]\n" + c.lines), "t.toml");
        ASSERT_TRUE(r) << r.error().to_string() << "\n" << c.lines;
        EXPECT_EQ(r->http.access_log, c.path) << c.lines;
        EXPECT_EQ(r->http.access_log_format, c.format) << c.lines;
    }

    EXPECT_EQ(to_string(log_format::combined), "combined");
    EXPECT_EQ(to_string(log_format::json), "json");

    // --check shows it on the http line, only when on.
    auto r = parse(cfg("[http]\naccess_log = \"/var/log/ferry/access.log\"\n"
                       "access_log_format = \"json\"\n[[listener]]\nname = \"web\"\nport = 80\n"),
                   "t.toml");
    ASSERT_TRUE(r) << r.error().to_string();
    EXPECT_NE(describe_proxy(*r).find("x-forwarded on, access_log /var/log/ferry/access.log "
                                      "(json)\n"),
              std::string::npos)
        << describe_proxy(*r);
}

TEST(proxy_config, upstreams_without_listeners_are_described_as_unused) {
    auto r = parse(cfg(upstream_app), "t.toml");
    ASSERT_TRUE(r) << r.error().to_string();
    EXPECT_EQ(describe_proxy(*r), "proxy: off (no [[listener]]); 0 routes and 1 upstream unused\n");
}

TEST(proxy_config, host_forms) {
    struct host_case {
        const char *in, *host;
        bool wildcard;
    };
    for (const host_case &h : {
             host_case{"example.com", "example.com", false},
             host_case{"EXAMPLE.com", "example.com", false},
             host_case{"localhost", "localhost", false}, host_case{"10.77.0.1", "10.77.0.1", false},
             host_case{"my_host-1.internal", "my_host-1.internal", false},
             host_case{"*.example.com", ".example.com", true},
             host_case{"*.Example.COM", ".example.com", true}, host_case{"*.com", ".com", true},
             host_case{"*.*.com", "", false},  // rejected
         }) {
        auto r =
            parse(cfg(route_with("host = \"" + std::string(h.in) + "\"\nupstream = \"app\"\n") +
                      std::string(upstream_app)),
                  "t.toml");
        if (*h.host == '\0') {
            EXPECT_FALSE(r) << h.in;
            continue;
        }
        ASSERT_TRUE(r) << h.in << ": " << r.error().to_string();
        EXPECT_EQ(r->routes[0].host, h.host) << h.in;
        EXPECT_EQ(r->routes[0].host_wildcard, h.wildcard) << h.in;
    }
    // 253 characters is the longest name.
    std::string longest;
    while (longest.size() < 253)
        longest += longest.empty()
                       ? std::string(63, 'a')
                       : "." + std::string(std::min<size_t>(63, 252 - longest.size()), 'b');
    ASSERT_EQ(longest.size(), 253u);
    auto ok = parse(cfg(route_with("host = \"" + longest + "\"\nupstream = \"app\"\n") +
                        std::string(upstream_app)),
                    "t.toml");
    EXPECT_TRUE(ok) << ok.error().to_string();
    auto too_long = parse(cfg(route_with("host = \"" + longest + "b\"\nupstream = \"app\"\n") +
                              std::string(upstream_app)),
                          "t.toml");
    EXPECT_FALSE(too_long);
}

TEST(proxy_config, path_prefix_and_health_check_forms) {
    const std::string longest = "/" + std::string(1023, 'p');
    auto r = parse(cfg(route_with("path_prefix = \"" + longest + "\"\nupstream = \"app\"\n") +
                       upstream_with("health_check_path = \"/" + std::string(1023, 'h') +
                                     "\"\nhealth_check_host = \"api.local\"\n")),
                   "t.toml");
    ASSERT_TRUE(r) << r.error().to_string();
    EXPECT_EQ(r->routes[0].path_prefix, longest);
    EXPECT_EQ(r->upstreams[0].health_check_path.size(), 1024u);
    EXPECT_EQ(r->upstreams[0].health_check_host, "api.local");

    // "" is the default: no checks, the server's address as Host.
    auto e = parse(cfg(upstream_with("health_check_path = \"\"\nhealth_check_host = \"\"\n"
                                     "health_check_interval_ms = 500\n")),
                   "t.toml");
    ASSERT_TRUE(e) << e.error().to_string();
    EXPECT_FALSE(e->upstreams[0].health_checks());
    EXPECT_EQ(e->upstreams[0].health_check_interval_ms, 500u);

    auto port = parse(cfg(upstream_with("health_check_host = \"api.local:65535\"\n")), "t.toml");
    ASSERT_TRUE(port) << port.error().to_string();
    EXPECT_EQ(port->upstreams[0].health_check_host, "api.local:65535");
}

TEST(proxy_config, server_reachability) {
    // A /31 port (RFC 3021): both addresses are hosts, the other one a valid server.
    auto p31 =
        parse("[[port]]\nname = \"p\"\nprofile = \"net_tap\"\naddress = \"192.168.1.2/31\"\n" +
                  upstream_with(""),
              "t.toml");
    ASSERT_FALSE(p31);  // 10.77.0.2 is on no subnet
    auto ok31 = parse(
        "[[port]]\nname = \"p\"\nprofile = \"net_tap\"\naddress = "
        "\"192.168.1.2/31\"\n[[upstream]]\nname = \"a\"\n[[upstream.server]]\n"
        "address = \"192.168.1.3:80\"\n",
        "t.toml");
    ASSERT_TRUE(ok31) << ok31.error().to_string();

    // On the second port's subnet.
    auto second = parse(cfg("[[port]]\nname = \"tap1\"\nprofile = \"net_tap\"\niface = \"ferry1\"\n"
                            "address = \"10.78.0.1/24\"\n[[upstream]]\nname = \"a\"\n"
                            "[[upstream.server]]\naddress = \"10.78.0.200:80\"\n"),
                        "t.toml");
    ASSERT_TRUE(second) << second.error().to_string();

    // A gateway on any port makes every usable address reachable.
    auto gw = parse(
        "[[port]]\nname = \"tap0\"\nprofile = \"net_tap\"\naddress = "
        "\"10.77.0.1/24\"\ngateway = \"10.77.0.254\"\n[[upstream]]\nname = \"a\"\n"
        "[[upstream.server]]\naddress = \"203.0.113.9:443\"\n"
        "[[upstream.server]]\naddress = \"10.77.0.254:80\"\n",
        "t.toml");
    ASSERT_TRUE(gw) << gw.error().to_string();
    EXPECT_EQ(gw->upstreams[0].servers.size(), 2u);
}

TEST(proxy_config, listener_ports_next_to_tcp_test) {
    // Off tcp_test services (port 0) collide with nothing; distinct ports are fine.
    auto r = parse(cfg("[tcp_test]\necho_port = 7\ndiscard_port = 0\n[[listener]]\nname = "
                       "\"web\"\nport = 9\n[[listener]]\nname = \"alt\"\nport = 8080\n"),
                   "t.toml");
    ASSERT_TRUE(r) << r.error().to_string();
    ASSERT_EQ(r->listeners.size(), 2u);
    EXPECT_EQ(r->listeners[1].port, 8080);
}

// Issue 19, item 9: a listener bound to one port; one port number on two
// ports for two listeners.
TEST(proxy_config, listeners_bound_to_a_port) {
    auto r = parse(cfg(R"([[port]]
name = "tap1"
profile = "net_tap"
iface = "ferry1"
address = "10.78.0.1/24"
[[listener]]
name = "public"
port = 80
on = "tap0"
[[listener]]
name = "inside"
port = 80
address = "10.78.0.1"
[[listener]]
name = "both"
port = 81
on = "tap1"
address = "10.78.0.1"
[[listener]]
name = "any"
port = 82
)"),
                   "t.toml");
    ASSERT_TRUE(r) << r.error().to_string();
    ASSERT_EQ(r->listeners.size(), 4u);
    EXPECT_EQ(r->listeners[0].port_index, 0);
    EXPECT_EQ(r->listeners[1].port_index, 1);
    EXPECT_EQ(r->listeners[2].port_index, 1);
    EXPECT_EQ(r->listeners[3].port_index, -1);
    const std::string d = describe_proxy(*r);
    EXPECT_NE(d.find("listener public: port 80 on tap0 (10.77.0.1)"), std::string::npos) << d;
    EXPECT_NE(d.find("listener any: port 82 on every port"), std::string::npos) << d;
    // `on` and `address` naming two ports.
    auto bad = parse(cfg("[[port]]\nname = \"tap1\"\nprofile = \"net_tap\"\niface = \"ferry1\"\n"
                         "address = \"10.78.0.1/24\"\n[[listener]]\nname = \"web\"\nport = 80\n"
                         "on = \"tap0\"\naddress = \"10.78.0.1\"\n"),
                     "t.toml");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().to_string(),
              "t.toml:15:11: key 'listener[0].address': 10.78.0.1 is port 'tap1's address, but "
              "'on' names port 'tap0'");
}

TEST(proxy_config, inline_tables_work_like_arrays_of_tables) {
    auto r = parse(
        "listener = [{ name = \"web\", port = 80, default_upstream = \"app\" }]\n"
        "route = [{ path_prefix = \"/x\", upstream = \"app\" }]\n"
        "upstream = [{ name = \"app\", server = [{ address = \"10.77.0.9:81\" }] }]\n" +
            std::string(port_tap0),
        "t.toml");
    ASSERT_TRUE(r) << r.error().to_string();
    EXPECT_EQ(r->listeners[0].default_upstream_index, 0);
    EXPECT_EQ(r->routes[0].path_prefix, "/x");
    EXPECT_EQ(r->upstreams[0].servers[0].port, 81);
}

TEST(proxy_config, mode_names) {
    EXPECT_EQ(to_string(balance_mode::round_robin), "round_robin");
    EXPECT_EQ(to_string(balance_mode::least_conn), "least_conn");
    EXPECT_EQ(to_string(balance_mode::consistent_hash), "consistent_hash");
    EXPECT_EQ(to_string(hash_key_kind::client_ip), "client_ip");
    EXPECT_EQ(to_string(hash_key_kind::uri), "uri");
    EXPECT_EQ(to_string(hash_key_kind::host), "host");
    EXPECT_EQ(to_string(pool_mode::local), "local");
    EXPECT_EQ(to_string(pool_mode::shared), "shared");
    // Every name parses to its mode.
    for (const char *b : {"round_robin", "least_conn", "consistent_hash"}) {
        auto r = parse(cfg(upstream_with("balance = \"" + std::string(b) + "\"\n")), "t.toml");
        ASSERT_TRUE(r) << r.error().to_string();
        EXPECT_EQ(to_string(r->upstreams[0].balance), b);
    }
    for (const char *k : {"client_ip", "uri", "host"}) {
        auto r = parse(cfg(upstream_with("balance = \"consistent_hash\"\nhash_key = \"" +
                                         std::string(k) + "\"\n")),
                       "t.toml");
        ASSERT_TRUE(r) << r.error().to_string();
        EXPECT_EQ(to_string(r->upstreams[0].hash_key), k);
    }
    auto shared = parse(cfg(upstream_with("pool = \"shared\"\n")), "t.toml");
    ASSERT_TRUE(shared) << shared.error().to_string();
    EXPECT_EQ(shared->upstreams[0].pool, pool_mode::shared);
    EXPECT_EQ(shared->upstreams[0].shared_pick, shared_pick_mode::round_robin);
    for (const char *p : {"round_robin", "own_idle_first"}) {
        auto r = parse(cfg(upstream_with("pool = \"shared\"\nshared_pick = \"" +
                                         std::string(p) + "\"\n")),
                       "t.toml");
        ASSERT_TRUE(r) << r.error().to_string();
        EXPECT_EQ(to_string(r->upstreams[0].shared_pick), p);
    }
}

TEST(proxy_config, ipv6_servers_off_link_need_a_gateway6_or_router_discovery) {
    const std::string port6 = std::string(port_tap0) + "address6 = \"fd00:77::1/64\"\n";
    const std::string server = "[[upstream]]\nname = \"app\"\n[[upstream.server]]\n"
                               "address = \"[2001:db8::5]:80\"\n";
    // Router discovery (on by default) may find a router for it.
    auto rd = parse(port6 + server, "t.toml");
    ASSERT_TRUE(rd) << rd.error().to_string();
    EXPECT_TRUE(rd->ports[0].router_discovery);
    auto off = parse(port6 + "router_discovery = false\n" + server, "t.toml");
    ASSERT_FALSE(off);
    EXPECT_EQ(off.error().to_string(),
              "t.toml:11:11: key 'upstream[0].server[0].address': server 2001:db8::5 is on no "
              "port's address6 prefix and no port has a gateway6 or router_discovery");
    auto c = parse(port6 + "gateway6 = \"fe80::1\"\n" + server, "t.toml");
    ASSERT_TRUE(c) << c.error().to_string();
    EXPECT_EQ(c->ports[0].gateway6, parse_ipv6("fe80::1"));
    for (const auto &[gw, why] : std::vector<std::pair<std::string, std::string>>{
             {"fd00:78::1", "t.toml:7:12: key 'port[0].gateway6': fd00:78::1 is neither on the "
                            "port's prefix fd00:77::1/64 nor link-local"},
             {"fd00:77::1", "t.toml:7:12: key 'port[0].gateway6': fd00:77::1 is the port's own "
                            "address6"},
             {"ff02::2", "t.toml:7:12: key 'port[0].gateway6': ff02::2 is a multicast address"},
             {"10.77.0.254", "t.toml:7:12: key 'port[0].gateway6': expected an IPv6 address, "
                             "e.g. fd00:77::fe, got '10.77.0.254'"}}) {
        auto bad = parse(port6 + "gateway6 = \"" + gw + "\"\n" + server, "t.toml");
        ASSERT_FALSE(bad) << gw;
        EXPECT_EQ(bad.error().to_string(), why);
    }
    auto no6 = parse(std::string(port_tap0) + "gateway6 = \"fe80::1\"\n", "t.toml");
    ASSERT_FALSE(no6);
    EXPECT_EQ(no6.error().to_string(),
              "t.toml:6:12: key 'port[0].gateway6': a gateway6 needs the port's address6");
}

TEST(proxy_config, a_listener_bound_by_a_ports_address6) {
    const std::string port6 = std::string(port_tap0) + "address6 = \"fd00:77::1/64\"\n";
    auto c = parse(port6 + "[[listener]]\nname = \"web\"\nport = 80\naddress = \"fd00:77::1\"\n",
                   "t.toml");
    ASSERT_TRUE(c) << c.error().to_string();
    EXPECT_EQ(c->listeners[0].port_index, 0);
    EXPECT_EQ(c->listeners[0].address6, parse_ipv6("fd00:77::1"));
}

TEST(proxy_config, ipv6_servers_on_a_ports_prefix) {
    const std::string port6 = std::string(port_tap0) + "address6 = \"fd00:77::1/64\"\n";
    auto c = parse(port6 + "[[upstream]]\nname = \"app\"\n[[upstream.server]]\n"
                           "address = \"[fd00:77::2]:8080\"\n[[upstream.server]]\n"
                           "address = \"10.77.0.2:8080\"\n",
                   "t.toml");
    ASSERT_TRUE(c) << c.error().to_string();
    const auto &s = c->upstreams[0].servers;
    ASSERT_EQ(s.size(), 2u);
    EXPECT_TRUE(s[0].addr.is_v6());
    EXPECT_EQ(format_endpoint(s[0].addr, s[0].port), "[fd00:77::2]:8080");
    EXPECT_TRUE(s[1].addr.is_v4());
    auto self = parse(port6 + "[[upstream]]\nname = \"app\"\n[[upstream.server]]\n"
                              "address = \"[fd00:77::1]:80\"\n",
                      "t.toml");
    ASSERT_FALSE(self);
    EXPECT_NE(self.error().to_string().find("is the address6 of port 'tap0' (ferry itself)"),
              std::string::npos)
        << self.error().to_string();
}

TEST(proxy_config, format_endpoint) {
    EXPECT_EQ(format_endpoint(ip_address::v4(0x0a4d0002u), 8080), "10.77.0.2:8080");
    EXPECT_EQ(format_endpoint(ip_address::v4(0xc0a80101u), 65535), "192.168.1.1:65535");
    EXPECT_EQ(format_endpoint(ip_address::v6(*parse_ipv6("fd00:77::2")), 1), "[fd00:77::2]:1");
}

}  // namespace
}  // namespace ferry::config

namespace ferry::config {
namespace {

// Issue 18 item 4: a route's header rules, read, described and refused.
std::string route_rules(std::string_view rules) {
    return cfg(route_with("upstream = \"app\"\n" + std::string(rules)) + std::string(upstream_app) +
               listener_with(""));
}

TEST(proxy_config, header_rules_of_a_route) {
    auto r = parse(route_rules("request_headers.set = { \"X-Env\" = \"prod\" }\n"
                               "request_headers.add = { \"X-Tag\" = \"a b\" }\n"
                               "request_headers.remove = [\"X-Debug\", \"cookie\"]\n"
                               "[route.response_headers]\n"
                               "set = { \"Cache-Control\" = \"no-store\" }\n"
                               "add = { \"Set-Cookie\" = \"k=v\" }\n"
                               "remove = [\"Server\"]\n"),
                   "t.toml");
    ASSERT_TRUE(r) << r.error().to_string();
    const route_config &rt = r->routes[0];
    ASSERT_EQ(rt.request_headers.set.size(), 1u);
    EXPECT_EQ(rt.request_headers.set[0], (std::pair<std::string, std::string>{"X-Env", "prod"}));
    EXPECT_EQ(rt.request_headers.add[0], (std::pair<std::string, std::string>{"X-Tag", "a b"}));
    EXPECT_EQ(rt.request_headers.remove, (std::vector<std::string>{"x-debug", "cookie"}));
    EXPECT_EQ(describe_header_rules(rt.response_headers),
              "set \"Cache-Control: no-store\"; add \"Set-Cookie: k=v\"; remove server");
    EXPECT_NE(describe_proxy(*r).find("\n  request headers: set \"X-Env: prod\"; add \"X-Tag: a "
                                      "b\"; remove x-debug; remove cookie\n"),
              std::string::npos)
        << describe_proxy(*r);
    // Host is the response's to set; add may repeat a name.
    auto ok = parse(route_rules("response_headers.set = { \"Host\" = \"x\" }\n"
                                "response_headers.add = { \"Link\" = \"a\", \"link\" = \"b\" }\n"),
                    "t.toml");
    EXPECT_TRUE(ok) << ok.error().to_string();
}

TEST(proxy_config, header_rules_that_are_refused) {
    struct refused {
        const char *rules, *error;
    };
    for (const refused &c : {
             refused{"request_headers.set = { \"Content-Length\" = \"5\" }\n",
                     "t.toml:8:44: key 'route[0].request_headers.set.Content-Length': "
                     "'Content-Length' cannot be changed by a rule: framing: ferry writes it "
                     "from the message it parsed, so that every hop delimits the body alike"},
             refused{"request_headers.remove = [\"Host\"]\n",
                     "t.toml:8:27: key 'route[0].request_headers.remove[0]': 'Host' cannot be "
                     "changed by a rule: the origin's Host is the client's (or, for an "
                     "absolute-form target, the target's authority)"},
             refused{"response_headers.add = { \"Connection\" = \"close\" }\n",
                     "t.toml:8:41: key 'route[0].response_headers.add.Connection': 'Connection' "
                     "cannot be changed by a rule: hop-by-hop (RFC 9110 §7.6.1): ferry writes "
                     "its own for each connection"},
             refused{"request_headers.set = { \"X-Forwarded-For\" = \"1.2.3.4\" }\n",
                     "t.toml:8:45: key 'route[0].request_headers.set.X-Forwarded-For': "
                     "'X-Forwarded-For' cannot be changed by a rule: ferry writes it ([http] "
                     "add_x_forwarded)"},
             refused{"request_headers.set = { \"Bad Name\" = \"v\" }\n",
                     "t.toml:8:38: key 'route[0].request_headers.set.Bad Name': expected a field "
                     "name (1..64 characters of A-Za-z0-9 and !#$%&'*+-.^_`|~), got 'Bad Name'"},
             refused{"request_headers.set = { \"X-A\" = \"a\\r\\nX-Injected: 1\" }\n",
                     "t.toml:8:33: key 'route[0].request_headers.set.X-A': expected a field "
                     "value (at most 1024 bytes of visible ASCII, spaces and tabs, none at either "
                     "end; no control characters)"},
             refused{"request_headers.set = { \"X-A\" = \"a\" }\n"
                     "request_headers.remove = [\"x-a\"]\n",
                     "t.toml:9:27: key 'route[0].request_headers.remove[0]': 'x-a' already has a "
                     "rule (route[0].request_headers.set.X-A)"},
             refused{"request_headers.sett = { \"X-A\" = \"a\" }\n",
                     "t.toml:8:17: key 'route[0].request_headers.sett': unknown table (did you "
                     "mean 'set'?)"},
         }) {
        auto r = parse(route_rules(c.rules), "t.toml");
        ASSERT_FALSE(r) << c.rules;
        EXPECT_EQ(r.error().to_string(), c.error) << c.rules;
    }
}

}  // namespace
}  // namespace ferry::config

namespace ferry::config {
namespace {

// A route's own upstream timeouts: unset ones inherit the upstream's.
TEST(proxy_config, route_timeouts) {
    auto r = parse(route_rules("response_timeout_ms = 300000\ntotal_timeout_ms = 0\n"), "t.toml");
    ASSERT_TRUE(r) << r.error().to_string();
    const route_config &rt = r->routes[0];
    EXPECT_EQ(rt.response_timeout_ms, 300000u);
    EXPECT_EQ(rt.total_timeout_ms, 0u);
    EXPECT_EQ(rt.connect_timeout_ms, route_config::inherit_timeout);
    EXPECT_TRUE(rt.own_timeouts());
    EXPECT_NE(describe_proxy(*r).find("\n  timeouts (the upstream's otherwise): response 300000 "
                                      "ms, total off\n"),
              std::string::npos)
        << describe_proxy(*r);
    auto bad = parse(route_rules("connect_timeout_ms = 0\n"), "t.toml");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().to_string(),
              "t.toml:8:22: key 'route[0].connect_timeout_ms': must be in 1..600000, got 0");
    auto plain = parse(route_rules(""), "t.toml");
    ASSERT_TRUE(plain);
    EXPECT_FALSE(plain->routes[0].own_timeouts());
}

}  // namespace
}  // namespace ferry::config
