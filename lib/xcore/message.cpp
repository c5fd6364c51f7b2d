#include "ferry/xcore/message.h"

#include <rte_mbuf.h>

namespace ferry::xcore {

const char *name(handle_status s) noexcept {
    switch (s) {
        case handle_status::current:
            return "current";
        case handle_status::stale:
            return "stale";
        case handle_status::foreign:
            return "foreign";
        case handle_status::out_of_range:
            return "out_of_range";
    }
    return "?";
}

void release(message &m) noexcept {
    // rte_pktmbuf_free walks the whole chain and accepts null.
    rte_pktmbuf_free(m.mbuf);
    m.mbuf = nullptr;
}

}  // namespace ferry::xcore
