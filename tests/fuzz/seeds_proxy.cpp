// Seed scripts for fuzz_proxy (see its op encoding): common exchanges, so the
// mutations start from inputs that reach responses, bodies and timeouts.
#include <cstdint>
#include <string_view>
#include <vector>

#include "seeds.h"

namespace {

// op = kind | arg << 3 (fuzz_proxy.cpp).
constexpr uint8_t op(unsigned kind, unsigned arg) { return static_cast<uint8_t>(kind | arg << 3); }
// A canned piece (kind 7) by index, from a client (0) or an origin (1).
void piece(std::vector<uint8_t> &s, unsigned idx, unsigned from_origin) {
    s.push_back(op(7, idx));
    s.push_back(static_cast<uint8_t>(from_origin));
}
void raw(std::vector<uint8_t> &s, unsigned kind, std::string_view bytes) {
    s.push_back(op(kind, 0));
    s.push_back(static_cast<uint8_t>(bytes.size()));
    s.insert(s.end(), bytes.begin(), bytes.end());
}

}  // namespace

std::vector<std::vector<uint8_t>> fuzz_seeds() {
    std::vector<std::vector<uint8_t>> out;
    std::vector<uint8_t> s;
    // GET, 200 with Content-Length.
    piece(s, 0, 0), piece(s, 14, 1), piece(s, 9, 1);
    out.push_back(s), s.clear();
    // POST with a body; a chunked answer with a trailer.
    piece(s, 2, 0), piece(s, 9, 0), piece(s, 15, 1), piece(s, 10, 1), piece(s, 13, 1);
    out.push_back(s), s.clear();
    // A chunked upload with an extension; 204.
    piece(s, 4, 0), piece(s, 11, 0), piece(s, 12, 0), piece(s, 16, 1);
    out.push_back(s), s.clear();
    // Repeated Content-Length both ways.
    piece(s, 3, 0), raw(s, 0, "abc"), piece(s, 20, 1);
    out.push_back(s), s.clear();
    // No answer: the response timeout.
    piece(s, 0, 0), s.push_back(op(2, 15));
    out.push_back(s), s.clear();
    // HTTP/1.0 client, an origin that chunks anyway.
    piece(s, 5, 0), piece(s, 15, 1), piece(s, 10, 1), piece(s, 12, 1);
    out.push_back(s), s.clear();
    // Two clients, pipelining, 100-continue, a reset mid-body.
    s.push_back(op(3, 0));
    raw(s, 0, "GET /a HTTP/1.1\r\nHost: h\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\n\r\n");
    piece(s, 14, 1), piece(s, 9, 1), piece(s, 17, 1), piece(s, 14, 1), s.push_back(op(5, 1));
    out.push_back(s), s.clear();
    // HEAD and 304 with a length; 101 refused.
    piece(s, 1, 0), piece(s, 18, 1), piece(s, 0, 0), piece(s, 21, 1);
    out.push_back(s), s.clear();
    return out;
}
