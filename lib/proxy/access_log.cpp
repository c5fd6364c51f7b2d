// Access-log records (access_log.h): what a request's line needs, copied
// while its head is at hand, and the record handed to the lcore's ring when
// the request ends.
#include "internal.h"

#include <algorithm>
#include <cstring>

namespace ferry::proxy {

namespace {

// Copies up to cap bytes of v into dst; sets len; true if v was cut.
template <class Len>
bool clip(char *dst, uint32_t cap, std::string_view v, Len &len) noexcept {
    const size_t n = std::min<size_t>(v.size(), cap);
    std::memcpy(dst, v.data(), n);
    len = static_cast<Len>(n);
    return n < v.size();
}

}  // namespace

void worker_proxy::set_access_log(access_log_sink *sink) {
    alog_ = sink;
    reserved_al_ = 0;
    if (sink != nullptr) {
        al_pending_.reserve(max_clients_);
        al_pending_.grow(clients_.made());  // client slots made before (none at start)
        reserved_al_ = al_pending_.reserved_bytes();
    }
}

access_record &worker_proxy::al_rec(const client &c) noexcept {
    return al_pending_[clients_.index_of(c)];
}

void worker_proxy::al_server(const client &c, int upstream, int server) noexcept {
    access_record &r = al_rec(c);
    r.server = static_cast<int16_t>(server);
    const config::server_endpoint ep = endpoint_of(upstream, server);
    r.server_addr = ep.addr;
    r.server_port = ep.port;
}

void worker_proxy::al_reason(client &c, term_reason why) noexcept {
    if (!c.al_open) return;
    access_record &r = al_rec(c);
    if (r.reason == term_reason::none) r.reason = why;
}

// Everything the line needs of the head, copied now: the head buffer is
// reused for the next request.
void worker_proxy::al_begin(client &c, const http::request &req, uint64_t now) noexcept {
    access_record &r = al_rec(c);
    r.t_start = c.t_req != 0 ? c.t_req : now;
    r.flags = access_record::f_parsed;
    r.version_minor = req.version_minor;
    r.client_addr = c.peer_addr;
    r.client_port = c.peer_port;
    r.upstream = r.server = -1;
    r.uct_ns = r.urt_ns = access_record::no_time;
    r.timeout = timeout_kind::none;
    r.reason = term_reason::none;
    std::string_view referer, agent;
    for (const http::header &h : req.headers) {
        if (referer.empty() && iequals(h.name, "referer"))
            referer = h.value;
        else if (agent.empty() && iequals(h.name, "user-agent"))
            agent = h.value;
    }
    bool cut = clip(r.method, access_record::method_cap, req.method_text, r.method_len);
    cut |= clip(r.target, access_record::target_cap, req.target, r.target_len);
    cut |= clip(r.host, access_record::host_cap, req.host.empty() ? req.authority : req.host,
                r.host_len);
    cut |= clip(r.referer, access_record::referer_cap, referer, r.referer_len);
    cut |= clip(r.user_agent, access_record::user_agent_cap, agent, r.user_agent_len);
    if (cut) r.flags |= access_record::f_truncated;
    c.al_open = true;
    c.al_status = 0;
    c.resp_bytes = 0;
}

// A head that did not parse: its raw first line (up to CR or LF) stands for
// the request line; nothing else of it is trusted.
void worker_proxy::al_unparsed(client &c, uint64_t now) noexcept {
    access_record &r = al_rec(c);
    r.t_start = c.t_req != 0 ? c.t_req : now;
    c.t_req = 0;
    r.flags = 0;
    r.version_minor = 1;
    r.client_addr = c.peer_addr;
    r.client_port = c.peer_port;
    r.upstream = r.server = -1;
    r.uct_ns = r.urt_ns = access_record::no_time;
    r.timeout = timeout_kind::none;
    r.reason = term_reason::none;
    r.method_len = 0;
    r.host_len = r.referer_len = r.user_agent_len = 0;
    const std::string_view buf(c.buf, c.buf_len);
    const size_t eol = buf.find_first_of("\r\n");
    if (clip(r.target, access_record::target_cap, buf.substr(0, eol), r.target_len))
        r.flags |= access_record::f_truncated;
    c.al_open = true;
    c.al_status = 0;
    c.resp_bytes = 0;
}

// A response head from the upstream for c's request (local side; a remote
// one arrives in on_client_message). urt/uct count from the moment the
// request was given to the connection (u.t_sent); a reused connection's
// connect time is 0.
void worker_proxy::al_head(client &c, const upconn &u, uint64_t now) noexcept {
    access_record &r = al_rec(c);
    if (r.urt_ns == access_record::no_time) {
        r.urt_ns = now - std::min(now, u.t_sent);
        r.uct_ns = u.reused            ? 0
                   : u.t_conn != 0     ? u.t_conn - std::min(u.t_conn, u.t_sent)
                                       : access_record::no_time;
    }
}

// Every request's end (answered, cut or refused) comes here, access log or
// not: the request latency histogram first.
void worker_proxy::al_end(client &c, uint16_t status_if_none, bool aborted, uint64_t now) noexcept {
    if (c.t_started != 0) {  // a parsed request: once each
        req_hist_.observe(now - std::min(now, c.t_started));
        c.t_started = 0;
        const uint16_t status = c.al_status != 0 ? c.al_status : status_if_none;
        if (status >= 100 && status < 600)
            route_ctr_[route_index(c.listener, c.ctr_route, status / 100u)].inc();
    }
    if (!c.al_open) return;  // never set without a sink
    c.al_open = false;
    access_record &r = al_rec(c);
    access_record *slot = alog_->reserve();
    if (slot == nullptr) {
        ctr_.access_log_dropped.inc();  // the writer fell behind: never wait for it
        return;
    }
    r.t_end = now;
    r.bytes_sent = c.resp_bytes;
    r.body_bytes = (r.flags & access_record::f_has_body) ? c.framer.payload_bytes() : 0;
    r.status = c.al_status != 0 ? c.al_status : status_if_none;
    if (aborted) r.flags |= access_record::f_aborted;
    std::memcpy(static_cast<void *>(slot), &r, sizeof r);
    alog_->commit();
    ctr_.access_log_records.inc();
}

}  // namespace ferry::proxy
