// Proportional Rate Reduction (RFC 6937). See tcp_prr.h.
#include "ferry/net/tcp_prr.h"

#include <algorithm>

namespace ferry::net {

uint32_t tcp_prr::delivered(seq_num una, uint32_t sacked) noexcept {
    if (!have_ref_) {
        have_ref_ = true;
        una_ = una;
        sacked_ = sacked;
        return 0;
    }
    // SND.UNA never moves back; SACKd falls by what the cumulative ACK now
    // covers (already counted as delivered when it was SACKed), and to 0 when
    // the scoreboard is cleared.
    const int64_t acked = una > una_ ? int64_t{distance(una_, una)} : 0;
    const int64_t d = acked + int64_t{sacked} - int64_t{sacked_};
    una_ = seq_max(una_, una);
    sacked_ = sacked;
    return d > 0 ? static_cast<uint32_t>(d) : 0;
}

void tcp_prr::start(uint32_t recover_fs, seq_num snd_max) noexcept {
    active_ = true;
    recover_fs_ = recover_fs;
    delivered_ = 0;
    out_ = 0;
    cwnd_ = 0;
    high_ = snd_max;
}

uint32_t tcp_prr::on_ack(uint32_t delivered, uint32_t pipe, uint32_t ssthresh, uint32_t smss,
                         seq_num snd_max) noexcept {
    // "On any data transmission or retransmission: prr_out += (data sent)":
    // the new data sent since the last ACK.
    if (snd_max > high_) {
        out_ += distance(high_, snd_max);
        high_ = snd_max;
    }
    // "prr_delivered += DeliveredData"
    delivered_ += delivered;
    int64_t sndcnt = 0;
    if (pipe > ssthresh) {
        // "Proportional Rate Reduction":
        // sndcnt = CEIL(prr_delivered * ssthresh / RecoverFS) - prr_out.
        // RecoverFS is never 0 (recovery starts with data outstanding).
        const uint64_t fs = std::max<uint32_t>(recover_fs_, 1);
        const uint64_t target = (uint64_t{delivered_} * ssthresh + fs - 1) / fs;
        sndcnt = static_cast<int64_t>(target) - int64_t{out_};
    } else {
        // "PRR-SSRB": limit = MAX(prr_delivered - prr_out, DeliveredData) +
        // MSS; "Attempt to catch up, as permitted by limit": sndcnt =
        // MIN(ssthresh - pipe, limit).
        const int64_t banked = int64_t{delivered_} - int64_t{out_};
        const int64_t limit = std::max<int64_t>(banked, delivered) + smss;
        sndcnt = std::min<int64_t>(int64_t{ssthresh} - pipe, limit);
    }
    // A negative sndcnt (more was sent than the reduction allows so far, as
    // the first retransmission may be) sends nothing.
    sndcnt = std::max<int64_t>(sndcnt, 0);
    cwnd_ = static_cast<uint32_t>(std::min<int64_t>(int64_t{pipe} + sndcnt, UINT32_MAX));
    return static_cast<uint32_t>(sndcnt);
}

}  // namespace ferry::net
