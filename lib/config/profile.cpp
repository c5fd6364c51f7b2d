// Driver profiles (drivers-config/<name>.toml) and the checks of a port against one.
#include <algorithm>
#include <filesystem>

#include "ferry/config/config.h"
#include "reader.h"
#include "text.h"

namespace ferry::config {

using detail::reader;

namespace {

// In RTE_ETH_{RX,TX}_OFFLOAD_* bit order (rte_ethdev.h, 22.11); only the ones a profile
// for a NIC we might run on would list.
constexpr std::string_view rx_offload_names[] = {
    "vlan_strip", "ipv4_cksum", "udp_cksum", "tcp_cksum",
    "tcp_lro",    "scatter",    "timestamp", "rss_hash",
};
constexpr std::string_view tx_offload_names[] = {
    "vlan_insert", "ipv4_cksum", "udp_cksum",  "tcp_cksum",
    "tcp_tso",     "udp_tso",    "multi_segs", "mbuf_fast_free",
};
constexpr std::string_view bus_names[] = {"vdev", "pci"};
constexpr std::string_view binding_names[] = {"vfio-pci", "none"};

// A Linux driver name as sysfs shows it (/sys/bus/pci/drivers/<name>): virtio-pci,
// mlx5_core. deploy/ferry-setup pastes it into a path, so no '/' or '.'.
bool is_kernel_driver_name(std::string_view s) {
    if (s.empty() || s.size() > 32)
        return false;
    return std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    });
}
constexpr std::string_view placeholders[] = {"{iface}", "{queues}", "{index}", "{ring_frames}"};
constexpr std::string_view ring_frames_placeholder = "{ring_frames}";

// Why ring_frames is a power of two in 16..65536 (config.h min/max_ring_frames): the
// af_packet PMD cuts each ring into blocks of blocksz bytes (a page by default) holding
// blocksz / framesz frames (2 with the default 2048-byte frames), computes the block count
// as framecnt / that, and the kernel refuses a ring that is not a whole number of blocks
// (packet_set_ring: tp_frame_nr == frames per block * tp_block_nr), failing the port's
// start with a bare EINVAL. A power of two from 16 up is a whole number of blocks for every
// power-of-two framesz from blocksz / 16 up. 65536 frames of 2048 bytes are 128 MiB per
// ring, 256 MiB per queue pair (rx + tx), locked in memory (the PMD maps it MAP_LOCKED):
// more is a configuration mistake, not a tuning.
std::string ring_frames_range(int64_t n) {
    return "must be a power of two in " + std::to_string(min_ring_frames) + ".." +
           std::to_string(max_ring_frames) + ", got " + std::to_string(n);
}

bool uses_ring_frames(const driver_profile &p) {
    return p.devargs.find(ring_frames_placeholder) != std::string::npos;
}

constexpr int64_t max_queues_limit = 1024;  // RTE_MAX_QUEUES_PER_PORT

bool is_desc_count(int64_t n) {
    return n >= 32 && n <= 32768 && (n & (n - 1)) == 0;
}

// "an rx" / "a tx".
std::string article(std::string_view dir) {
    return (dir == "rx" ? "an " : "a ") + std::string(dir);
}

bool contains(std::span<const std::string_view> set, std::string_view s) {
    return std::find(set.begin(), set.end(), s) != set.end();
}

// Why a devargs template is malformed, or nullopt. Devargs are comma-separated k=v pairs
// that EAL splits without quoting, so whitespace is always a mistake.
std::optional<std::string> check_devargs(std::string_view s) {
    for (size_t i = 0; i < s.size(); ++i) {
        char c = s[i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
            return "must not contain whitespace (offset " + std::to_string(i) + ")";
        if (c == '}')
            return "unbalanced '}' at offset " + std::to_string(i);
        if (c != '{')
            continue;
        size_t end = s.find('}', i);
        if (end == std::string_view::npos)
            return "unterminated placeholder at offset " + std::to_string(i);
        std::string_view ph = s.substr(i, end - i + 1);
        if (!contains(placeholders, ph))
            return "unknown placeholder '" + std::string(ph) + "' (expected " +
                   detail::join_alternatives(placeholders) + ")";
        i = end;
    }
    return std::nullopt;
}

// "net_tap" from ".../net_tap.toml"; empty when source_name is not a .toml file.
std::string_view file_stem(std::string_view source_name) {
    size_t slash = source_name.rfind('/');
    std::string_view base =
        slash == std::string_view::npos ? source_name : source_name.substr(slash + 1);
    constexpr std::string_view ext = ".toml";
    if (base.size() <= ext.size() || !base.ends_with(ext))
        return {};
    return base.substr(0, base.size() - ext.size());
}

class profile_parser {
public:
    explicit profile_parser(std::string_view file) : r_(file) {}

    result<driver_profile, error> run(const toml::table &root) {
        p_.file = r_.file();
        const reader::field fields[] = {
            {"profile", true,
             [this](const toml::node &n, const std::string &k) { return read_profile(n, k); }},
        };
        if (auto e = r_.walk(root, "", fields))
            return unexpected{*e};
        return std::move(p_);
    }

private:
    std::optional<error> read_profile(const toml::node &n, const std::string &key) {
        auto t = r_.table(n, key);
        if (!t)
            return t.error();
        const toml::node *devargs_node = nullptr, *ring_frames_node = nullptr;
        const toml::node *binding_node = nullptr, *kernel_driver_node = nullptr;
        const reader::field fields[] = {
            {"name", true,
             [this](const toml::node &v, const std::string &k) -> std::optional<error> {
                 auto s = r_.string(v, k);
                 if (!s)
                     return s.error();
                 if (!detail::is_lower_name(*s, 64))
                     return r_.at(v, k, "must be 1..64 characters of [a-z0-9_], got '" + *s + "'");
                 std::string_view stem = file_stem(r_.file());
                 if (!stem.empty() && *s != stem)
                     return r_.at(v, k,
                                  "profile name '" + *s + "' does not match the file name '" +
                                      std::string(stem) + ".toml'");
                 p_.name = std::move(*s);
                 return std::nullopt;
             }},
            {"bus", true,
             [this](const toml::node &v, const std::string &k) -> std::optional<error> {
                 auto s = r_.string(v, k);
                 if (!s)
                     return s.error();
                 if (*s == "vdev")
                     p_.bus_kind = bus::vdev;
                 else if (*s == "pci")
                     p_.bus_kind = bus::pci;
                 else
                     return r_.at(v, k,
                                  "unknown bus '" + *s + "' (expected " +
                                      detail::join_alternatives(bus_names) + ")");
                 return std::nullopt;
             }},
            {"driver", true,
             [this](const toml::node &v, const std::string &k) -> std::optional<error> {
                 auto s = r_.string(v, k);
                 if (!s)
                     return s.error();
                 // Every ethdev driver in DPDK is named net_*; the vdev name given to EAL
                 // must start with it (eal_device()).
                 if (!s->starts_with("net_") || !detail::is_lower_name(*s, 64) || s->size() == 4)
                     return r_.at(
                         v, k,
                         "must be a DPDK ethdev driver name net_[a-z0-9_]+, got '" + *s + "'");
                 p_.driver = std::move(*s);
                 return std::nullopt;
             }},
            {"binding", false,
             [this, &binding_node](const toml::node &v,
                                   const std::string &k) -> std::optional<error> {
                 auto s = r_.string(v, k);
                 if (!s)
                     return s.error();
                 if (*s == "vfio-pci")
                     p_.bind = binding::vfio_pci;
                 else if (*s == "none")
                     p_.bind = binding::none;
                 else
                     return r_.at(v, k,
                                  "unknown binding '" + *s + "' (expected " +
                                      detail::join_alternatives(binding_names) + ")");
                 binding_node = &v;
                 return std::nullopt;
             }},
            {"kernel_driver", false,
             [this, &kernel_driver_node](const toml::node &v,
                                         const std::string &k) -> std::optional<error> {
                 auto s = r_.string(v, k);
                 if (!s)
                     return s.error();
                 if (!is_kernel_driver_name(*s))
                     return r_.at(v, k,
                                  "must be a kernel driver name, 1..32 characters of "
                                  "[a-z0-9_-], got '" + *s + "'");
                 p_.kernel_driver = std::move(*s);
                 kernel_driver_node = &v;
                 return std::nullopt;
             }},
            {"devargs", true,
             [this, &devargs_node](const toml::node &v,
                                   const std::string &k) -> std::optional<error> {
                 auto s = r_.string(v, k);
                 if (!s)
                     return s.error();
                 if (auto why = check_devargs(*s))
                     return r_.at(v, k, *why);
                 p_.devargs = std::move(*s);
                 devargs_node = &v;
                 return std::nullopt;
             }},
            {"max_queues", true, r_.integer_into(p_.max_queues, 1, max_queues_limit)},
            {"rx_desc", true, desc_into(p_.rx_desc)},
            {"tx_desc", true, desc_into(p_.tx_desc)},
            {"ring_frames", false,
             [this, &ring_frames_node](const toml::node &v,
                                       const std::string &k) -> std::optional<error> {
                 auto n = r_.integer(v, k, min_ring_frames, max_ring_frames);
                 if (!n)
                     return n.error();
                 if (!is_ring_frames(*n))
                     return r_.at(v, k, ring_frames_range(*n));
                 p_.ring_frames = static_cast<uint32_t>(*n);
                 ring_frames_node = &v;
                 return std::nullopt;
             }},
            {"rx_interrupts", true, r_.boolean_into(p_.rx_interrupts)},
            {"rss", true, r_.boolean_into(p_.rss)},
            {"rx_offloads", true,
             offloads_into(p_.rx_offloads, "rx", rx_offload_names, "tx", tx_offload_names)},
            {"tx_offloads", true,
             offloads_into(p_.tx_offloads, "tx", tx_offload_names, "rx", rx_offload_names)},
            {"caveats", false, r_.string_into(p_.caveats)},
        };
        if (auto e = r_.walk(**t, key, fields))
            return e;
        // Binding is about a PCI function: a vdev has nothing to bind and no kernel driver
        // to leave. An unset binding of a pci profile means vfio-pci, the common case.
        if (p_.bus_kind == bus::vdev) {
            if (binding_node != nullptr && p_.bind != binding::none)
                return r_.at(*binding_node, detail::join_key(key, "binding"),
                             "a vdev profile has no device to bind (expected none or no "
                             "binding)");
            if (kernel_driver_node != nullptr)
                return r_.at(*kernel_driver_node, detail::join_key(key, "kernel_driver"),
                             "a vdev profile has no kernel driver");
        } else {
            if (binding_node == nullptr)
                p_.bind = binding::vfio_pci;
            // ferry-setup checks that a bifurcated device is on the driver the PMD needs
            // (mlx5_core): without a name it could not.
            if (p_.bind == binding::none && p_.kernel_driver.empty())
                return r_.at(**t, detail::join_key(key, "kernel_driver"),
                             "binding = \"none\" needs 'kernel_driver', the kernel driver "
                             "the device stays on");
        }
        // ring_frames is the default of {ring_frames}: one without the other is a mistake
        // (a port could not size its rings, or a key would be silently unused).
        if (uses_ring_frames(p_) && ring_frames_node == nullptr)
            return r_.at(**t, detail::join_key(key, "ring_frames"),
                         "devargs use {ring_frames}: set 'ring_frames', the frames per "
                         "kernel ring when the port does not say");
        if (!uses_ring_frames(p_) && ring_frames_node != nullptr)
            return r_.at(*ring_frames_node, detail::join_key(key, "ring_frames"),
                         "unused: devargs do not use {ring_frames}");
        // A PCI device has no kernel interface while DPDK drives it.
        if (p_.bus_kind == bus::pci && p_.devargs.find("{iface}") != std::string::npos)
            return r_.at(*devargs_node, detail::join_key(key, "devargs"),
                         "a pci profile cannot use {iface}");
        return std::nullopt;
    }

    reader::handler desc_into(uint16_t &out) {
        return [this, &out](const toml::node &v, const std::string &k) -> std::optional<error> {
            auto n = r_.integer(v, k, 32, 32768);
            if (!n)
                return n.error();
            if (!is_desc_count(*n))
                return r_.at(v, k,
                             "must be a power of two in 32..32768, got " + std::to_string(*n));
            out = static_cast<uint16_t>(*n);
            return std::nullopt;
        };
    }

    reader::handler offloads_into(std::vector<std::string> &out, std::string_view dir,
                                  std::span<const std::string_view> known,
                                  std::string_view other_dir,
                                  std::span<const std::string_view> other) {
        return [=, this, &out](const toml::node &v, const std::string &k) -> std::optional<error> {
            auto a = r_.array(v, k);
            if (!a)
                return a.error();
            for (size_t i = 0; i < (*a)->size(); ++i) {
                const toml::node &elem = *(*a)->get(i);
                std::string ek = detail::index_key(k, i);
                auto s = r_.string(elem, ek);
                if (!s)
                    return s.error();
                if (!contains(known, *s)) {
                    if (contains(other, *s))
                        return r_.at(elem, ek,
                                     "'" + *s + "' is " + article(other_dir) + " offload, not " +
                                         article(dir) + " offload");
                    return r_.at(elem, ek,
                                 "unknown " + std::string(dir) + " offload '" + *s +
                                     "' (known: " + detail::join_alternatives(known) + ")");
                }
                if (std::find(out.begin(), out.end(), *s) != out.end())
                    return r_.at(elem, ek, "duplicate offload '" + *s + "'");
                out.push_back(std::move(*s));
            }
            return std::nullopt;
        };
    }

    reader r_;
    driver_profile p_;
};

}  // namespace

std::span<const std::string_view> known_rx_offloads() {
    return rx_offload_names;
}

std::span<const std::string_view> known_tx_offloads() {
    return tx_offload_names;
}

result<driver_profile, error> parse_profile(std::string_view text, std::string_view source_name) {
    toml::parse_result doc = toml::parse(text, source_name);
    if (!doc)
        return unexpected{detail::from_parse_error(doc.error(), source_name)};
    return profile_parser(source_name).run(doc.table());
}

result<driver_profile, error> load_profile(const std::string &dir, std::string_view name) {
    namespace fs = std::filesystem;
    // The name comes from a config file: keep it from naming a path outside dir.
    if (!detail::is_lower_name(name, 64))
        return unexpected{error{source_pos{dir}, "",
                                "invalid profile name '" + std::string(name) +
                                    "' (expected 1..64 characters of [a-z0-9_])"}};
    std::string path = (fs::path(dir) / (std::string(name) + ".toml")).string();
    std::error_code ec;
    if (!fs::exists(path, ec) && !ec) {
        std::vector<std::string> names;
        fs::directory_iterator it(dir, ec);
        if (ec)
            return unexpected{
                error{source_pos{dir}, "", "cannot read profile directory: " + ec.message()}};
        for (; it != fs::directory_iterator(); it.increment(ec)) {
            if (ec)
                break;
            const fs::path &f = it->path();
            if (f.extension() == ".toml")
                names.push_back(f.stem().string());
        }
        std::sort(names.begin(), names.end());
        std::string list;
        for (const std::string &n : names)
            list += (list.empty() ? "" : ", ") + n;
        return unexpected{error{source_pos{dir}, "",
                                "unknown profile '" + std::string(name) + "' (" +
                                    (names.empty() ? "no profiles here" : "available: " + list) +
                                    ")"}};
    }
    auto text = detail::read_file(path);
    if (!text)
        return unexpected{error{source_pos{path}, "", text.error()}};
    return parse_profile(*text, path);
}

std::optional<error> check_port(const port_config &port, const driver_profile &profile,
                                uint32_t queues) {
    std::string pk = detail::index_key("port", port.index);
    auto fail = [&](std::string_view field, std::string message) {
        return error{port.where, field.empty() ? pk : detail::join_key(pk, field),
                     std::move(message)};
    };
    const std::string who = "profile '" + profile.name + "'";

    if (port.profile != profile.name)
        return fail("profile",
                    "the port uses profile '" + port.profile + "', not '" + profile.name + "'");
    if (profile.bus_kind == bus::pci) {
        if (port.pci.empty())
            return fail("pci", who + " (bus pci) needs 'pci', the device's address dddd:bb:dd.f");
        if (!detail::is_pci_address(port.pci))
            return fail("pci", "expected a PCI address dddd:bb:dd.f, got '" + port.pci + "'");
        if (!port.iface.empty())
            return fail("iface", who + " (bus pci) does not use 'iface'");
    } else {
        if (!port.pci.empty())
            return fail("pci", who + " is a vdev profile; 'pci' is for pci profiles");
        bool uses_iface = profile.devargs.find("{iface}") != std::string::npos;
        if (uses_iface && port.iface.empty())
            return fail("iface", who + " needs 'iface', the kernel interface");
        if (uses_iface && !detail::is_iface_name(port.iface))
            return fail("iface",
                        "must be 1..15 characters of [A-Za-z0-9_.-], got '" + port.iface + "'");
        if (!uses_iface && !port.iface.empty())
            return fail("iface", who + " does not use 'iface'");
    }
    if (queues == 0)
        return fail("", "needs at least one queue pair");
    if (queues > profile.max_queues)
        return fail("", "needs " + std::to_string(queues) + " queue pairs, " + who +
                            " supports at most " + std::to_string(profile.max_queues));
    if (port.mtu < 68 || port.mtu > 9000)
        return fail("mtu", "must be in 68..9000, got " + std::to_string(port.mtu));
    uint32_t rx = port.rx_desc != 0 ? port.rx_desc : profile.rx_desc;
    uint32_t tx = port.tx_desc != 0 ? port.tx_desc : profile.tx_desc;
    if (!is_desc_count(rx))
        return fail("rx_desc", "must be a power of two in 32..32768, got " + std::to_string(rx));
    if (!is_desc_count(tx))
        return fail("tx_desc", "must be a power of two in 32..32768, got " + std::to_string(tx));
    if (port.ring_frames != 0 && !uses_ring_frames(profile))
        return fail("ring_frames", who + " has no kernel ring to size (its devargs do not use " +
                                       std::string(ring_frames_placeholder) + ")");
    if (uses_ring_frames(profile)) {
        uint32_t frames = port.ring_frames != 0 ? port.ring_frames : profile.ring_frames;
        if (!is_ring_frames(frames))
            return fail("ring_frames", ring_frames_range(frames));
    }
    // A lower bound: the rings alone hold this many; per-lcore mempool caches and packets
    // in flight need more on top.
    uint64_t need = uint64_t{queues} * (rx + tx);
    if (port.mbufs < need)
        return fail("mbufs", std::to_string(port.mbufs) +
                                 " mbufs cannot fill the descriptor rings: " +
                                 std::to_string(queues) + " queue pairs x (" + std::to_string(rx) +
                                 " rx + " + std::to_string(tx) + " tx) = " + std::to_string(need));
    return std::nullopt;
}

std::string expand_devargs(const driver_profile &profile, const port_config &port,
                           uint32_t queues) {
    std::string out;
    std::string_view s = profile.devargs;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '{') {
            std::string_view rest = s.substr(i);
            if (rest.starts_with("{iface}")) {
                out += port.iface;
                i += 6;
                continue;
            }
            if (rest.starts_with("{queues}")) {
                out += std::to_string(queues);
                i += 7;
                continue;
            }
            if (rest.starts_with("{index}")) {
                out += std::to_string(port.index);
                i += 6;
                continue;
            }
            if (rest.starts_with(ring_frames_placeholder)) {
                out +=
                    std::to_string(port.ring_frames != 0 ? port.ring_frames : profile.ring_frames);
                i += ring_frames_placeholder.size() - 1;
                continue;
            }
        }
        // Anything else, including an unknown {x} in a profile built in code, is copied.
        out += s[i];
    }
    return out;
}

std::string eal_device(const driver_profile &profile, const port_config &port, uint32_t queues) {
    std::string devargs = expand_devargs(profile, port, queues);
    std::string dev = profile.bus_kind == bus::pci ? port.pci : profile.driver + "_" + port.name;
    if (!devargs.empty())
        dev += "," + devargs;
    return dev;
}

}  // namespace ferry::config
