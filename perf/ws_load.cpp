// A WebSocket (RFC 6455) echo server and a closed-loop load client, for
// perf/ws_bench.py: messages/s and round-trip latency through ferry against
// a direct connection. Both ends are this one epoll loop, so that neither
// limits what is measured the way a Python peer would.
//
//   ws_load server ADDR PORT
//       Accepts, answers the opening handshake (Sec-WebSocket-Accept:
//       base64(SHA-1(key + GUID))), echoes every data frame (opcode kept,
//       unmasked), answers ping with pong and close with close. Prints
//       "listening" once bound.
//   ws_load client ADDR PORT CONNS SECONDS BYTES [--warmup S]
//       CONNS connections, each sends one masked binary message of BYTES,
//       waits for its echo, sends the next; after the warm-up each round
//       trip is a sample. Prints one JSON line: conns, bytes, messages,
//       msgs_per_s, p50_us, p99_us, p999_us, max_us, errors.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace {

uint64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}

// SHA-1 (FIPS 180-4), for the handshake's accept value only.
std::string sha1(const std::string &msg) {
    uint32_t h[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
    std::string m = msg;
    const uint64_t bits = uint64_t(msg.size()) * 8;
    m += char(0x80);
    while (m.size() % 64 != 56) m += char(0);
    for (int i = 7; i >= 0; --i) m += char((bits >> (i * 8)) & 0xff);
    auto rol = [](uint32_t x, int n) { return (x << n) | (x >> (32 - n)); };
    for (size_t off = 0; off < m.size(); off += 64) {
        uint32_t w[80];
        for (int i = 0; i < 16; ++i)
            w[i] = uint32_t(uint8_t(m[off + 4 * i])) << 24 | uint32_t(uint8_t(m[off + 4 * i + 1])) << 16 |
                   uint32_t(uint8_t(m[off + 4 * i + 2])) << 8 | uint32_t(uint8_t(m[off + 4 * i + 3]));
        for (int i = 16; i < 80; ++i) w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
        uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
        for (int i = 0; i < 80; ++i) {
            uint32_t f, k;
            if (i < 20) f = (b & c) | (~b & d), k = 0x5A827999;
            else if (i < 40) f = b ^ c ^ d, k = 0x6ED9EBA1;
            else if (i < 60) f = (b & c) | (b & d) | (c & d), k = 0x8F1BBCDC;
            else f = b ^ c ^ d, k = 0xCA62C1D6;
            const uint32_t t = rol(a, 5) + f + e + k + w[i];
            e = d, d = c, c = rol(b, 30), b = a, a = t;
        }
        h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e;
    }
    std::string out;
    for (uint32_t v : h)
        for (int i = 3; i >= 0; --i) out += char((v >> (i * 8)) & 0xff);
    return out;
}

std::string base64(const std::string &in) {
    static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    size_t i = 0;
    for (; i + 2 < in.size(); i += 3) {
        const uint32_t v = uint32_t(uint8_t(in[i])) << 16 | uint32_t(uint8_t(in[i + 1])) << 8 |
                           uint8_t(in[i + 2]);
        out += t[v >> 18], out += t[(v >> 12) & 63], out += t[(v >> 6) & 63], out += t[v & 63];
    }
    if (i + 1 == in.size()) {
        const uint32_t v = uint32_t(uint8_t(in[i])) << 16;
        out += t[v >> 18], out += t[(v >> 12) & 63], out += "==";
    } else if (i + 2 == in.size()) {
        const uint32_t v = uint32_t(uint8_t(in[i])) << 16 | uint32_t(uint8_t(in[i + 1])) << 8;
        out += t[v >> 18], out += t[(v >> 12) & 63], out += t[(v >> 6) & 63], out += '=';
    }
    return out;
}

std::string accept_of(const std::string &key) {
    return base64(sha1(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"));
}

// A frame header for `len` payload bytes; masked with `mask` when given.
std::string frame_head(uint8_t opcode, uint64_t len, const uint8_t *mask) {
    std::string h;
    h += char(0x80 | opcode);
    const uint8_t m = mask != nullptr ? 0x80 : 0;
    if (len < 126) {
        h += char(m | len);
    } else if (len < 65536) {
        h += char(m | 126), h += char(len >> 8), h += char(len & 0xff);
    } else {
        h += char(m | 127);
        for (int i = 7; i >= 0; --i) h += char((len >> (i * 8)) & 0xff);
    }
    if (mask != nullptr) h.append(reinterpret_cast<const char *>(mask), 4);
    return h;
}

// One complete frame at the front of `buf`: its size in bytes (0: not yet).
struct frame {
    uint8_t opcode = 0;
    size_t total = 0, payload_off = 0;
    uint64_t len = 0;
    bool masked = false;
    uint8_t mask[4] = {};
};
bool parse_frame(const std::string &buf, frame &f) {
    if (buf.size() < 2) return false;
    f.opcode = uint8_t(buf[0]) & 0x0f;
    f.masked = (uint8_t(buf[1]) & 0x80) != 0;
    uint64_t len = uint8_t(buf[1]) & 0x7f;
    size_t off = 2;
    if (len == 126) {
        if (buf.size() < 4) return false;
        len = uint64_t(uint8_t(buf[2])) << 8 | uint8_t(buf[3]);
        off = 4;
    } else if (len == 127) {
        if (buf.size() < 10) return false;
        len = 0;
        for (int i = 0; i < 8; ++i) len = len << 8 | uint8_t(buf[2 + i]);
        off = 10;
    }
    if (f.masked) {
        if (buf.size() < off + 4) return false;
        std::memcpy(f.mask, buf.data() + off, 4);
        off += 4;
    }
    if (buf.size() < off + len) return false;
    f.len = len;
    f.payload_off = off;
    f.total = off + len;
    return true;
}

bool send_all(int fd, const std::string &s) {
    size_t off = 0;
    while (off < s.size()) {
        const ssize_t n = send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;  // small messages: rare
        if (n <= 0) return false;
        off += size_t(n);
    }
    return true;
}

sockaddr_in addr_of(const char *a, const char *p) {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(uint16_t(std::atoi(p)));
    if (inet_pton(AF_INET, a, &sa.sin_addr) != 1) {
        std::fprintf(stderr, "ws_load: bad address %s\n", a);
        std::exit(2);
    }
    return sa;
}

// ---- server
struct sconn {
    std::string in;
    bool open = false;  // handshake done
};

int server(const char *a, const char *p) {
    const int ls = socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    const sockaddr_in sa = addr_of(a, p);
    if (bind(ls, reinterpret_cast<const sockaddr *>(&sa), sizeof sa) != 0 || listen(ls, 1024) != 0) {
        std::perror("ws_load server: bind/listen");
        return 1;
    }
    const int ep = epoll_create1(0);
    epoll_event ev{EPOLLIN, {.fd = ls}};
    epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
    std::vector<sconn> conns(65536);
    std::printf("listening\n");
    std::fflush(stdout);
    epoll_event evs[256];
    char rb[65536];
    for (;;) {
        const int n = epoll_wait(ep, evs, 256, -1);
        for (int i = 0; i < n; ++i) {
            const int fd = evs[i].data.fd;
            if (fd == ls) {
                const int c = accept(ls, nullptr, nullptr);
                if (c < 0 || c >= int(conns.size())) {
                    if (c >= 0) close(c);
                    continue;
                }
                setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                conns[c] = sconn{};
                epoll_event ce{EPOLLIN, {.fd = c}};
                epoll_ctl(ep, EPOLL_CTL_ADD, c, &ce);
                continue;
            }
            sconn &s = conns[fd];
            const ssize_t r = recv(fd, rb, sizeof rb, 0);
            bool drop = r <= 0;
            if (r > 0) s.in.append(rb, size_t(r));
            if (!drop && !s.open) {
                const size_t e = s.in.find("\r\n\r\n");
                if (e != std::string::npos) {
                    std::string key;
                    size_t k = s.in.find("Sec-WebSocket-Key:");
                    if (k == std::string::npos) k = s.in.find("sec-websocket-key:");
                    if (k != std::string::npos) {
                        k += 18;
                        while (s.in[k] == ' ') ++k;
                        key = s.in.substr(k, s.in.find("\r\n", k) - k);
                    }
                    drop = key.empty() ||
                           !send_all(fd, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                                         "Connection: Upgrade\r\nSec-WebSocket-Accept: " +
                                             accept_of(key) + "\r\n\r\n");
                    s.in.erase(0, e + 4);
                    s.open = true;
                }
            }
            frame f;
            while (!drop && s.open && parse_frame(s.in, f)) {
                std::string payload = s.in.substr(f.payload_off, f.len);
                if (f.masked)
                    for (size_t j = 0; j < payload.size(); ++j) payload[j] ^= char(f.mask[j & 3]);
                s.in.erase(0, f.total);
                const uint8_t op = f.opcode == 9 ? 10 : f.opcode;
                if (f.opcode == 10) continue;
                drop = !send_all(fd, frame_head(op, payload.size(), nullptr) + payload);
                if (f.opcode == 8) drop = true;
            }
            if (drop) {
                epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
                close(fd);
            }
        }
    }
}

// ---- client
struct cconn {
    int fd = -1;
    bool open = false;
    std::string in, expect_accept;
    uint64_t sent_at = 0;
};

int client(const char *a, const char *p, int nconns, double seconds, size_t bytes, double warmup) {
    const sockaddr_in sa = addr_of(a, p);
    const int ep = epoll_create1(0);
    std::vector<cconn> cs(static_cast<size_t>(nconns));
    const std::string payload(bytes, 'w');
    uint8_t mask[4] = {0x12, 0x34, 0x56, 0x78};
    std::string masked = payload;
    for (size_t j = 0; j < masked.size(); ++j) masked[j] ^= char(mask[j & 3]);
    const std::string msg = frame_head(2, bytes, mask) + masked;
    uint64_t errors = 0;
    const int one = 1;
    for (int i = 0; i < nconns; ++i) {
        cconn &c = cs[size_t(i)];
        c.fd = socket(AF_INET, SOCK_STREAM, 0);
        setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(c.fd, reinterpret_cast<const sockaddr *>(&sa), sizeof sa) != 0) {
            std::perror("ws_load client: connect");
            return 1;
        }
        const std::string key = base64(std::string("ferry-ws-load-") + char('a' + i % 26) + "!!");
        c.expect_accept = accept_of(key);
        send_all(c.fd, std::string("GET /bench HTTP/1.1\r\nHost: ") + a + ":" + p +
                           "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " +
                           key + "\r\nSec-WebSocket-Version: 13\r\n\r\n");
        epoll_event ev{EPOLLIN, {.u32 = uint32_t(i)}};
        epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev);
    }
    std::vector<uint32_t> lat;
    lat.reserve(1 << 22);
    const uint64_t t0 = now_ns();
    const uint64_t measure_from = t0 + uint64_t(warmup * 1e9);
    const uint64_t end = measure_from + uint64_t(seconds * 1e9);
    uint64_t measured = 0;
    epoll_event evs[256];
    char rb[65536];
    int live = nconns;
    while (live > 0 && now_ns() < end) {
        const int n = epoll_wait(ep, evs, 256, 100);
        for (int i = 0; i < n; ++i) {
            cconn &c = cs[evs[i].data.u32];
            const ssize_t r = recv(c.fd, rb, sizeof rb, 0);
            if (r <= 0) {
                ++errors;
                epoll_ctl(ep, EPOLL_CTL_DEL, c.fd, nullptr);
                --live;
                continue;
            }
            c.in.append(rb, size_t(r));
            if (!c.open) {
                const size_t e = c.in.find("\r\n\r\n");
                if (e == std::string::npos) continue;
                const std::string head = c.in.substr(0, e);
                if (head.rfind("HTTP/1.1 101", 0) != 0 || head.find(c.expect_accept) == std::string::npos) {
                    std::fprintf(stderr, "ws_load: bad handshake answer: %s\n", head.c_str());
                    return 1;
                }
                c.in.erase(0, e + 4);
                c.open = true;
                c.sent_at = now_ns();
                send_all(c.fd, msg);
                continue;
            }
            frame f;
            while (parse_frame(c.in, f)) {
                const uint64_t t = now_ns();
                if (f.len != bytes || f.masked) ++errors;
                c.in.erase(0, f.total);
                if (c.sent_at >= measure_from && t <= end) {
                    lat.push_back(uint32_t(std::min<uint64_t>((t - c.sent_at) / 1000, UINT32_MAX)));
                    ++measured;
                }
                c.sent_at = t;
                if (!send_all(c.fd, msg)) ++errors;
            }
        }
    }
    for (cconn &c : cs) {
        const std::string bye = frame_head(8, 2, mask) + std::string{char(0x03 ^ 0x12), char(0xe8 ^ 0x34)};
        send_all(c.fd, bye);
        close(c.fd);
    }
    std::sort(lat.begin(), lat.end());
    auto pct = [&](double q) -> uint32_t {
        return lat.empty() ? 0 : lat[std::min(lat.size() - 1, size_t(q * double(lat.size())))];
    };
    std::printf("{\"conns\": %d, \"bytes\": %zu, \"messages\": %llu, \"msgs_per_s\": %.1f, "
                "\"p50_us\": %u, \"p99_us\": %u, \"p999_us\": %u, \"max_us\": %u, \"errors\": %llu}\n",
                nconns, bytes, (unsigned long long)measured, double(measured) / seconds, pct(0.50),
                pct(0.99), pct(0.999), lat.empty() ? 0 : lat.back(), (unsigned long long)errors);
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc == 4 && std::strcmp(argv[1], "server") == 0) return server(argv[2], argv[3]);
    if (argc == 3 && std::strcmp(argv[1], "accept") == 0) {  // RFC 6455's example checks it
        std::printf("%s\n", accept_of(argv[2]).c_str());
        return 0;
    }
    if (argc >= 7 && std::strcmp(argv[1], "client") == 0) {
        double warmup = 1.0;
        for (int i = 7; i + 1 < argc; ++i)
            if (std::strcmp(argv[i], "--warmup") == 0) warmup = std::atof(argv[i + 1]);
        return client(argv[2], argv[3], std::atoi(argv[4]), std::atof(argv[5]),
                      size_t(std::atoll(argv[6])), warmup);
    }
    std::fprintf(stderr,
                 "usage: ws_load server ADDR PORT\n"
                 "       ws_load client ADDR PORT CONNS SECONDS BYTES [--warmup S]\n");
    return 2;
}
