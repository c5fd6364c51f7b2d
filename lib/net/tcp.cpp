#include "ferry/net/tcp.h"

#include <algorithm>

namespace ferry::net {

namespace {

constexpr uint8_t kind_of(tcp_option_kind k) noexcept {
    return static_cast<uint8_t>(k);
}

// Option sizes (kind and length octets included) as their RFCs fix them.
constexpr uint8_t mss_len = 4;             // RFC 9293 §3.2
constexpr uint8_t window_scale_len = 3;    // RFC 7323 §2.2
constexpr uint8_t sack_permitted_len = 2;  // RFC 2018 §2
constexpr uint8_t timestamps_len = 10;     // RFC 7323 §3.2
constexpr uint8_t sack_block_len = 8;      // RFC 2018 §3: two 32-bit edges

// Bytes of the groups emit() writes, NOP padding included.
constexpr std::size_t mss_group = 4;
constexpr std::size_t ts_group = 12;
constexpr std::size_t sack_permitted_group = 4;
constexpr std::size_t window_scale_group = 4;
constexpr std::size_t sack_header_group = 4;

}  // namespace

tcp_option_error tcp_options::parse(std::span<const uint8_t> opts, tcp_options &out) noexcept {
    out = tcp_options{};
    const std::size_t n = opts.size();
    std::size_t i = 0;
    while (i < n) {
        const uint8_t kind = opts[i];
        if (kind == kind_of(tcp_option_kind::eol)) {
            break;  // the rest is padding (RFC 9293 §3.2 "End of Option List")
        }
        if (kind == kind_of(tcp_option_kind::nop)) {
            ++i;
            continue;
        }
        if (n - i < 2) {
            return tcp_option_error::overrun;  // no room for the length octet
        }
        const uint8_t len = opts[i + 1];
        if (len < 2) {
            return tcp_option_error::bad_length;
        }
        if (len > n - i) {
            return tcp_option_error::overrun;
        }
        const uint8_t *v = opts.data() + i + 2;
        switch (static_cast<tcp_option_kind>(kind)) {
            case tcp_option_kind::mss:
                if (len != mss_len) {
                    return tcp_option_error::bad_size;
                }
                out.mss = wire::load_be16(v);
                break;
            case tcp_option_kind::window_scale:
                if (len != window_scale_len) {
                    return tcp_option_error::bad_size;
                }
                out.window_shift_clamped = v[0] > max_window_shift;
                out.window_shift = std::min(v[0], max_window_shift);
                break;
            case tcp_option_kind::sack_permitted:
                if (len != sack_permitted_len) {
                    return tcp_option_error::bad_size;
                }
                out.sack_permitted = true;
                break;
            case tcp_option_kind::sack: {
                const std::size_t body = len - 2u;
                const std::size_t blocks = body / sack_block_len;
                if (body % sack_block_len != 0 || blocks == 0 || blocks > max_sack_blocks) {
                    return tcp_option_error::bad_size;
                }
                out.sack_count = static_cast<uint8_t>(blocks);
                for (std::size_t b = 0; b < blocks; ++b) {
                    out.sack[b] = {seq_num(wire::load_be32(v + b * sack_block_len)),
                                   seq_num(wire::load_be32(v + b * sack_block_len + 4))};
                }
                for (std::size_t b = blocks; b < max_sack_blocks; ++b) {
                    out.sack[b] = {};
                }
                break;
            }
            case tcp_option_kind::timestamps:
                if (len != timestamps_len) {
                    return tcp_option_error::bad_size;
                }
                out.timestamps = tcp_timestamps{wire::load_be32(v), wire::load_be32(v + 4)};
                break;
            default:
                break;  // unknown kind: skipped by its length (RFC 9293 §3.1 MUST-6)
        }
        i += len;
    }
    return tcp_option_error::none;
}

namespace {

std::size_t non_sack_len(const tcp_options &o) noexcept {
    std::size_t len = o.mss ? mss_group : 0;
    if (o.timestamps) {
        len += ts_group;  // carries SACK-permitted in its padding when set
    } else if (o.sack_permitted) {
        len += sack_permitted_group;
    }
    len += o.window_shift ? window_scale_group : 0;
    return len;
}

}  // namespace

std::size_t tcp_options::sack_blocks_emitted() const noexcept {
    const std::size_t used = non_sack_len(*this);
    const std::size_t room = max_len - used;
    if (sack_count == 0 || room < sack_header_group + sack_block_len) {
        return 0;
    }
    return std::min(
        {std::size_t{sack_count}, max_sack_blocks, (room - sack_header_group) / sack_block_len});
}

std::size_t tcp_options::emit_len() const noexcept {
    const std::size_t blocks = sack_blocks_emitted();
    return non_sack_len(*this) + (blocks ? sack_header_group + blocks * sack_block_len : 0);
}

std::size_t tcp_options::emit(std::span<uint8_t> out) const noexcept {
    constexpr uint8_t nop = kind_of(tcp_option_kind::nop);
    uint8_t *p = out.data();
    if (mss) {
        p[0] = kind_of(tcp_option_kind::mss);
        p[1] = mss_len;
        wire::store_be16(p + 2, *mss);
        p += mss_group;
    }
    if (timestamps) {
        if (sack_permitted) {
            p[0] = kind_of(tcp_option_kind::sack_permitted);
            p[1] = sack_permitted_len;
        } else {
            p[0] = nop;
            p[1] = nop;
        }
        p[2] = kind_of(tcp_option_kind::timestamps);
        p[3] = timestamps_len;
        wire::store_be32(p + 4, timestamps->tsval);
        wire::store_be32(p + 8, timestamps->tsecr);
        p += ts_group;
    } else if (sack_permitted) {
        p[0] = nop;
        p[1] = nop;
        p[2] = kind_of(tcp_option_kind::sack_permitted);
        p[3] = sack_permitted_len;
        p += sack_permitted_group;
    }
    if (window_shift) {
        p[0] = nop;
        p[1] = kind_of(tcp_option_kind::window_scale);
        p[2] = window_scale_len;
        p[3] = std::min(*window_shift, max_window_shift);
        p += window_scale_group;
    }
    if (const std::size_t blocks = sack_blocks_emitted(); blocks > 0) {
        p[0] = nop;
        p[1] = nop;
        p[2] = kind_of(tcp_option_kind::sack);
        p[3] = static_cast<uint8_t>(2 + blocks * sack_block_len);
        p += sack_header_group;
        for (std::size_t b = 0; b < blocks; ++b) {
            wire::store_be32(p, sack[b].left.value());
            wire::store_be32(p + 4, sack[b].right.value());
            p += sack_block_len;
        }
    }
    return static_cast<std::size_t>(p - out.data());
}

tcp_error tcp_segment::check() const noexcept {
    if (buf_.size() < min_header_len) {
        return tcp_error::truncated;
    }
    if (data_offset() < 5) {
        return tcp_error::bad_data_offset;
    }
    if (buf_.size() < header_len()) {
        return tcp_error::truncated;
    }
    return tcp_error::none;
}

bool tcp_segment::verify_checksum(const ip_addr &src, const ip_addr &dst) const noexcept {
    if (buf_.size() < min_header_len || buf_.size() != segment_bytes_ || segment_bytes_ > 0xffff) {
        return false;
    }
    internet_checksum c = tcp_pseudo_header(src, dst, static_cast<uint16_t>(segment_bytes_));
    c.add(buf_);
    return c.fold() == 0xffff;
}

void tcp_segment::fill_checksum(const ip_addr &src, const ip_addr &dst) noexcept {
    set_checksum(0);
    internet_checksum c = tcp_pseudo_header(src, dst, static_cast<uint16_t>(segment_bytes_));
    c.add(buf_.first(segment_bytes_));
    set_checksum(c.finish());
}

tcp_error tcp_repr::parse(const tcp_segment &s, tcp_repr &out, tcp_option_error *why) noexcept {
    if (const tcp_error e = s.check(); e != tcp_error::none) {
        return e;
    }
    tcp_options opts;
    const tcp_option_error oe = tcp_options::parse(s.options(), opts);
    if (why != nullptr) {
        *why = oe;
    }
    if (oe != tcp_option_error::none) {
        return tcp_error::bad_options;
    }
    if (!s.syn()) {
        opts.mss.reset();
        opts.window_shift.reset();
        opts.window_shift_clamped = false;
        opts.sack_permitted = false;
    }
    if (!s.ack() && opts.timestamps) {
        opts.timestamps->tsecr = 0;
    }
    out.src_port = s.src_port();
    out.dst_port = s.dst_port();
    out.seq = s.seq_number();
    out.ack = s.ack_number();
    out.flags = s.flags();
    out.window = s.window();
    out.urgent_ptr = s.urgent_ptr();
    out.options = opts;
    out.payload_len = static_cast<uint32_t>(s.payload_len());
    return tcp_error::none;
}

void tcp_repr::emit(tcp_segment &s, const ip_addr &src, const ip_addr &dst,
                    const internet_checksum &payload) const noexcept {
    const std::size_t hl = header_len();
    s.set_src_port(src_port);
    s.set_dst_port(dst_port);
    s.set_seq_number(seq);
    s.set_ack_number(ack);
    s.set_header_len(hl);
    s.set_flags(flags);
    s.set_window(window);
    s.set_checksum(0);
    s.set_urgent_ptr(urgent_ptr);
    options.emit(s.buffer().subspan(tcp_segment::min_header_len, hl - tcp_segment::min_header_len));
    internet_checksum c = tcp_pseudo_header(src, dst, static_cast<uint16_t>(hl + payload_len));
    c.add(s.buffer().first(hl));
    // The data starts at an even offset (hl is a multiple of 4), so its own
    // folded sum adds in as one more aligned word (RFC 1071 §2(A): the sum is associative).
    c.add_word(payload.fold());
    s.set_checksum(c.finish());
}

void tcp_repr::emit(tcp_segment &s, const ip_addr &src, const ip_addr &dst) const noexcept {
    internet_checksum data;
    data.add(s.buffer().subspan(header_len(), payload_len));
    emit(s, src, dst, data);
}

}  // namespace ferry::net
