// The tap steering eBPF program, assembled here, and its installation on a
// net_tap device (steering.h says what it computes and why); the same
// program for a packet fanout group (net_ferry_packet), which reads the
// frame relative to the skb's headers instead (frame_layout below).
//
// Read first: Documentation/bpf/standardization/instruction-set.rst (eBPF
// encoding; "Legacy BPF Packet access instructions" for LD_ABS/LD_IND),
// drivers/net/tun.c (tun_ebpf_select_queue, TUNSETSTEERINGEBPF), and
// net/core/filter.c bpf_gen_ld_abs (what the verifier turns LD_ABS into).
//
// The program is written by hand as struct bpf_insn so that ferry needs no
// BPF compiler and no libbpf. It runs in tun_select_queue on every frame the
// kernel transmits on the tap, with skb->data at the Ethernet header, and
// reads the frame only with BPF_LD_ABS / BPF_LD_IND: these load 1, 2 or 4
// bytes at an offset from skb->data in network byte order into r0 as a host
// order number, and when the offset is past the end of the frame they end the
// program with return value 0 — so a truncated frame goes to queue 0 without
// a length check of ours. They need the skb in r6 and clobber r1..r5.
#include "ferry/net/steering.h"

#include <dirent.h>
#include <linux/bpf.h>
#include <linux/filter.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace ferry::net {
namespace {

// ---- A minimal eBPF assembler: one constexpr function per instruction form.

constexpr uint8_t r0 = BPF_REG_0, r1 = BPF_REG_1, r6 = BPF_REG_6, r7 = BPF_REG_7, r8 = BPF_REG_8,
                  r9 = BPF_REG_9;

constexpr bpf_insn insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) noexcept {
    bpf_insn i{};
    i.code = code;
    i.dst_reg = dst & 0x0f;
    i.src_reg = src & 0x0f;
    i.off = off;
    i.imm = imm;
    return i;
}
// dst = src, all 64 bits.
constexpr bpf_insn mov64_reg(uint8_t dst, uint8_t src) noexcept {
    return insn(BPF_ALU64 | BPF_MOV | BPF_X, dst, src, 0, 0);
}
// dst = imm (sign-extended to 64 bits).
constexpr bpf_insn mov64_imm(uint8_t dst, int32_t imm) noexcept {
    return insn(BPF_ALU64 | BPF_MOV | BPF_K, dst, 0, 0, imm);
}
// 32-bit ALU: the low halves, result zero-extended, as uint32_t arithmetic in
// C++ (multiplication modulo 2^32, logical right shift).
constexpr bpf_insn alu32_reg(uint8_t op, uint8_t dst, uint8_t src) noexcept {
    return insn(BPF_ALU | op | BPF_X, dst, src, 0, 0);
}
constexpr bpf_insn alu32_imm(uint8_t op, uint8_t dst, uint32_t imm) noexcept {
    return insn(BPF_ALU | op | BPF_K, dst, 0, 0, static_cast<int32_t>(imm));
}
// r0 = frame[off .. off + size) (BPF_B, BPF_H, BPF_W), big-endian.
constexpr bpf_insn ld_abs(uint8_t size, int32_t off) noexcept {
    return insn(BPF_LD | size | BPF_ABS, 0, 0, 0, off);
}
// r0 = frame[src + off .. + size), big-endian.
constexpr bpf_insn ld_ind(uint8_t size, uint8_t src, int32_t off) noexcept {
    return insn(BPF_LD | size | BPF_IND, 0, src, 0, off);
}
// if (dst <op> imm) skip `off` instructions; unsigned comparisons, 64 bits.
constexpr bpf_insn jmp_imm(uint8_t op, uint8_t dst, int32_t imm, int16_t off) noexcept {
    return insn(BPF_JMP | op | BPF_K, dst, 0, off, imm);
}
// Skip `off` instructions.
constexpr bpf_insn ja(int16_t off) noexcept {
    return insn(BPF_JMP | BPF_JA, 0, 0, off, 0);
}
constexpr bpf_insn exit_insn() noexcept {
    return insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
}

struct program {
    static constexpr std::size_t capacity = 96;
    std::array<bpf_insn, capacity> insns{};
    std::size_t len = 0;
    // Every labelled jump lands on a later instruction. Older verifiers
    // reject any back-edge ("back-edge from insn X to Y"), and forward-only
    // code needs no loop bound to be proved.
    bool jumps_forward = true;
};

// Where the program finds the EtherType and the IP header. On a tap every
// frame is seen with skb->data at its Ethernet header: the IP header starts
// 14 bytes in (no VLAN tag). A packet fanout group's program runs on frames
// the interface received, whose skb->data is at the IP header already: there
// both are read at negative offsets, which LD_ABS/LD_IND take relative to the
// skb's link-layer (SKF_LL_OFF) and network (SKF_NET_OFF) headers
// (bpf_internal_load_pointer_neg_helper), wherever skb->data stands.
struct frame_layout {
    int32_t ethertype;
    int32_t l3;
};
constexpr frame_layout tap_layout{12, 14};
constexpr frame_layout fanout_layout{SKF_LL_OFF + 12, SKF_NET_OFF};

// frame_steer_hash (steering.cpp) as eBPF; the C++ it mirrors is quoted on
// the right. Register use: r0 load results and scratch, r6 the skb, r7 the IP
// header length (the ports' offset from l3), r8 the hash state, r9 the port
// word.
//
// Layout, every jump forward:
//
//   EtherType     IPv4 -> ipv4; not IPv6 -> zero
//   (IPv6)        checks; r8 = fold(src) ^ fold(dst); r7 = 40; ja ports
//   ipv4:         checks; r7 = 4 * IHL; r8 = src ^ dst
//   ports:        the port word, the mixing, return x & 0xffff
//   zero:         return 0
constexpr program build_steering_program(frame_layout layout) noexcept {
    const int32_t l3 = layout.l3;
    program p;
    // Forward jumps are emitted with offset 0 and patched once their target
    // is placed.
    enum label : uint8_t { ipv4, ports, zero, n_labels };
    // Where each label was placed; 0 until then, which no jump can reach
    // forward, so a jump to an unplaced label fails the check below too.
    std::array<std::size_t, n_labels> at{};
    struct fixup {
        std::size_t from;  // the jump instruction
        label to;
    };
    std::array<fixup, 16> fixups{};
    std::size_t n_fixups = 0;
    const auto emit = [&p](bpf_insn i) { p.insns[p.len++] = i; };
    const auto place = [&](label l) { at[l] = p.len; };
    const auto jump_to = [&](label l, bpf_insn i) {
        fixups[n_fixups++] = {p.len, l};
        emit(i);
    };
    // Go to `l` when `reg <op> imm`.
    const auto jump_if = [&](label l, uint8_t op, uint8_t reg, int32_t imm) {
        jump_to(l, jmp_imm(op, reg, imm, 0));
    };
    // Return 0 (queue 0) when `reg <op> imm`.
    const auto zero_if = [&](uint8_t op, uint8_t reg, int32_t imm) { jump_if(zero, op, reg, imm); };
    // x ^= x >> shift, on r8 with r0 as scratch.
    const auto xor_shift = [&](uint32_t shift) {
        emit(mov64_reg(r0, r8));
        emit(alu32_imm(BPF_RSH, r0, shift));
        emit(alu32_reg(BPF_XOR, r8, r0));
    };

    // An assembler listing reads best with its comments in one column.
    // clang-format off
    emit(mov64_reg(r6, r1));                    // LD_ABS/LD_IND find the skb in r6
    emit(ld_abs(BPF_H, layout.ethertype));      // EtherType
    jump_if(ipv4, BPF_JEQ, r0, 0x0800);         //   IPv4: its block below
    zero_if(BPF_JNE, r0, 0x86dd);               //   neither IPv4 nor IPv6

    // IPv6 (RFC 8200 §3): a fixed 40-byte header.
    emit(ld_abs(BPF_B, l3));                    // version << 4 | traffic class
    emit(alu32_imm(BPF_RSH, r0, 4));            // r0 = version
    zero_if(BPF_JNE, r0, 6);                    //   version != 6
    emit(ld_abs(BPF_B, l3 + 6));                // next header
    emit(jmp_imm(BPF_JEQ, r0, 6, 1));           //   TCP: skip the UDP test
    zero_if(BPF_JNE, r0, 17);                   //   neither: extension headers, ICMPv6, ...
    emit(ld_abs(BPF_W, l3 + 8));                // source address, word 0
    emit(mov64_reg(r8, r0));
    for (int32_t w = 12; w < 40; w += 4) {      // the other 3 source and 4 destination words
        emit(ld_abs(BPF_W, l3 + w));
        emit(alu32_reg(BPF_XOR, r8, r0));       // x = fold(ip_a) ^ fold(ip_b)
    }
    emit(mov64_imm(r7, 40));                    // the ports follow the fixed header
    jump_to(ports, ja(0));                      // on to the shared port load

    // IPv4 (RFC 791 §3.1).
    place(ipv4);
    emit(ld_abs(BPF_B, l3));                    // version << 4 | IHL
    emit(mov64_reg(r7, r0));
    emit(alu32_imm(BPF_AND, r7, 0x0f));         // r7 = IHL
    emit(alu32_imm(BPF_RSH, r0, 4));            // r0 = version
    zero_if(BPF_JNE, r0, 4);                    //   version != 4
    zero_if(BPF_JLT, r7, 5);                    //   IHL < 5
    emit(alu32_imm(BPF_LSH, r7, 2));            // r7 = 4 * IHL
    emit(ld_abs(BPF_H, l3 + 6));                // flags | fragment offset
    emit(alu32_imm(BPF_AND, r0, 0x3fff));
    zero_if(BPF_JNE, r0, 0);                    //   MF or an offset: a fragment
    emit(ld_abs(BPF_B, l3 + 9));                // protocol
    emit(jmp_imm(BPF_JEQ, r0, 6, 1));           //   TCP: skip the UDP test
    zero_if(BPF_JNE, r0, 17);                   //   neither TCP nor UDP
    emit(ld_abs(BPF_W, l3 + 12));               // source address
    emit(mov64_reg(r8, r0));
    emit(ld_abs(BPF_W, l3 + 16));               // destination address
    emit(alu32_reg(BPF_XOR, r8, r0));           // x = ip_a ^ ip_b

    // Both families: the ports at l3 + r7, then the mixing.
    place(ports);
    emit(ld_ind(BPF_W, r7, l3));                // source port << 16 | destination port
    emit(mov64_reg(r9, r0));
    emit(alu32_imm(BPF_RSH, r9, 16));
    emit(alu32_imm(BPF_AND, r0, 0xffff));
    emit(alu32_reg(BPF_XOR, r9, r0));           // port_a ^ port_b
    emit(alu32_imm(BPF_MUL, r9, 0x9e3779b1u));
    emit(alu32_reg(BPF_XOR, r8, r9));           // x ^= (port_a ^ port_b) * 0x9e3779b1
    xor_shift(16);                              // x ^= x >> 16
    emit(alu32_imm(BPF_MUL, r8, 0x85ebca6bu));  // x *= 0x85ebca6b
    xor_shift(13);                              // x ^= x >> 13
    emit(alu32_imm(BPF_MUL, r8, 0xc2b2ae35u));  // x *= 0xc2b2ae35
    xor_shift(16);                              // x ^= x >> 16
    emit(alu32_imm(BPF_AND, r8, 0xffff));
    emit(mov64_reg(r0, r8));                    // return x & 0xffff
    emit(exit_insn());

    place(zero);
    emit(mov64_imm(r0, 0));                     // return 0
    emit(exit_insn());
    // clang-format on

    for (std::size_t k = 0; k < n_fixups; ++k) {
        const fixup f = fixups[k];
        if (at[f.to] <= f.from)
            p.jumps_forward = false;
        p.insns[f.from].off = static_cast<int16_t>(at[f.to] - f.from - 1);
    }
    return p;
}

constexpr program steering_program = build_steering_program(tap_layout);
constexpr program fanout_program = build_steering_program(fanout_layout);
static_assert(steering_program.len < program::capacity);
static_assert(steering_program.jumps_forward);
static_assert(fanout_program.len == steering_program.len);

uint64_t ptr_u64(const void *p) noexcept {
    return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p));
}

long sys_bpf(int cmd, bpf_attr *attr) noexcept {
    return syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

// One BPF_PROG_LOAD of `prog`; a log of level 1 into `log` when it is not empty.
int prog_load(const program &prog, std::span<char> log) noexcept {
    static constexpr char license[] = "GPL";  // not required for socket filters
    bpf_attr attr;
    std::memset(&attr, 0, sizeof attr);  // a union: {} would clear only its first member
    attr.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
    attr.insns = ptr_u64(prog.insns.data());
    attr.insn_cnt = static_cast<uint32_t>(prog.len);
    attr.license = ptr_u64(license);
    if (!log.empty()) {
        attr.log_buf = ptr_u64(log.data());
        attr.log_size = static_cast<uint32_t>(log.size());
        attr.log_level = 1;
    }
    std::memcpy(attr.prog_name, "ferry_steer", sizeof("ferry_steer"));
    return static_cast<int>(sys_bpf(BPF_PROG_LOAD, &attr));
}

std::string errno_text(int err) {
    return std::string(std::strerror(err)) + " (errno " + std::to_string(err) + ")";
}

result<int, std::string> load(const program &prog, const char *what) {
    // Load without a log first: a verbose log larger than the buffer would
    // itself fail the load (ENOSPC). Only on failure load again for the log.
    const int fd = prog_load(prog, {});
    if (fd >= 0)
        return fd;
    const int err = errno;
    std::string msg = std::string(what) + ": BPF_PROG_LOAD failed: " + errno_text(err);
    if (err == EPERM)
        msg += "; needs CAP_BPF or CAP_SYS_ADMIN";  // short: /ferry/ports' strings end at 127
    std::string log(64 * 1024, '\0');
    const int retry = prog_load(prog, log);
    if (retry >= 0) {
        // Should not happen; take it rather than fail.
        return retry;
    }
    log.resize(std::strlen(log.c_str()));
    if (!log.empty())
        msg += "; verifier log:\n" + log;
    return unexpected{msg};
}

}  // namespace

result<int, std::string> load_tap_steering_program() {
    return load(steering_program, "tap steering");
}

result<int, std::string> load_fanout_steering_program() {
    return load(fanout_program, "fanout steering");
}

result<unsigned, std::string> attach_tap_steering(std::string_view ifname, int prog_fd) {
    if (ifname.empty() || ifname.size() >= IFNAMSIZ)
        return unexpected{"tap steering: bad interface name '" + std::string(ifname) + "'"};
    DIR *dir = opendir("/proc/self/fd");
    if (dir == nullptr)
        return unexpected{"tap steering: opendir /proc/self/fd: " + errno_text(errno)};

    // Another thread may close an fd while we scan and the number be reused;
    // the TUNGETIFF name check then still finds only queues of `ifname`. Call
    // this at start-up, before the workers run.
    static constexpr std::string_view tun_path = "/dev/net/tun";
    unsigned set = 0, detached = 0;
    std::string error;
    while (const dirent *e = readdir(dir)) {
        char *end = nullptr;
        const long n = std::strtol(e->d_name, &end, 10);
        if (end == e->d_name || *end != '\0' || n < 0 || n == dirfd(dir))
            continue;
        const int fd = static_cast<int>(n);
        const std::string link = std::string("/proc/self/fd/") + e->d_name;
        char target[64];
        const ssize_t len = readlink(link.c_str(), target, sizeof target);
        if (len != static_cast<ssize_t>(tun_path.size()) ||
            std::string_view(target, static_cast<std::size_t>(len)) != tun_path)
            continue;

        ifreq ifr{};
        if (ioctl(fd, TUNGETIFF, &ifr) != 0)
            continue;  // not bound to a device (EBADFD): nobody's queue
        if (std::string_view(ifr.ifr_name, strnlen(ifr.ifr_name, IFNAMSIZ)) != ifname)
            continue;
        // A detached queue (net_tap's keep-alive fd) is reported with
        // IFF_DETACH_QUEUE; on kernels where it is refused instead, EBADFD.
        if ((ifr.ifr_flags & IFF_DETACH_QUEUE) != 0) {
            ++detached;
            continue;
        }
        int pfd = prog_fd;
        if (ioctl(fd, TUNSETSTEERINGEBPF, &pfd) != 0) {
            if (errno == EBADFD) {
                ++detached;
                continue;
            }
            error = "tap steering: TUNSETSTEERINGEBPF on fd " + std::to_string(fd) + " of " +
                    std::string(ifname) + ": " + errno_text(errno);
            break;
        }
        ++set;
    }
    closedir(dir);

    if (!error.empty())
        return unexpected{error};
    if (set == 0)
        return unexpected{"tap steering: this process holds no attached queue fd of tap '" +
                          std::string(ifname) + "' (" + std::to_string(detached) +
                          " detached); call after the queues are set up"};
    return set;
}

}  // namespace ferry::net
