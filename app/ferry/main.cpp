// ferry: EAL init, CLI, configuration, port bring-up, lcore launch, signals.
// No protocol code lives here (DESIGN.md, "Layers").
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_version.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>

#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "access_log.h"
#include "event_log.h"
#include "app.h"
#include "cli.h"
#include "log_stream.h"
#include "preflight.h"
#include "ferry/base/log.h"
#include "ferry/base/logfmt.h"
#include "ferry/telemetry/commands.h"
#include "ferry/telemetry/exporter.h"
#include "ferry_build_config.h"
#include "check_running.h"
#include "memory.h"

RTE_LOG_REGISTER(ferry_logtype_app, ferry.app, INFO);

#define APP_LOG(level, fmt, ...) FERRY_LOG(level, ferry_logtype_app, "app", fmt, __VA_ARGS__)

namespace ferry::app {

reactor::stop_request stop_requested;

static_assert(int(config::wakeup_mode::conditional) == int(reactor::wakeup_mode::conditional) &&
              int(config::wakeup_mode::always) == int(reactor::wakeup_mode::always) &&
              int(config::wakeup_mode::poll) == int(reactor::wakeup_mode::poll) &&
              int(config::wakeup_mode::adaptive) == int(reactor::wakeup_mode::adaptive));
app_state *the_app = nullptr;

namespace {

// Async-signal-safe: the flag, then every watched worker's doorbell (see
// stop_request.h for the lost stop it prevents).
void on_stop_signal(int) { stop_requested.request(); }
// SIGHUP reopens the access log (logrotate) when there is one, and reloads
// the configuration (reload.h; the reload thread does the work). Never the
// default action, which would end ferry and drop every connection.
bool hup_reopens_log = false;
void on_hup(int) {
    if (hup_reopens_log) access_log_writer::request_reopen();
    if (the_app != nullptr) the_app->reload.request_from_signal();
}
void ignore_signal(int) {}

// net_tap arms O_ASYNC on its queue fds with the first still-default realtime
// signal and then reads a queue only after that signal was handled by some
// thread: rx wakeups get lost in interrupt mode, blocking syscalls of other
// threads see EINTR, and rx is ~10x slower (TESTBED.md). Giving every
// realtime signal a no-op handler before rte_eal_init makes the PMD find none
// free ("All rt-signals are in use"), so it never arms O_ASYNC and always reads.
// SIGRTMIN and SIGRTMAX themselves are left alone for the C library's use.
void claim_realtime_signals() {
    for (int sig = SIGRTMIN + 1; sig < SIGRTMAX; ++sig) {
        struct sigaction old {};
        if (sigaction(sig, nullptr, &old) != 0) continue;
        if (old.sa_handler != SIG_DFL) continue;
        struct sigaction sa {};
        sa.sa_handler = ignore_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART;
        (void)sigaction(sig, &sa, nullptr);
    }
}

// SIGINT/SIGTERM (and SIGHUP) are blocked before rte_eal_init so that every
// thread DPDK creates (lcores, interrupt and telemetry threads) inherits the
// mask and only the main thread ever takes them: no EINTR in other threads.
void block_stop_signals(sigset_t *set) {
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, set, nullptr);
}

// SIGHUP reloads the configuration, and with an access log reopens it too.
void install_stop_handlers(const sigset_t *set, bool reopen_on_hup) {
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    hup_reopens_log = reopen_on_hup;
    sa.sa_handler = on_hup;
    sigaction(SIGHUP, &sa, nullptr);
    pthread_sigmask(SIG_UNBLOCK, set, nullptr);
}

// A 128-bit key from the kernel's random source (RFC 6528 §3, RFC 4987 §3.6).
net::siphash_key random_key() {
    uint8_t b[16] = {};
    size_t got = 0;
    while (got < sizeof b) {
        const ssize_t n = getrandom(b + got, sizeof b - got, 0);
        if (n <= 0)
            break;  // only EINTR-like failures; the key is then partly zero
        got += static_cast<size_t>(n);
    }
    return net::siphash_key::from_bytes(std::span<const uint8_t, 16>(b, 16));
}

// The TCP layer of one (lcore, port), and the [tcp_test] services on it.
void add_tcp(worker &w, const config::ferry_config &cfg, const net::port &p, net::stack &st,
             net::net_counters &nc) {
    net::tcp_layer_config tc;
    tc.max_connections = cfg.tcp.max_connections;
    tc.syn_backlog = cfg.tcp.syn_backlog;
    tc.syn_cookies = cfg.tcp.syn_cookies;
    // Software checksums unless asked for and enabled on the port; ferry's own
    // AF_PACKET path always leaves them to the kernel (packet_io.h: its GSO
    // frames need it, and the kernel sums a frame's bytes at most once).
    const bool own_packet = p.driver_name == net::own_packet_driver;
    tc.tx_cksum_offload = (cfg.tcp.tx_checksum_offload || own_packet) &&
                          (p.tx_offloads & RTE_ETH_TX_OFFLOAD_TCP_CKSUM) != 0;
    if (cfg.tcp.tx_checksum_offload && !tc.tx_cksum_offload)
        APP_LOG(WARNING, "%s",
                logfmt("tcp checksums in software")
                    .kv("port", p.spec.name)
                    .kv("cause", "tcp.tx_checksum_offload set but the port has no tcp_cksum tx "
                                 "offload")
                    .c_str());
    tc.tx_chains = (p.tx_offloads & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) != 0;
    // RFC 9293 §3.7.1: MSS = MTU - 20 (IPv4) - 20 (TCP).
    tc.conn.mss = static_cast<uint16_t>(p.spec.mtu - 40);
    tc.conn.time_wait_ns = uint64_t(cfg.tcp.time_wait_ms) * 1'000'000u;
    tc.active_keepalive_ns = uint64_t(cfg.tcp.upstream_keepalive_ms) * 1'000'000u;
    tc.conn.rack = cfg.tcp.rack;
    tc.conn.prr = cfg.tcp.prr;
    tc.conn.frto = cfg.tcp.frto;
    tc.conn.dsack = cfg.tcp.dsack;
    tc.conn.tlp_new_data = cfg.tcp.tlp_new_data;
    tc.conn.cc.algorithm = cfg.tcp.congestion_control == "bbr"        ? net::cc_algorithm::bbr
                           : cfg.tcp.congestion_control == "new_reno" ? net::cc_algorithm::new_reno
                                                                      : net::cc_algorithm::cubic;
    // What a loop iteration queues on a connection goes out at its end
    // (worker.cpp flush_tx): fewer, fuller segments, ACKs on the answers.
    tc.conn.defer_output = true;
    tc.isn_key = random_key();
    // One cookie key pair for the process: a cookie ACK may come back on
    // another lcore's queue than the SYN did.
    static const net::siphash_key cookie_k0 = random_key(), cookie_k1 = random_key();
    tc.cookie_key0 = cookie_k0;
    tc.cookie_key1 = cookie_k1;
    tc.shared_port = p.queues > 1;
    // Flow ownership: queue w.index of p.queues; segments of other queues'
    // flows go to their owner over the cross-core rings.
    tc.queue = w.index;
    tc.nqueues = p.queues;
    auto &link = w.links.emplace_back(std::make_unique<port_link>());
    link->w = &w;
    link->port = static_cast<uint16_t>(w.links.size() - 1);
    link->pool = p.pool;
    if (p.queues > 1) {
        tc.handoff = handoff_frame;
        tc.handoff_ctx = link.get();
        st.set_neighbor_hook(share_neighbor, link.get());
        st.set_router_hook(share_router, link.get());
    }
    tc.flow_key = random_key();
    // RFC 7323 §5.4: per address pair, one key for the process, so that
    // every lcore sends a peer the same timestamp clock (tcp_ts_offset).
    static const net::siphash_key ts_k = random_key();
    tc.ts_key = ts_k;
    auto &ctr = w.tcp_counters.emplace_back(std::make_unique<net::tcp_counters>());
    auto &layer =
        w.tcp_layers.emplace_back(std::make_unique<net::tcp_layer>(tc, st, p.pool, nc, *ctr));
    st.attach_tcp(layer.get());
    const auto &tt = cfg.tcp_test;
    if (tt.echo_port != 0 || tt.discard_port != 0 || tt.source_port != 0 || tt.relay_port != 0)
        w.tcp_apps.push_back(std::make_unique<tcp_test_app>(tt, *layer, p.pool));
}

// Start-up warnings that do not stop ferry but cost it: memory on the wrong NUMA node
// (every descriptor and packet crosses the interconnect) and lcores that were asked to
// sleep but cannot (no rx interrupts on a port they serve: they poll at 100% CPU).
void warn_about_ports(const std::vector<net::port> &ports, config::wakeup_mode mode,
                      uint32_t nworkers) {
    for (const net::port &p : ports) {
        // SOCKET_ID_ANY (-1) for vdevs and on machines without NUMA: nothing to compare.
        const int port_socket = rte_eth_dev_socket_id(p.id);
        if (port_socket >= 0) {
            unsigned lcore_id;
            uint32_t index = 0;
            std::string far;
            RTE_LCORE_FOREACH(lcore_id) {
                if (index++ == nworkers) break;
                if (rte_lcore_to_socket_id(lcore_id) != unsigned(port_socket))
                    far += (far.empty() ? "" : ",") + std::to_string(lcore_id);
            }
            if (!far.empty())
                APP_LOG(WARNING, "%s",
                        logfmt("lcores on another numa node")
                            .kv("port", p.spec.name)
                            .kv("device", p.dev_name)
                            .kv("numa_node", unsigned(port_socket))
                            .kv("lcores", far)
                            .kv("cost", "their packets cross the interconnect")
                            .kv("fix", "pick -l CPUs of node " + std::to_string(port_socket) +
                                           " (lscpu -e, /sys/bus/pci/devices/" +
                                           (p.spec.pci_addr.empty() ? "<pci>" : p.spec.pci_addr) +
                                           "/numa_node)")
                            .c_str());
        }
        if (p.spec.fault.enabled()) {
            const auto &fi = p.spec.fault;
            APP_LOG(WARNING, "%s",
                    logfmt("fault injection on")
                        .kv("port", p.spec.name)
                        .kv("rx_drop", fi.rx_drop, 4)
                        .kv("rx_duplicate", fi.rx_duplicate, 4)
                        .kv("rx_reorder", fi.rx_reorder, 4)
                        .kv("tx_drop", fi.tx_drop, 4)
                        .kv("tx_duplicate", fi.tx_duplicate, 4)
                        .kv("tx_reorder", fi.tx_reorder, 4)
                        .kv("note", "[port.fault] is a test setting, never for production")
                        .c_str());
        }
        // Ports without rx interrupts: how their lcores wait instead.
        if (p.caps.rx_wake_sockets)
            APP_LOG(INFO, "%s",
                    logfmt("lcores sleep on sockets")
                        .kv("port", p.spec.name)
                        .kv("profile", p.spec.profile)
                        .kv("sockets", p.driver_name == "net_af_xdp" ? "AF_XDP" : "AF_PACKET")
                        .kv("note", "no rx interrupts; the lcores sleep on their queues' sockets "
                                    "(cap_rx_wake_sockets in /ferry/ports)")
                        .c_str());
        else if (mode == config::wakeup_mode::adaptive && !p.caps.rx_interrupts)
            APP_LOG(INFO, "%s",
                    logfmt("lcores take timed naps")
                        .kv("port", p.spec.name)
                        .kv("profile", p.spec.profile)
                        .kv("note", "no rx interrupts; in wakeup_mode = adaptive the workers "
                                    "serving the port nap at most nap_budget_us instead of "
                                    "sleeping (naps in /ferry/lcores)")
                        .c_str());
        else if (mode != config::wakeup_mode::poll && !p.caps.rx_interrupts)
            APP_LOG(WARNING, "%s",
                    logfmt("lcores cannot sleep")
                        .kv("port", p.spec.name)
                        .kv("wakeup_mode", to_string(mode))
                        .kv("profile", p.spec.profile)
                        .kv("cause", p.spec.rx_interrupts ? "rx interrupt probe failed"
                                                          : "rx_interrupts = false")
                        .kv("note", "the workers serving the port poll (can_sleep=0 in "
                                    "/ferry/lcores)")
                        .c_str());
    }
}

// lib/net's view of a port: the [[port]] table and its driver profile
// resolved for `queues` queue pairs (devargs expanded, descriptor counts
// chosen); lib/net reads no configuration itself.
net::port_spec port_spec_of(const config::port_config &c, const config::driver_profile &prof,
                            uint32_t queues) {
    net::port_spec s;
    s.name = c.name;
    s.profile = prof.name;
    s.pci = prof.bus_kind == config::bus::pci;
    s.driver = prof.driver;
    if (!s.pci) s.devargs = config::expand_devargs(prof, c, queues);
    s.pci_addr = c.pci;
    s.iface = c.iface;
    s.address = c.address;
    s.prefix_len = c.prefix_len;
    s.gateway = c.gateway;
    s.address6 = c.address6;
    s.prefix6_len = c.prefix6_len;
    s.gateway6 = c.gateway6;
    s.icmp6_errors_per_s = c.icmp6_errors_per_s;
    s.icmp6_error_burst = c.icmp6_error_burst;
    s.router_discovery = c.router_discovery;
    s.mac = c.mac;
    s.mtu = c.mtu;
    s.mbufs = c.mbufs;
    s.rx_desc = c.rx_desc != 0 ? c.rx_desc : prof.rx_desc;
    s.tx_desc = c.tx_desc != 0 ? c.tx_desc : prof.tx_desc;
    s.rx_interrupts = prof.rx_interrupts;
    s.rss = prof.rss;
    s.rx_offloads = prof.rx_offloads;
    s.tx_offloads = prof.tx_offloads;
    const config::fault_config &f = c.fault;
    s.fault = {f.rx_drop, f.rx_duplicate, f.rx_reorder, f.tx_drop,
               f.tx_duplicate, f.tx_reorder, f.reorder_hold_us, f.seed};
    return s;
}

struct loaded {
    config::ferry_config cfg;
    std::vector<config::driver_profile> profiles;  // one per port
};

// Loads the configuration and every port's profile; prints the error and
// returns false on failure.
bool load_everything(const options &opts, const std::string &drivers_dir, loaded &out) {
    auto cfg = opts.config_path.empty()
                   ? config::parse(config::embedded_default(), "<embedded default>")
                   : config::load_file(opts.config_path);
    if (!cfg) {
        std::fprintf(stderr, "ferry: %s\n", cfg.error().to_string().c_str());
        return false;
    }
    out.cfg = std::move(cfg.value());
    for (const auto &p : out.cfg.ports) {
        auto prof = config::load_profile(drivers_dir, p.profile);
        if (!prof) {
            // Point at the port that named the profile, then say what is wrong with it.
            std::fprintf(stderr, "ferry: %s:%u:%u: key 'port[%u].profile': %s\n",
                         p.where.file.c_str(), p.where.line, p.where.column, p.index,
                         prof.error().to_string().c_str());
            return false;
        }
        out.profiles.push_back(std::move(prof.value()));
    }
    return true;
}

bool check_ports(const loaded &l, uint32_t queues) {
    for (size_t i = 0; i < l.cfg.ports.size(); ++i)
        if (auto err = config::check_port(l.cfg.ports[i], l.profiles[i], queues)) {
            std::fprintf(stderr, "ferry: %s\n", err->to_string().c_str());
            return false;
        }
    return true;
}

void print_effective(const loaded &l, const std::string &drivers_dir) {
    const auto &c = l.cfg;
    std::printf("config: %s\n", c.source.c_str());
    std::printf("drivers dir: %s\n", drivers_dir.c_str());
    std::printf("workers: %s\n", c.workers ? std::to_string(c.workers).c_str() : "all EAL lcores");
    std::printf("wakeup_mode: %s, idle_threshold_us: %u, nap_budget_us: %u, latency_weight_pct: %u, "
                "busy_latency_weight_pct: %u, spin_yield_us: %u, neighbor_timeout_s: %u\n",
                std::string(to_string(c.wakeup)).c_str(), c.idle_threshold_us, c.nap_budget_us,
                c.latency_weight_pct, c.busy_latency_weight_pct, c.spin_yield_us,
                c.neighbor_timeout_s);
    for (size_t i = 0; i < c.ports.size(); ++i) {
        const auto &p = c.ports[i];
        const auto &pr = l.profiles[i];
        std::printf("port %s: profile %s (%s, %s, rx interrupts %s), address %s/%u", p.name.c_str(),
                    pr.name.c_str(), pr.driver.c_str(), pr.bus_kind == config::bus::vdev ? "vdev" : "pci",
                    pr.rx_interrupts ? "yes" : "no", config::format_ipv4(p.address).c_str(), p.prefix_len);
        if (!p.iface.empty()) std::printf(", iface %s", p.iface.c_str());
        if (!p.pci.empty()) std::printf(", pci %s", p.pci.c_str());
        if (p.gateway) std::printf(", gateway %s", config::format_ipv4(*p.gateway).c_str());
        if (p.address6)
            std::printf(", address6 %s/%u", format_ipv6(*p.address6).c_str(), p.prefix6_len);
        if (p.gateway6) std::printf(", gateway6 %s", format_ipv6(*p.gateway6).c_str());
        std::printf(", mtu %u, mbufs %u", p.mtu, p.mbufs);
        if (pr.ring_frames != 0)  // a profile with kernel rings ({ring_frames})
            std::printf(", ring_frames %u", p.ring_frames != 0 ? p.ring_frames : pr.ring_frames);
        std::printf("\n");
    }
    std::fputs(config::describe_proxy(c).c_str(), stdout);
}

int run(int argc, char **argv) {
    // The DPDK convention: EAL arguments, then `--`, then the application's.
    int split = argc;
    for (int i = 1; i < argc; ++i)
        if (std::strcmp(argv[i], "--") == 0) {
            split = i;
            break;
        }
    const int ferry_argc = split < argc ? argc - split - 1 : 0;
    char **ferry_argv = argv + split + 1;

    if (wants_help_or_version(argc, argv)) {
        // Answered before DPDK starts, whichever side of `--` it was given on.
        bool help = false, version = false, print_default = false;
        for (int i = 1; i < argc; ++i) {
            const std::string_view a = argv[i];
            help |= a == "-h" || a == "--help";
            version |= a == "-V" || a == "--version";
            print_default |= a == "--print-default-config";
        }
        if (help)
            std::fputs(usage_text, stdout);
        else if (version)
            std::printf("ferry %s (%s)\n", FERRY_VERSION, rte_version());
        else if (print_default)
            std::fputs(std::string(config::embedded_default()).c_str(), stdout);
        return 0;
    }

    if (const std::string m = misplaced_options(argc, split, argv); !m.empty()) {
        std::fprintf(stderr, "ferry: %s\n", m.c_str());
        return 2;
    }
    cli_result cr = parse_cli(ferry_argc, ferry_argv);
    if (!cr.error.empty()) {
        std::fprintf(stderr, "ferry: %s\n", cr.error.c_str());
        return 2;
    }
    const options &opts = cr.opts;
    const std::string drivers_dir = resolve_drivers_dir(opts);

    loaded l;
    if (!load_everything(opts, drivers_dir, l)) return 1;
    if (const std::string e = check_interfaces(l.cfg, l.profiles); !e.empty()) {
        std::fprintf(stderr, "ferry: %s\n", e.c_str());
        return 1;
    }
    if (opts.check) {
        if (!check_ports(l, l.cfg.workers ? l.cfg.workers : 1)) return 1;
        print_effective(l, drivers_dir);
        // --check does not see the EAL options ferry will run with.
        if (const std::string h = hugepage_note(); !h.empty())
            std::printf("note: %s\n", h.c_str());
        std::printf("configuration OK\n");
        if (!opts.running.empty()) {
            std::fflush(stdout);
            return check_against_running(opts.running, opts.config_path);
        }
        return 0;
    }
    // What EAL and the PMDs would report with a misleading errno.
    for (const std::string &e : {check_capabilities(l.profiles), check_hugepages(split, argv)})
        if (!e.empty()) {
            std::fprintf(stderr, "ferry: %s\n", e.c_str());
            return 1;
        }

    // [http] access_log: opened now, so a path ferry cannot write fails before
    // anything else starts. Without a [[listener]] there is nothing to log.
    // The upstreams' names by slot, for the log writers; the reloader names
    // the slots a reload adds.
    static name_table upstream_names(config::upstream_capacity(l.cfg));
    for (size_t u = 0; u < l.cfg.upstreams.size(); ++u)
        upstream_names.name(u, l.cfg.upstreams[u].name);
    std::unique_ptr<access_log_writer> alog;
    if (!l.cfg.http.access_log.empty() && !l.cfg.listeners.empty()) {
        auto a = access_log_writer::open(l.cfg, upstream_names);
        if (!a) {
            std::fprintf(stderr, "ferry: %s\n", a.error().c_str());
            return 1;
        }
        alog = std::move(a.value());
    }

    claim_realtime_signals();
    sigset_t stop_set;
    block_stop_signals(&stop_set);

    // Time, level and lcore on every log line, EAL's start-up lines included.
    (void)install_log_stream();
    const int eal_argc = split;
    const int consumed = rte_eal_init(eal_argc, argv);
    if (consumed < 0) {
        std::fprintf(stderr, "ferry: EAL initialisation failed: %s\n", rte_strerror(rte_errno));
        return 1;
    }
    if (consumed != eal_argc - 1) {
        std::fprintf(stderr, "ferry: unexpected argument '%s' before '--' (ferry options go after "
                             "'--'; see --help)\n", argv[consumed + 1]);
        rte_eal_cleanup();
        return 2;
    }
    install_stop_handlers(&stop_set, alog != nullptr);
    // What the program, its libraries and DPDK hold before ferry allocates
    // anything: the base of the memory bound.
    const uint64_t base_rss = telemetry::read_resident().now;
    const uint64_t base_heap = dpdk_heap_bytes();

    static app_state app;  // lives until exit
    the_app = &app;
    // What telemetry reads; withdrawn (publish(nullptr)) before cleanup frees
    // what it points to, since DPDK may still call a command then.
    static telemetry::process_view view;
    static telemetry::exporter_counters exporter_counters;  // [admin] metrics_address
    app.cfg = l.cfg;
    app.reload.init(app.cfg, opts.config_path, app.settings, wake_all_workers, &upstream_names);
    app.reload.set_access_log_format(alog ? &alog->format() : nullptr);
    app.drivers_dir = drivers_dir;
    // config::wakeup_mode and reactor::wakeup_mode list the same modes in the same order.
    app.settings.mode.store(static_cast<reactor::wakeup_mode>(l.cfg.wakeup));
    app.settings.idle_threshold_ns.store(uint64_t(l.cfg.idle_threshold_us) * 1000u);
    app.settings.nap_budget_ns.store(uint64_t(l.cfg.nap_budget_us) * 1000u);
    app.settings.latency_weight_pct.store(l.cfg.latency_weight_pct);
    app.settings.busy_latency_weight_pct.store(l.cfg.busy_latency_weight_pct);
    app.settings.spin_yield_ns.store(uint64_t(l.cfg.spin_yield_us) * 1000u);

    if (!l.cfg.listeners.empty()) {
        const auto &tt = l.cfg.tcp_test;
        if (tt.echo_port != 0 || tt.discard_port != 0 || tt.source_port != 0 || tt.relay_port != 0) {
            // Both would take the same TCP events: one application per port.
            std::fprintf(stderr, "ferry: %s: [tcp_test] services and [[listener]]s cannot be "
                                 "combined; remove one of them\n",
                         l.cfg.source.c_str());
            rte_eal_cleanup();
            return 2;
        }
        app.proxy_shared = std::make_unique<proxy::shared_state>(l.cfg);
    }
    const unsigned lcores = rte_lcore_count();
    const uint32_t nworkers = l.cfg.workers ? l.cfg.workers : lcores;
    int rc = 1;
    std::unique_ptr<telemetry::exporter> metrics;  // [admin] metrics_address
    std::unique_ptr<event_log_writer> events;       // server down/up lines (with listeners)
    if (nworkers > lcores) {
        // Each worker owns one lcore and one queue pair per port: two workers cannot
        // share an lcore, so this is fatal, not a warning.
        std::fprintf(stderr,
                     "ferry: %s: workers = %u but EAL gave %u lcores (-l): each worker needs "
                     "an lcore of its own; list at least %u CPUs in -l or lower workers\n",
                     l.cfg.source.c_str(), nworkers, lcores, nworkers);
        goto out;
    }
    if (!check_ports(l, nworkers)) goto out;

    for (size_t i = 0; i < l.cfg.ports.size(); ++i) {
        const bool want_intr = l.cfg.wakeup != config::wakeup_mode::poll;
        auto p = net::port_open(port_spec_of(l.cfg.ports[i], l.profiles[i], nworkers),
                                static_cast<uint16_t>(nworkers), nworkers, want_intr);
        if (!p) {
            std::fprintf(stderr, "ferry: %s\n", p.error().c_str());
            goto out;
        }
        app.ports.push_back(std::move(p.value()));
    }
    warn_about_ports(app.ports, l.cfg.wakeup, nworkers);

    {
        // One worker per lcore, in EAL order (the main lcore first): worker i
        // owns queue i of every port and a stack per port.
        unsigned lcore_id;
        uint16_t index = 0;
        const uint64_t now = reactor::reactor::now_ns();
        if (std::string err = create_mesh(app, nworkers); !err.empty()) {
            std::fprintf(stderr, "ferry: %s\n", err.c_str());
            goto out;
        }
        RTE_LCORE_FOREACH(lcore_id) {
            if (index == nworkers) break;
            auto w = std::make_unique<worker>();
            w->lcore = lcore_id;
            w->index = index++;
            for (const auto &p : app.ports) {
                net::iface_config ic;
                std::memcpy(&ic.mac, p.mac.addr_bytes, 6);
                ic.addr = net::ipv4_addr(p.spec.address);
                ic.prefix_len = p.spec.prefix_len;
                if (p.spec.gateway) ic.gateway = net::ipv4_addr(*p.spec.gateway);
                if (p.spec.address6) {
                    ic.addr6 = net::ipv6_addr(*p.spec.address6);
                    if (p.spec.gateway6) ic.gateway6 = net::ipv6_addr(*p.spec.gateway6);
                    ic.prefix6_len = p.spec.prefix6_len;
                    ic.icmp6_errors_per_s = p.spec.icmp6_errors_per_s;
                    ic.icmp6_error_burst = p.spec.icmp6_error_burst;
                    ic.router_discovery = p.spec.router_discovery;
                }
                ic.mtu = p.spec.mtu;
                ic.neighbor_timeout_ns = uint64_t(l.cfg.neighbor_timeout_s) * 1'000'000'000u;
                auto &blk = app.net_counter_blocks.emplace_back(std::make_unique<net::net_counters>());
                w->net_counters.push_back(blk.get());
                w->stacks.push_back(std::make_unique<net::stack>(ic, p.pool, *blk));
                add_tcp(*w, l.cfg, p, *w->stacks.back(), *blk);
            }
            if (std::string err = setup_worker(app, *w); !err.empty()) {
                std::fprintf(stderr, "ferry: %s\n", err.c_str());
                goto out;
            }
            app.by_lcore[lcore_id] = w.get();
            app.workers.push_back(std::move(w));
        }
        if (std::string err = setup_outboxes(app); !err.empty()) {
            std::fprintf(stderr, "ferry: %s\n", err.c_str());
            goto out;
        }
        // Announce ourselves once per port (gratuitous ARP, RFC 5227 2.3) from
        // the first worker's queue, so peers with a stale entry learn our MAC.
        for (size_t i = 0; i < app.ports.size(); ++i) {
            net::stack &st = *app.workers[0]->stacks[i];
            st.announce(now);
            auto tx = st.tx_pending();
            const uint16_t sent = rte_eth_tx_burst(app.ports[i].id, 0, tx.data(),
                                                   static_cast<uint16_t>(tx.size()));
            st.tx_consumed(sent);
        }
    }

    if (alog) {
        // One ring per worker; the proxies log into it from their first request.
        for (auto &w : app.workers)
            if (w->proxy) w->proxy->set_access_log(alog->add_sink(w->lcore));
        if (std::string err = alog->start(); !err.empty()) {
            std::fprintf(stderr, "ferry: %s\n", err.c_str());
            goto out;
        }
    }
    if (app.proxy_shared) {
        // One event ring per worker: server down/up lines (event_log.h).
        events = std::make_unique<event_log_writer>(l.cfg, *app.proxy_shared, upstream_names);
        for (auto &w : app.workers)
            if (w->proxy) w->proxy->set_event_log(events->add_sink());
        if (std::string err = events->start(); !err.empty()) {
            std::fprintf(stderr, "ferry: %s\n", err.c_str());
            goto out;
        }
    }
    // After the workers are set up (the view points into them), before "ready".
    view = telemetry_view(app);
    view.draining = &stop_requested.flag();
    view.memory = plan_memory(app, base_rss, base_heap);
    {
        // bound = base + dpdk_heap (mbuf pools, rings) + tcp + proxy (connection
        // slots) + kernel_rings (af_packet) + slack; docs/OPERATIONS.md "Memory".
        constexpr double mib = 1048576.0;
        APP_LOG(INFO, "%s",
                logfmt("memory")
                    .kv("bound_mib", view.memory.bound / mib, 1)
                    .kv("base_mib", view.memory.base_rss / mib, 1)
                    .kv("dpdk_heap_mib", view.memory.dpdk_heap / mib, 1)
                    .kv("tcp_mib", view.memory.tcp_reserved / mib, 1)
                    .kv("proxy_mib", view.memory.proxy_reserved / mib, 1)
                    .kv("kernel_rings_mib", view.memory.kernel_rings / mib, 1)
                    .kv("slack_mib", view.memory.slack / mib, 1)
                    .kv("resident_mib", telemetry::read_resident().now / mib, 1)
                    .c_str());
    }
    if (l.cfg.admin.addr) {
        view.exporter = &exporter_counters;
        auto m = telemetry::exporter::start(view, exporter_counters, *l.cfg.admin.addr,
                                            l.cfg.admin.port);
        if (!m) {
            std::fprintf(stderr, "ferry: %s\n", m.error().c_str());
            goto out;
        }
        metrics = std::move(m.value());
    }
    telemetry::publish(&view);
    telemetry::register_commands();
    // SIGHUP's reloads (reload.h); /ferry/reload runs on the telemetry thread.
    if (std::string err = app.reload.start(); !err.empty()) {
        std::fprintf(stderr, "ferry: reload thread: %s\n", err.c_str());
        goto out;
    }
    {
        // key=value, and every listener with where it listens:
        // listeners=web:80@front,admin:8081@* (* = every port).
        std::string ports, listeners;
        for (const auto &p : l.cfg.ports)
            ports += (ports.empty() ? "" : ",") + p.name + "@" + config::format_ipv4(p.address);
        for (const auto &li : l.cfg.listeners)
            listeners += (listeners.empty() ? "" : ",") + li.name + ":" + std::to_string(li.port) +
                         "@" + std::string(config::listener_where(l.cfg, li));
        APP_LOG(INFO, "%s",
                logfmt("ready")
                    .kv("ports", ports)
                    .kv("workers", nworkers)
                    .kv("wakeup_mode", to_string(l.cfg.wakeup))
                    .kv("listeners", listeners.empty() ? "-" : listeners)
                    .kv("config", l.cfg.source)
                    .c_str());
    }
    std::fflush(stdout);
    std::fflush(stderr);

    // The main lcore's loop takes the signals; every loop is rung all the same.
    for (const auto &w : app.workers) (void)stop_requested.watch(&w->loop->bell());
    rte_eal_mp_remote_launch(worker_main, nullptr, CALL_MAIN);
    rte_eal_mp_wait_lcore();
    APP_LOG(INFO, "%s", "stopping");
    rc = 0;

out:
    // No reload from here on (it wakes the workers, which go below).
    app.reload.stop();
    // The exporter and the telemetry commands read everything below: the
    // exporter's thread is joined first, then the view withdrawn (which waits
    // for a command in progress).
    metrics.reset();
    telemetry::publish(nullptr);
    // Connections and the test services hold mbufs of the ports' pools: free
    // them before the pools go (app is static, destroyed only after this).
    for (auto &w : app.workers) {
        w->proxy.reset();  // its connections' mbufs go back before the pools
        w->tcp_apps.clear();
        for (auto &st : w->stacks)
            st->attach_tcp(nullptr);
        w->tcp_layers.clear();
        w->queues.clear();  // frees held (fault injector) and stashed frames
        w->out.reset();  // frees frames still queued for other workers
        w->in.reset();
    }
    app.mesh.reset();  // frees frames still in the rings
    // The proxies are gone (their destructors may have logged the requests
    // still open): the writer drains every ring, writes and closes the file.
    if (alog) alog->stop();
    if (events) events->stop();
    for (auto &p : app.ports) net::port_close(p);
    rte_eal_cleanup();
    return rc;
}

}  // namespace
}  // namespace ferry::app

int main(int argc, char **argv) { return ferry::app::run(argc, argv); }
