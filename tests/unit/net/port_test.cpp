// Every offload name a driver profile may use (lib/config's vocabulary) maps
// to an ethdev flag in port bring-up, so none is accepted and then ignored.
#include <gtest/gtest.h>

#include "ferry/config/config.h"
#include "ferry/net/port.h"

namespace ferry::net {
namespace {

TEST(PortOffloads, EveryRxNameMapsToARxFlag) {
    for (std::string_view n : config::known_rx_offloads()) {
        EXPECT_NE(offload_flag(n, true), 0u) << n;
    }
}

TEST(PortOffloads, EveryTxNameMapsToATxFlag) {
    for (std::string_view n : config::known_tx_offloads()) {
        EXPECT_NE(offload_flag(n, false), 0u) << n;
    }
}

TEST(PortOffloads, WrongDirectionAndUnknownNamesMapToNothing) {
    EXPECT_EQ(offload_flag("tcp_tso", true), 0u);
    EXPECT_EQ(offload_flag("scatter", false), 0u);
    EXPECT_EQ(offload_flag("warp_drive", true), 0u);
    EXPECT_EQ(offload_flag("ipv4_cksum", true), RTE_ETH_RX_OFFLOAD_IPV4_CKSUM);
    EXPECT_EQ(offload_flag("ipv4_cksum", false), RTE_ETH_TX_OFFLOAD_IPV4_CKSUM);
}

TEST(PortOffloads, NamesRoundTripForLogs) {
    EXPECT_EQ(offload_names(RTE_ETH_RX_OFFLOAD_IPV4_CKSUM, RTE_ETH_TX_OFFLOAD_IPV4_CKSUM),
              "ipv4_cksum(rx,tx)");
    EXPECT_EQ(offload_names(0, 0), "none");
}

}  // namespace
}  // namespace ferry::net
