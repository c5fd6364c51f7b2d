#include "seeds.h"

#include "test_util.h"  // tests/unit/net: frame builders

std::vector<std::vector<uint8_t>> fuzz_seeds() {
    using namespace ferry::net::test;
    std::vector<std::vector<uint8_t>> s;
    // ARP request for us, ARP reply to us, gratuitous ARP.
    s.push_back(concat({eth_header(bcast_mac, peer_mac, 0x0806), build_arp({})}));
    arp_spec reply;
    reply.op = 2;
    reply.tha = our_mac;
    s.push_back(concat({eth_header(our_mac, peer_mac, 0x0806), build_arp(reply)}));
    arp_spec garp;
    garp.tpa = garp.spa;
    s.push_back(concat({eth_header(bcast_mac, peer_mac, 0x0806), build_arp(garp)}));
    // ICMP echo request, with options, with padding, a big one.
    ipv4_spec ip;
    ip.payload = build_icmp({});
    s.push_back(concat({eth_header(our_mac, peer_mac, 0x0800), build_ipv4(ip)}));
    ip.options = 8;
    s.push_back(concat({eth_header(our_mac, peer_mac, 0x0800), build_ipv4(ip)}));
    ip.options = 0;
    ip.padding = 12;
    s.push_back(concat({eth_header(our_mac, peer_mac, 0x0800), build_ipv4(ip)}));
    icmp_spec big;
    big.data = bytes(1400, 0x5a);
    ip.padding = 0;
    ip.payload = build_icmp(big);
    s.push_back(concat({eth_header(our_mac, peer_mac, 0x0800), build_ipv4(ip)}));
    // A TCP segment and a UDP datagram (no handler yet: counted drops).
    ipv4_spec tcp;
    tcp.protocol = 6;
    tcp.payload = bytes(20, 0);
    s.push_back(concat({eth_header(our_mac, peer_mac, 0x0800), build_ipv4(tcp)}));
    tcp.protocol = 17;
    s.push_back(concat({eth_header(our_mac, peer_mac, 0x0800), build_ipv4(tcp)}));
    return s;
}
