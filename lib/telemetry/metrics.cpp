// Prometheus text exposition (metrics.h). Format: "Exposition formats", text
// format 0.0.4 (prometheus.io/docs/instrumenting/exposition_formats): one
// "# HELP" and one "# TYPE" line per metric family, then every sample of that
// family, contiguous; counters end in _total; label values escape \ " and LF.
#include "ferry/telemetry/metrics.h"

#include <rte_ethdev.h>
#include <rte_mempool.h>
#include <rte_version.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <span>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

#include "ferry/http/parser.h"
#include "ferry/net/packet_io.h"
#include "ferry/proxy/balance.h"
#include "ferry/telemetry/exporter.h"
#include "ferry_build_config.h"
#include "read.h"

namespace ferry::telemetry {

// ---- Text exposition format 0.0.4 ----

void append_escaped(std::string &out, std::string_view text, bool quote) {
    for (char c : text) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '\n')
            out += "\\n";
        else if (c == '"' && quote)
            out += "\\\"";
        else
            out += c;
    }
}

namespace {

void append_uint(std::string &out, uint64_t v) {
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, static_cast<size_t>(r.ptr - buf));
}

// A label set, `{a="x",b="y"}`, held as views and numbers and written straight
// into the exposition: building one allocates nothing. The views must outlive
// the sample (configuration strings, literals). A value is text, a number, an
// IPv4 address with its port ("10.77.0.2:9000"), or a route: its host, path
// prefix and, for a duplicate, "#<position>".
class labels {
public:
    labels &add(std::string_view name, std::string_view value) {
        item &i = next(name);
        i.text = value;
        return *this;
    }
    labels &add(std::string_view name, const char *value) {
        return add(name, std::string_view(value));
    }
    labels &add(std::string_view name, uint64_t value) {
        item &i = next(name);
        i.what = item::k_number;
        i.num = value;
        return *this;
    }
    labels &add(std::string_view name, unsigned value) { return add(name, uint64_t{value}); }
    labels &add_server(std::string_view name, const ip_address &addr, uint16_t port) {
        item &i = next(name);
        i.what = item::k_server;
        i.addr = addr;
        i.port = port;
        return *this;
    }
    labels &add_route(std::string_view name, const config::route_config &r, uint32_t duplicate) {
        item &i = next(name);
        i.what = item::k_route;
        i.route = &r;
        i.num = duplicate;
        return *this;
    }
    // Appends the set ("" when empty).
    void write(std::string &out) const {
        if (n_ == 0) return;
        out += '{';
        for (size_t k = 0; k < n_; ++k) {
            const item &i = items_[k];
            if (k != 0) out += ',';
            out += i.name;
            out += "=\"";
            switch (i.what) {
                case item::k_text:
                    // Label values may hold any UTF-8; \, " and LF are escaped.
                    append_escaped(out, i.text, true);
                    break;
                case item::k_number: append_uint(out, i.num); break;
                case item::k_server: {
                    std::array<char, ip_address::endpoint_text_max> b;
                    out.append(b.data(), i.addr.format_endpoint(i.port, b));
                    break;
                }
                case item::k_route:
                    if (i.route->host_wildcard) out += '*';
                    append_escaped(out, i.route->host, true);
                    append_escaped(out, i.route->path_prefix, true);
                    if (i.num != 0) {
                        out += '#';
                        append_uint(out, i.num);
                    }
                    break;
            }
            out += '"';
        }
        out += '}';
    }

private:
    struct item {
        std::string_view name, text;
        enum kind : uint8_t { k_text, k_number, k_server, k_route } what = k_text;
        uint64_t num = 0;
        uint16_t port = 0;
        ip_address addr;
        const config::route_config *route = nullptr;
    };
    item &next(std::string_view name) {
        // Five at most (lcore, port, upstream, server, le): a sixth would be a bug.
        item &i = items_[n_ < max_items ? n_++ : max_items - 1];
        i = item{};
        i.name = name;
        return i;
    }
    static constexpr size_t max_items = 5;
    item items_[max_items];
    size_t n_ = 0;
};

// Appends families and samples to a buffer the caller keeps between scrapes
// (its capacity stays: a scrape after the first allocates nothing). Callers
// emit each family's samples right after family(), which the format requires;
// names are built from X-macro identifiers and fixed strings, so they match
// [a-zA-Z_:][a-zA-Z0-9_:]*.
class exposition {
public:
    explicit exposition(std::string &out) : out_(out) { out_.clear(); }

    // type: "counter" (the name must end in _total) or "gauge".
    void family(std::string_view name, std::string_view type, std::string_view help) {
        name_len_ = std::min(name.size(), sizeof name_);
        std::copy_n(name.data(), name_len_, name_);
        out_ += "# HELP ";
        out_ += name;
        out_ += ' ';
        // HELP text escapes \ and LF (not ").
        append_escaped(out_, help, false);
        out_ += "\n# TYPE ";
        out_ += name;
        out_ += ' ';
        out_ += type;
        out_ += '\n';
    }
    // "ferry_<group>_<field><suffix>" as the family's name.
    void family(std::string_view group, std::string_view field, std::string_view suffix,
                std::string_view type, std::string_view help) {
        char buf[sizeof name_];
        size_t n = 0;
        for (std::string_view part : {std::string_view("ferry_"), group, std::string_view("_"),
                                      field, suffix}) {
            const size_t k = std::min(part.size(), sizeof buf - n);
            std::copy_n(part.data(), k, buf + n);
            n += k;
        }
        family(std::string_view(buf, n), type, help);
    }
    // A sample of the current family.
    void sample(const labels &l, uint64_t v) { sample_suffixed({}, l, v); }
    void sample_seconds(const labels &l, uint64_t ns) { sample_seconds_suffixed({}, l, ns); }
    // A histogram's series: the family's name with `suffix` (_bucket, _sum, _count).
    void sample_suffixed(std::string_view suffix, const labels &l, uint64_t v) {
        line(l, suffix);
        append_uint(out_, v);
        out_ += '\n';
    }
    void sample_seconds_suffixed(std::string_view suffix, const labels &l, uint64_t ns) {
        line(l, suffix);
        append_uint(out_, ns / 1000000000u);
        out_ += '.';
        char frac[10];
        uint64_t f = ns % 1000000000u;
        for (int i = 8; i >= 0; --i, f /= 10) frac[i] = static_cast<char>('0' + f % 10);
        out_.append(frac, 9);
        out_ += '\n';
    }

private:
    // "<name><suffix><labels> " (the value follows).
    void line(const labels &l, std::string_view suffix) {
        out_.append(name_, name_len_);
        out_ += suffix;
        l.write(out_);
        out_ += ' ';
    }
    std::string &out_;
    char name_[128];
    size_t name_len_ = 0;
};

// Each counter struct's (labels, block) list, kept between scrapes on the
// exporter's thread: cleared, not freed, so a scrape after the first
// allocates nothing.
template <class S>
std::vector<std::pair<labels, const S *>> &blocks_of() {
    static thread_local std::vector<std::pair<labels, const S *>> v;
    v.clear();
    return v;
}

// A counter field whose name is a label value of a family of its own
// (responses_5xx -> ferry_http_responses_total{class="5xx"}), as the
// Prometheus naming guide has it: one family per thing counted, the kinds as
// labels, so sum() and rate() work across them.
struct labelled_split {
    std::string_view prefix;  // of the field names: "responses_"
    std::string_view family;  // "ferry_http_responses_total"
    std::string_view label;   // "class"
    std::string_view help;
    std::string_view except = {};  // a field with the prefix that keeps its own family
};

// One counter family per field of an X-macro table, one sample per block;
// nothing without blocks (a family without samples says nothing). Fields in
// nanoseconds (name ending in _ns) are exported in seconds
// (ferry_reactor_sleep_seconds_total); fields a split names go to its
// labelled family instead.
// Blocks: a range of (labels, const S *) pairs.
template <class Fields, class Blocks>
void counter_group(exposition &e, std::string_view group, const Fields &fields, const Blocks &blocks,
                   std::span<const labelled_split> splits = {}) {
    if (std::empty(blocks))
        return;
    auto in_split = [&](std::string_view name) {
        for (const labelled_split &s : splits)
            if (name.starts_with(s.prefix) && name != s.except) return true;
        return false;
    };
    for (const auto &f : fields) {
        const std::string_view name = f.name;
        if (in_split(name)) continue;
        if (name.ends_with("_ns")) {
            e.family(group, name.substr(0, name.size() - 3), "_seconds_total", "counter", f.help);
            for (const auto &[lbl, b] : blocks) e.sample_seconds(lbl, (b->*(f.member)).get());
            continue;
        }
        e.family(group, name, "_total", "counter", f.help);
        for (const auto &[lbl, b] : blocks)
            e.sample(lbl, (b->*(f.member)).get());
    }
    for (const labelled_split &s : splits) {
        e.family(s.family, "counter", s.help);
        for (const auto &[lbl, b] : blocks)
            for (const auto &f : fields) {
                const std::string_view name = f.name;
                if (!name.starts_with(s.prefix) || name == s.except) continue;
                // The block's labels ({lcore="1"}) with the split's added.
                labels ls = lbl;
                e.sample(ls.add(s.label, name.substr(s.prefix.size())), (b->*(f.member)).get());
            }
    }
}

// The process's start in Unix nanoseconds: /proc/self/stat's starttime
// (clock ticks after boot) plus /proc/stat's btime; 0 if unreadable.
uint64_t process_start_unix_ns() {
    static const uint64_t cached = [] {
        std::ifstream st("/proc/self/stat");
        std::string s((std::istreambuf_iterator<char>(st)), std::istreambuf_iterator<char>());
        const size_t close = s.rfind(')');  // the command name may hold spaces
        if (close == std::string::npos) return uint64_t{0};
        std::istringstream rest(s.substr(close + 2));
        std::string field;
        // Fields 3.. after the name; starttime is field 22.
        for (int i = 3; i < 22 && rest >> field; ++i) {
        }
        unsigned long long ticks = 0;
        if (!(rest >> ticks)) return uint64_t{0};
        std::ifstream stat("/proc/stat");
        std::string line;
        unsigned long long btime = 0;
        while (std::getline(stat, line))
            if (line.rfind("btime ", 0) == 0) btime = std::stoull(line.substr(6));
        const long hz = sysconf(_SC_CLK_TCK);
        if (btime == 0 || hz <= 0) return uint64_t{0};
        return uint64_t{btime} * 1000000000u + uint64_t{ticks} * (1000000000u / uint64_t(hz));
    }();
    return cached;
}

labels lcore_label(const lcore_view &l) {
    return labels().add("lcore", l.lcore);
}
labels lcore_port_label(const lcore_view &l, const net::port &p) {
    return labels().add("lcore", l.lcore).add("port", p.spec.name);
}
labels port_label(const net::port &p) {
    return labels().add("port", p.spec.name);
}

void render_lcores(exposition &e, const process_view &v) {
    auto &rc = blocks_of<reactor::reactor_counters>();
    auto &io = blocks_of<net::io_counters>();
    for (const lcore_view &l : v.lcores) {
        rc.emplace_back(lcore_label(l), l.reactor);
        io.emplace_back(lcore_label(l), l.io);
    }
    counter_group(e, "reactor", reactor::reactor_counter_fields, rc);
    counter_group(e, "io", net::io_counter_fields, io);
    e.family("ferry_lcore_asleep", "gauge",
             "1 while the worker lcore sleeps (or runs its pre-sleep re-check), else 0");
    for (const lcore_view &l : v.lcores)
        e.sample(lcore_label(l), l.loop->asleep() ? 1 : 0);
    e.family("ferry_lcore_can_sleep", "gauge",
             "1 if the worker may sleep when idle (every queue it polls has rx interrupts)");
    for (const lcore_view &l : v.lcores)
        e.sample(lcore_label(l), l.loop->can_sleep() ? 1 : 0);
    e.family("ferry_lcore_spin_window_seconds", "gauge",
             "wakeup_mode adaptive: how long the idle worker spins before it tries to sleep");
    for (const lcore_view &l : v.lcores)
        e.sample_seconds(lcore_label(l), l.loop->spin_window_ns());
    e.family("ferry_lcore_wake_cost_seconds", "gauge",
             "the learned latency of a sleep/wake round trip on this worker");
    for (const lcore_view &l : v.lcores)
        e.sample_seconds(lcore_label(l), l.loop->wake_cost_ns());
    e.family("ferry_lcore_sleep_price_seconds", "gauge",
             "adaptive: what one sleep costs this worker in CPU, its own plus the weighted "
             "latency (latency_weight_pct)");
    for (const lcore_view &l : v.lcores)
        e.sample_seconds(lcore_label(l), l.loop->sleep_price_ns());
}

void render_ports(exposition &e, const process_view &v) {
    if (v.ports.empty())
        return;
    // Kept between scrapes (cleared, not freed), as blocks_of.
    static thread_local std::vector<std::pair<const net::port *, rte_eth_stats>> st;
    st.clear();
    for (const net::port &p : v.ports)
        if (rte_eth_stats get{}; rte_eth_stats_get(p.id, &get) == 0) st.emplace_back(&p, get);
    for (const auto &f : detail::eth_stat_fields) {
        e.family("port", f.name, "_total", "counter", f.help);
        for (const auto &[p, s] : st) e.sample(port_label(*p), s.*(f.member));
    }
    // The kernel's ring counts, only for ports that have such rings (af_packet).
    static thread_local std::vector<std::pair<const net::port *, net::kernel_ring_totals>> rings;
    rings.clear();
    for (const auto &p : v.ports)
        if (p.kernel)
            rings.emplace_back(&p, p.kernel->read());
    if (!rings.empty())
        for (const auto &f : detail::kernel_ring_fields) {
            e.family("port", f.name, "_total", "counter", f.help);
            for (const auto &[p, k] : rings)
                e.sample(port_label(*p), k.*(f.member));
        }
    // net_ferry_packet's queue pairs (packet_io.h), summed per port:
    // ferry_port_packet_*_total, as /ferry/ports' packet_*.
    bool own_packet = false;
    for (const auto &p : v.ports) own_packet = own_packet || !p.packet_queues.empty();
    if (own_packet)
        for (const auto &f : net::packet_counter_fields) {
            e.family("port_packet", f.name, "_total", "counter", f.help);
            for (const auto &p : v.ports)
                if (!p.packet_queues.empty()) e.sample(port_label(p), detail::packet_total(p, f));
        }
    e.family("ferry_port_mbufs", "gauge", "mbufs in the port's pool ([[port]] mbufs)");
    for (const auto &p : v.ports)
        e.sample(port_label(p), p.spec.mbufs);
    e.family("ferry_port_mbufs_available", "gauge", "mbufs of the port's pool free now");
    for (const auto &p : v.ports)
        e.sample(port_label(p), rte_mempool_avail_count(p.pool));
    e.family("ferry_port_mbufs_in_use", "gauge",
             "mbufs of the port's pool in use now (queues, connections, in flight)");
    for (const auto &p : v.ports)
        e.sample(port_label(p), rte_mempool_in_use_count(p.pool));
}

void render_stack(exposition &e, const process_view &v) {
    auto &nc = blocks_of<net::net_counters>();
    auto &tc = blocks_of<net::tcp_counters>();
    auto &fc = blocks_of<net::fault_counters>();
    for (const lcore_view &l : v.lcores)
        for (size_t i = 0; i < v.ports.size() && i < l.ports.size(); ++i) {
            const labels lbl = lcore_port_label(l, v.ports[i]);
            nc.emplace_back(lbl, l.ports[i].net);
            if (l.ports[i].tcp != nullptr)
                tc.emplace_back(lbl, l.ports[i].tcp);
            if (l.ports[i].fault != nullptr)
                fc.emplace_back(lbl, l.ports[i].fault);
        }
    counter_group(e, "net", net::net_counter_fields, nc);
    counter_group(e, "tcp", net::tcp_counter_fields, tc);
    // The TCP queues' ring blocks (tcp_block_pool.h).
    struct block_family {
        const char *name, *type, *help;
        uint64_t (*get)(const net::tcp_block_pool &);
    };
    static constexpr block_family block_families[] = {
        {"ferry_tcp_ring_blocks", "gauge", "ring blocks the TCP layer's pool holds (4 per connection slot)",
         [](const net::tcp_block_pool &b) -> uint64_t { return b.capacity(); }},
        {"ferry_tcp_ring_blocks_in_use", "gauge",
         "ring blocks held now by connections with data queued",
         [](const net::tcp_block_pool &b) -> uint64_t { return b.in_use(); }},
        {"ferry_tcp_ring_blocks_touched", "gauge",
         "ring blocks ever handed out (made resident, 4 KiB each)",
         [](const net::tcp_block_pool &b) -> uint64_t { return b.touched(); }},
        {"ferry_tcp_ring_blocks_exhausted_total", "counter",
         "ring block requests that found the pool empty",
         [](const net::tcp_block_pool &b) -> uint64_t { return b.exhausted(); }},
    };
    bool any_blocks = false;
    for (const lcore_view &l : v.lcores)
        for (const lcore_port_view &p : l.ports) any_blocks = any_blocks || p.blocks != nullptr;
    for (const block_family &f : block_families) {
        if (!any_blocks) break;  // no TCP layer: no family without samples
        e.family(f.name, f.type, f.help);
        for (const lcore_view &l : v.lcores)
            for (size_t i = 0; i < v.ports.size() && i < l.ports.size(); ++i)
                if (l.ports[i].blocks != nullptr)
                    e.sample(lcore_port_label(l, v.ports[i]), f.get(*l.ports[i].blocks));
    }
    // Only with [port.fault] on some port: a test setting.
    counter_group(e, "fault", net::fault_counter_fields, fc);
}

void render_http(exposition &e, const process_view &v) {
    auto &hc = blocks_of<proxy::http_counters>();
    for (const lcore_view &l : v.lcores)
        if (l.proxy != nullptr)
            hc.emplace_back(lcore_label(l), &l.proxy->counters());
    if (hc.empty())
        return;  // no [[listener]]: no proxy
    static constexpr labelled_split http_splits[] = {
        {"responses_", "ferry_http_responses_total", "class",
         "responses sent to clients, by status class (generated ones included)"},
        {"generated_", "ferry_http_generated_responses_total", "code",
         "error responses ferry generated, by status code (/ferry/http generated_<code>)"},
        // timeouts_upstream is the sum of the five upstream kinds: its own family,
        // so that sum(ferry_http_timeouts_total) counts each timeout once.
        {"timeouts_", "ferry_http_timeouts_total", "kind",
         "requests and connections ended by a timeout, by kind (header, idle, body: client "
         "side; connect, write, response, read, total: upstream side; /ferry/http "
         "timeouts_<kind>)",
         "timeouts_upstream"},
    };
    counter_group(e, "http", proxy::http_counter_fields, hc, http_splits);
    e.family("ferry_http_rejected_total", "counter",
             "requests rejected by the parser, by reason (answered 400/413/414/431/501/505 "
             "and closed)");
    for (const lcore_view &l : v.lcores) {
        if (l.proxy == nullptr)
            continue;
        const proxy::http_counters &c = l.proxy->counters();
        for (uint8_t r = 1; r < 64; ++r) {
            const std::string_view n = http::name(static_cast<http::parse_error>(r));
            if (n == "unknown")
                break;
            e.sample(labels().add("lcore", l.lcore).add("reason", n), c.rejected_by_reason[r].get());
        }
    }
    e.family("ferry_http_active_connections", "gauge",
             "client connections open now (accepted minus closed)");
    for (const auto &[lbl, c] : hc)
        e.sample(lbl, detail::active_connections(*c));
    // The head buffers (worker_proxy::head_buffers()).
    e.family("ferry_http_head_buffers_in_use", "gauge",
             "head buffers held now (heads being read, bytes waiting)");
    for (const lcore_view &l : v.lcores)
        if (l.proxy != nullptr) e.sample(lcore_label(l), l.proxy->head_buffers().in_use());
    e.family("ferry_http_configurations_held", "gauge",
             "configurations kept: the one in force and replaced ones requests in flight began under");
    for (const lcore_view &l : v.lcores)
        if (l.proxy != nullptr) e.sample(lcore_label(l), l.proxy->configurations_held());
    e.family("ferry_http_head_buffers_touched", "gauge",
             "head buffers ever handed out (made resident)");
    for (const lcore_view &l : v.lcores)
        if (l.proxy != nullptr) e.sample(lcore_label(l), l.proxy->head_buffers().touched());
}

// A latency histogram summed over the lcores.
struct histogram_sums {
    uint64_t in_bucket[proxy::latency_histogram::buckets] = {};
    uint64_t sum_ns = 0;
    void add(const proxy::latency_histogram &h) {
        for (size_t i = 0; i < proxy::latency_histogram::buckets; ++i)
            in_bucket[i] += h.in_bucket[i].get();
        sum_ns += h.sum_ns.get();
    }
};

// A bucket's upper bound as le says it ("0.0005", ..., "+Inf"), formatted once.
std::string_view bucket_le(size_t i) {
    static const auto names = [] {
        std::array<std::array<char, 24>, proxy::latency_histogram::buckets> n{};
        for (size_t k = 0; k < n.size(); ++k) {
            if (k < std::size(proxy::latency_bucket_ns))
                std::snprintf(n[k].data(), n[k].size(), "%g",
                              static_cast<double>(proxy::latency_bucket_ns[k]) / 1e9);
            else
                std::snprintf(n[k].data(), n[k].size(), "+Inf");
        }
        return n;
    }();
    return names[i].data();
}

// One label set's series of a histogram family (text format 0.0.4): the
// buckets cumulative, le from 0.0005 to +Inf; _sum in seconds; _count, the
// +Inf bucket's count.
void histogram_samples(exposition &e, const labels &base, const histogram_sums &h) {
    uint64_t cum = 0;
    for (size_t i = 0; i < proxy::latency_histogram::buckets; ++i) {
        cum += h.in_bucket[i];
        labels l = base;
        e.sample_suffixed("_bucket", l.add("le", bucket_le(i)), cum);
    }
    e.sample_seconds_suffixed("_sum", base, h.sum_ns);
    e.sample_suffixed("_count", base, cum);
}

void render_request_latency(exposition &e, const process_view &v) {
    histogram_sums h;
    bool any = false;
    for (const lcore_view &l : v.lcores)
        if (l.proxy != nullptr) {
            h.add(l.proxy->request_latency());
            any = true;
        }
    if (!any)
        return;
    e.family("ferry_http_request_duration_seconds", "histogram",
             "parsed requests, from the head's first byte to the end of the response (or of "
             "the exchange, when cut or refused), all lcores");
    histogram_samples(e, labels(), h);
}

// Whether some lcore runs the HTTP proxy (a [[listener]] is configured).
bool has_proxy(const process_view &v) {
    for (const lcore_view &l : v.lcores)
        if (l.proxy != nullptr) return true;
    return false;
}

void render_route_responses(exposition &e, const process_view &v) {
    if (!has_proxy(v)) return;
    const auto cfg = v.configuration();  // held while read
    const auto &ls = cfg->listeners;
    const auto &rs = cfg->routes;
    e.family("ferry_http_route_responses_total", "counter",
             "parsed requests by listener, route and the status class of their answer "
             "(generated ones and 499/444 for those cut short included), all lcores");
    static constexpr const char *classes[] = {"1xx", "2xx", "3xx", "4xx", "5xx"};
    // The route label: its host (a wildcard as "*.example.com") and path
    // prefix, "api.example.com/v1/"; "default" for the listener's
    // default_upstream, "none" for requests no route took (404, or refused
    // before routing).
    auto emit = [&](size_t li, int route, const labels &base) {
        for (unsigned cls = 1; cls <= 5; ++cls) {
            uint64_t n = 0;
            for (const lcore_view &l : v.lcores)
                if (l.proxy != nullptr) n += l.proxy->route_responses(ls[li].slot, route, cls);
            labels ls_ = base;
            e.sample(ls_.add("class", classes[cls - 1]), n);
        }
    };
    auto on = [&](size_t ri, size_t li) {
        return rs[ri].listener_index < 0 || static_cast<size_t>(rs[ri].listener_index) == li;
    };
    for (size_t li = 0; li < ls.size(); ++li) {
        for (size_t ri = 0; ri < rs.size(); ++ri) {
            if (!on(ri, li)) continue;
            // A second route with the same host and prefix (never taken: the
            // first matches) keeps its series apart by its position.
            bool dup = false;
            for (size_t rj = 0; rj < ri && !dup; ++rj)
                dup = on(rj, li) && rs[rj].host_wildcard == rs[ri].host_wildcard &&
                      rs[rj].host == rs[ri].host && rs[rj].path_prefix == rs[ri].path_prefix;
            emit(li, static_cast<int>(ri),
                 labels()
                     .add("listener", ls[li].name)
                     .add_route("route", rs[ri], dup ? static_cast<uint32_t>(ri + 1) : 0));
        }
        if (ls[li].default_upstream_index >= 0)
            emit(li, proxy::route_default, labels().add("listener", ls[li].name).add("route", "default"));
        emit(li, proxy::route_none, labels().add("listener", ls[li].name).add("route", "none"));
    }
}

void render_listeners(exposition &e, const process_view &v) {
    if (!has_proxy(v)) return;
    const auto cfg = v.configuration();
    const auto &ls = cfg->listeners;
    struct fam {
        const char *name, *type, *help;
        uint64_t (proxy::worker_proxy::*get)(size_t) const noexcept;
    };
    static constexpr fam fams[] = {
        {"ferry_http_listener_connections_total", "counter",
         "client connections accepted on the listener, all lcores",
         &proxy::worker_proxy::listener_accepted},
        {"ferry_http_listener_refused_total", "counter",
         "client connections reset because the listener's max_connections (per lcore) was "
         "reached, all lcores",
         &proxy::worker_proxy::listener_refused},
        {"ferry_http_listener_active_connections", "gauge",
         "client connections open now on the listener, all lcores",
         &proxy::worker_proxy::listener_active},
    };
    for (const fam &f : fams) {
        e.family(f.name, f.type, f.help);
        for (size_t li = 0; li < ls.size(); ++li) {
            uint64_t n = 0;
            for (const lcore_view &l : v.lcores)
                if (l.proxy != nullptr) n += (l.proxy->*f.get)(ls[li].slot);
            e.sample(labels().add("listener", ls[li].name), n);
        }
    }
}

void render_upstreams(exposition &e, const process_view &v) {
    if (v.proxy_shared == nullptr)
        return;
    const auto cfg = v.configuration();
    const auto &ups = cfg->upstreams;
    struct srv {
        labels lbl;
        size_t u, s, slot;  // upstream, server index, its slot (health, counters)
        detail::server_totals t;
    };
    static thread_local std::vector<srv> all;  // kept between scrapes, as blocks_of
    all.clear();
    for (size_t u = 0; u < ups.size(); ++u)
        for (size_t s = 0; s < ups[u].servers.size(); ++s) {
            const auto &sv = ups[u].servers[s];
            all.push_back({labels().add("upstream", ups[u].name).add_server("server", sv.addr, sv.port),
                           u, s, sv.slot, detail::sum_server(v, u, sv.slot)});
        }
    if (all.empty())
        return;
    const uint64_t now = reactor::reactor::now_ns();  // the clock of down_until
    e.family("ferry_upstream_server_up", "gauge",
             "1 if the server is up, 0 while health checks hold it down");
    for (const auto &x : all)
        e.sample(x.lbl, detail::server_down(v.proxy_shared->health[x.u][x.slot], now) ? 0 : 1);
    e.family("ferry_upstream_server_weight", "gauge",
             "the server's weight: the configured one unless /ferry/server set another");
    for (const auto &x : all) {
        const uint32_t w = v.proxy_shared->health[x.u][x.slot].weight.load(std::memory_order_relaxed);
        e.sample(x.lbl, w != 0 ? w : ups[x.u].servers[x.s].weight);
    }
    e.family("ferry_upstream_server_ready", "gauge",
             "1 if the operator's state is ready, 0 for drain or maint (/ferry/server)");
    for (const auto &x : all)
        e.sample(x.lbl, v.proxy_shared->health[x.u][x.slot].admin.load(std::memory_order_relaxed) ==
                                proxy::server_admin::ready
                            ? 1
                            : 0);
    e.family("ferry_upstream_admin_changes_total", "counter",
             "the server's state and weight changes through /ferry/server");
    for (const auto &x : all)
        e.sample(x.lbl,
                 v.proxy_shared->health[x.u][x.slot].admin_changes.load(std::memory_order_relaxed));
    e.family("ferry_upstream_marked_down_total", "counter", "times the server was marked down");
    for (const auto &x : all)
        e.sample(x.lbl,
                 v.proxy_shared->health[x.u][x.slot].marked_down.load(std::memory_order_relaxed));
    struct field {
        const char *name, *type, *help;
        uint64_t detail::server_totals::*member;
    };
    static constexpr field fields[] = {
        {"ferry_upstream_requests_total", "counter", "requests sent to the server",
         &detail::server_totals::requests},
        {"ferry_upstream_failures_total", "counter",
         "connect and response failures counted for passive health",
         &detail::server_totals::failures},
        {"ferry_upstream_connections_total", "counter", "connections opened to the server",
         &detail::server_totals::connections},
        {"ferry_upstream_responses_total", "counter",
         "response heads received from the server (the latency samples)",
         &detail::server_totals::responses},
        {"ferry_upstream_active_connections", "gauge",
         "connections to the server busy with a request now", &detail::server_totals::active},
        {"ferry_upstream_idle_connections", "gauge",
         "idle keep-alive connections to the server now", &detail::server_totals::idle},
    };
    for (const auto &f : fields) {
        e.family(f.name, f.type, f.help);
        for (const auto &x : all)
            e.sample(x.lbl, x.t.*(f.member));
    }
    e.family("ferry_upstream_latency_seconds_total", "counter",
             "sum of request-sent to response-head times; divide by "
             "ferry_upstream_responses_total for the mean");
    for (const auto &x : all)
        e.sample_seconds(x.lbl, x.t.latency_ns);
    e.family("ferry_upstream_response_seconds", "histogram",
             "request sent to response head, per server, all lcores");
    for (const auto &x : all) {
        histogram_sums h;
        for (const lcore_view &l : v.lcores)
            if (l.proxy != nullptr) h.add(l.proxy->server(x.u, x.slot).latency);
        histogram_samples(e, x.lbl, h);
    }
}

void render_rings(exposition &e, const process_view &v) {
    static thread_local std::vector<detail::ring_snapshot> all;  // kept, as blocks_of
    detail::rings(v, all);
    if (all.empty())
        return;  // one worker: no rings
    static thread_local std::vector<labels> lbl;
    lbl.clear();
    for (const auto &r : all) lbl.push_back(labels().add("from", r.from->lcore).add("to", r.to->lcore));
    e.family("ferry_ring_depth", "gauge", "messages in the cross-core ring from -> to now");
    for (size_t i = 0; i < all.size(); ++i)
        e.sample(lbl[i], all[i].depth);
    e.family("ferry_ring_capacity", "gauge", "messages the cross-core ring holds at most");
    for (size_t i = 0; i < all.size(); ++i)
        e.sample(lbl[i], all[i].capacity);
    e.family("ferry_ring_high_water", "gauge",
             "the deepest the ring was right after one of the producer's enqueue bursts");
    for (size_t i = 0; i < all.size(); ++i)
        e.sample(lbl[i], all[i].lane.high_water);
    e.family("ferry_ring_full_total", "counter",
             "enqueue bursts into this ring that left messages behind (backpressure)");
    for (size_t i = 0; i < all.size(); ++i)
        e.sample(lbl[i], all[i].lane.ring_full);
}

// The exporter's own counters (no labels: there is one exporter).
void render_exporter(exposition &e, const process_view &v) {
    if (v.exporter == nullptr)
        return;  // no [admin] metrics_address
    const std::pair<labels, const exporter_counters *> one[] = {{labels(), v.exporter}};
    counter_group(e, "exporter", exporter_counter_fields, one);
}

// The event log's counters (no labels: one writer).
void render_events(exposition &e, const process_view &v) {
    if (v.proxy_shared == nullptr)
        return;  // no [[listener]]: no proxy
    const std::pair<labels, const proxy::event_log_counters *> one[] = {
        {labels(), &v.proxy_shared->events}};
    counter_group(e, "events", proxy::event_log_counter_fields, one);
}

// Configuration reloads (SIGHUP, /ferry/reload), by result.
void render_reloads(exposition &e, const process_view &v) {
    if (v.reloads == nullptr) return;
    const reload_counters &r = *v.reloads;
    e.family("ferry_config_reloads_total", "counter",
             "configuration reloads (SIGHUP, /ferry/reload) by result: applied, unchanged, "
             "refused (needs a restart), invalid (did not parse or validate)");
    e.sample(labels().add("result", "applied"), r.applied.load(std::memory_order_relaxed));
    e.sample(labels().add("result", "unchanged"), r.unchanged.load(std::memory_order_relaxed));
    e.sample(labels().add("result", "refused"), r.refused.load(std::memory_order_relaxed));
    e.sample(labels().add("result", "invalid"), r.invalid.load(std::memory_order_relaxed));
    e.family("ferry_config_generation", "gauge",
             "reloads applied since start: the configuration in force (0: the one ferry started "
             "with)");
    e.sample(labels(), r.generation.load(std::memory_order_relaxed));
    if (const uint64_t at = r.last_unix_ns.load(std::memory_order_relaxed); at != 0) {
        e.family("ferry_config_last_reload_seconds", "gauge",
                 "when the last reload ended, in seconds since the Unix epoch");
        e.sample_seconds(labels(), at);
    }
}

}  // namespace

void render_metrics(const process_view &v, std::string &out) {
    exposition e(out);
    e.family("ferry_build_info", "gauge", "always 1; the labels say which ferry and DPDK run");
    e.sample(labels().add("version", FERRY_VERSION).add("dpdk", rte_version()), 1);
    e.family("ferry_workers", "gauge", "worker lcores");
    e.sample(labels(), v.lcores.size());
    if (const uint64_t start = process_start_unix_ns(); start != 0) {
        e.family("ferry_start_time_seconds", "gauge",
                 "when ferry started, in seconds since the Unix epoch (uptime: time() - this)");
        e.sample_seconds(labels(), start);
    }
    render_lcores(e, v);
    render_ports(e, v);
    render_stack(e, v);
    render_http(e, v);
    render_request_latency(e, v);
    render_route_responses(e, v);
    render_listeners(e, v);
    render_upstreams(e, v);
    render_rings(e, v);
    render_exporter(e, v);
    render_events(e, v);
    render_reloads(e, v);
    const resident r = read_resident();
    e.family("ferry_memory_resident_bytes", "gauge", "resident memory (VmRSS)");
    e.sample(labels(), r.now);
    e.family("ferry_memory_resident_peak_bytes", "gauge", "peak resident memory (VmHWM)");
    e.sample(labels(), r.peak);
    e.family("ferry_memory_bound_bytes", "gauge",
             "the most resident memory ferry can take with its configuration (/ferry/memory)");
    e.sample(labels(), v.memory.bound);
}

std::string render_metrics(const process_view &v) {
    std::string out;
    render_metrics(v, out);
    return out;
}

}  // namespace ferry::telemetry
