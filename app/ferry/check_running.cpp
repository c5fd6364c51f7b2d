// ferry --check --running (check_running.h).
#include "check_running.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace ferry::app {
namespace {

// Where DPDK puts a file prefix's runtime directory (eal_get_runtime_dir):
// /var/run for root, $XDG_RUNTIME_DIR (else /tmp) for anyone else.
std::string socket_path(const std::string &prefix) {
    std::string base = "/var/run";
    if (getuid() != 0) {
        const char *x = std::getenv("XDG_RUNTIME_DIR");
        base = x != nullptr && *x != '\0' ? x : "/tmp";
    }
    return base + "/dpdk/" + prefix + "/dpdk_telemetry.v2";
}

// The JSON string starting at text[i] (a '"'), unescaped; i ends past it.
std::string json_string(const std::string &text, size_t &i) {
    std::string out;
    for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\' && i + 1 < text.size()) {
            ++i;
            out += text[i] == 'n' ? '\n' : text[i] == 't' ? '\t' : text[i];
        } else {
            out += text[i];
        }
    }
    ++i;
    return out;
}

// The value of "key" in the reply: a string, or the strings of an array.
std::vector<std::string> json_values(const std::string &text, const std::string &key) {
    std::vector<std::string> out;
    size_t i = text.find("\"" + key + "\":");
    if (i == std::string::npos) return out;
    i += key.size() + 3;
    while (i < text.size() && text[i] == ' ') ++i;
    if (i < text.size() && text[i] == '"') {
        out.push_back(json_string(text, i));
        return out;
    }
    if (i >= text.size() || text[i] != '[') return out;
    for (++i; i < text.size() && text[i] != ']';) {
        if (text[i] == '"')
            out.push_back(json_string(text, i));
        else
            ++i;
    }
    return out;
}

}  // namespace

int check_against_running(const std::string &prefix, const std::string &config_path) {
    char abs[PATH_MAX];
    if (realpath(config_path.c_str(), abs) == nullptr) {
        std::fprintf(stderr, "ferry: %s: %s\n", config_path.c_str(), std::strerror(errno));
        return 1;
    }
    const std::string path = socket_path(prefix);
    const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    if (fd < 0 || path.size() >= sizeof sa.sun_path) {
        std::fprintf(stderr, "ferry: --running %s: cannot make a socket for %s\n", prefix.c_str(),
                     path.c_str());
        if (fd >= 0) close(fd);
        return 1;
    }
    std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
    if (connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0) {
        std::fprintf(stderr,
                     "ferry: --running %s: no ferry answers on %s (%s): is it running with EAL "
                     "--file-prefix %s, and are you its user?\n",
                     prefix.c_str(), path.c_str(), std::strerror(errno), prefix.c_str());
        close(fd);
        return 1;
    }
    std::vector<char> buf(1 << 16);
    const ssize_t info = recv(fd, buf.data(), buf.size(), 0);  // the greeting
    const std::string cmd = std::string("/ferry/reload,check,") + abs;
    ssize_t n = -1;
    if (info > 0 && send(fd, cmd.data(), cmd.size(), 0) == static_cast<ssize_t>(cmd.size()))
        n = recv(fd, buf.data(), buf.size(), 0);
    close(fd);
    if (n <= 0) {
        std::fprintf(stderr, "ferry: --running %s: no answer to /ferry/reload,check\n",
                     prefix.c_str());
        return 1;
    }
    const std::string reply(buf.data(), static_cast<size_t>(n));
    const std::vector<std::string> result = json_values(reply, "result");
    if (result.empty()) {
        // An older ferry, or a refusal of the command itself ({"error": ...}).
        std::fprintf(stderr, "ferry: --running %s: unexpected answer: %s\n", prefix.c_str(),
                     reply.c_str());
        return 1;
    }
    const std::vector<std::string> gen = json_values(reply, "config_hash");
    std::printf("running ferry (file prefix %s, configuration %s): a reload of %s %s\n",
                prefix.c_str(), gen.empty() ? "?" : gen[0].c_str(), abs,
                result[0] == "would_apply" ? "would apply:"
                : result[0] == "unchanged" ? "would change nothing"
                                           : "would be refused:");
    for (const std::string &c : json_values(reply, "changes")) std::printf("  %s\n", c.c_str());
    // Each error without the file's path (the running ferry leaves it out:
    // telemetry cuts strings at 127 bytes; its log has them whole).
    for (const std::string &e : json_values(reply, "errors"))
        std::printf("  %s%s\n", e.starts_with(":") ? abs : "", e.c_str());
    return result[0] == "would_apply" || result[0] == "unchanged" ? 0 : 1;
}

}  // namespace ferry::app
