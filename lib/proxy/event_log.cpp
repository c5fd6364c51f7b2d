// The event log's pure parts (events.h): how a down event's cause reads, and
// the per-server rate limit. The producing side is health.cpp, the writer
// thread app/ferry/event_log.cpp.
#include "ferry/proxy/events.h"

namespace ferry::proxy {

std::string describe_cause(const server_event &e) {
    if (e.status != 0) return "health check answered " + std::to_string(e.status);
    switch (e.why) {
        case term_reason::upstream_connect_refused:
            return "connect refused";
        case term_reason::upstream_reset:
            return "connection reset";
        case term_reason::upstream_closed:
            return "closed before the response";
        case term_reason::upstream_timeout:
            return std::string("timeout (") + name(e.timeout) + ")";
        case term_reason::upstream_bad_response:
            return "bad response";
        default:
            return e.check ? "health check failed" : "failed";
    }
}

event_limiter::event_limiter(size_t servers, uint32_t burst, uint64_t window_ns)
    : st_(servers), burst_(burst), window_(window_ns) {}

bool event_limiter::admit(size_t server, bool down, uint64_t now) noexcept {
    state &s = st_[server];
    if (!s.seen || now - s.start >= window_) {
        // A new window; the last one's summary, if it is owed, comes at the
        // next summaries().
        if (s.suppressed != 0) s.due = true;
        s.seen = true;
        s.start = now;
        s.n = 0;
    }
    s.last_down = down;
    if (s.n < burst_) {
        ++s.n;
        return true;
    }
    ++s.suppressed;
    return false;
}

}  // namespace ferry::proxy
