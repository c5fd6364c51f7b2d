// Seed corpus for fuzz_http: valid requests and responses (with Content-Length
// and chunked bodies, trailers, extensions, pipelining) and bare chunked
// bodies, so mutants reach every path of the head parsers, the serializer and
// the body framer.
#include <string>

#include "seeds.h"

std::vector<std::vector<uint8_t>> fuzz_seeds() {
    const std::string seeds[] = {
        "GET / HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n",
        "GET /a/b?c=d%20e HTTP/1.0\r\nConnection: keep-alive\r\nUser-Agent: x\r\n\r\n",
        "POST /submit HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\nContent-Type: text/plain\r\n"
        "\r\nhello world",
        "POST /up HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\nTE: trailers\r\n\r\n"
        "5;ext=\"v\"\r\nhello\r\n6\r\n world\r\n0\r\nX-Sum: 1\r\n\r\nGET /next HTTP/1.1\r\nHost: "
        "a\r\n\r\n",
        "GET http://example.com:8080/p?q HTTP/1.1\r\nHost: example.com\r\nConnection: close, "
        "X-A\r\n"
        "X-A: 1\r\nX-Forwarded-For: 203.0.113.1\r\nVia: 1.1 cdn\r\n\r\n",
        "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
        "OPTIONS * HTTP/1.1\r\nHost: [::1]:80\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n",
        "GET /ws HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nSet-Cookie: a=1\r\n\r\nhello",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n"
        "4\r\nWiki\r\n5;a=b\r\npedia\r\n0\r\nX-T: v\r\n\r\n",
        "HTTP/1.0 404 Not Found\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
        "HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\nContent-Length: 10\r\n\r\n",
        "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil close",
        "a;x=y;z=\"q\\\"\"\r\n0123456789\r\n0\r\n\r\n",
        "5\r\nhello\r\n0\r\nExpires: Wed, 21 Oct 2015 07:28:00 GMT\r\n\r\n",
    };
    std::vector<std::vector<uint8_t>> out;
    for (const std::string &s : seeds)
        out.emplace_back(s.begin(), s.end());
    return out;
}
