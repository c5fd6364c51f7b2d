#!/usr/bin/env python3
"""Generates fixtures.h: reference frames for the stack tests.

Built with plain struct packing and an independent RFC 1071 checksum so the
expected bytes do not come from the code under test. Re-run after changing:
    python3 gen_fixtures.py > fixtures.h
"""
import struct

OUR_MAC = bytes.fromhex("020000000001")
PEER_MAC = bytes.fromhex("020000000002")
BCAST = b"\xff" * 6
OUR_IP = bytes([10, 0, 0, 1])
PEER_IP = bytes([10, 0, 0, 2])
GW_IP = bytes([10, 0, 0, 254])
REMOTE_IP = bytes([192, 0, 2, 7])


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def eth(dst, src, etype):
    return dst + src + struct.pack("!H", etype)


def arp(op, sha, spa, tha, tpa):
    return struct.pack("!HHBBH", 1, 0x0800, 6, 4, op) + sha + spa + tha + tpa


def ipv4(src, dst, proto, payload, ttl=64, ident=0x1234, flags_frag=0, tos=0, options=b""):
    ihl = 5 + len(options) // 4
    hdr = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, tos, ihl * 4 + len(payload), ident,
                      flags_frag, ttl, proto, 0, src, dst) + options
    c = csum(hdr)
    hdr = hdr[:10] + struct.pack("!H", c) + hdr[12:]
    return hdr + payload


def icmp_echo(typ, ident, seq, data):
    m = struct.pack("!BBHHH", typ, 0, 0, ident, seq) + data
    return m[:2] + struct.pack("!H", csum(m)) + m[4:]


def pad60(f):
    return f + b"\0" * max(0, 60 - len(f))


fixtures = {}

# ARP request "who-has 10.0.0.1 tell 10.0.0.2", broadcast, padded to 60 bytes.
fixtures["arp_request_for_us"] = pad60(
    eth(BCAST, PEER_MAC, 0x0806) + arp(1, PEER_MAC, PEER_IP, b"\0" * 6, OUR_IP))
fixtures["arp_reply_to_peer"] = (
    eth(PEER_MAC, OUR_MAC, 0x0806) + arp(2, OUR_MAC, OUR_IP, PEER_MAC, PEER_IP))
# What the stack sends to resolve 10.0.0.2 / the gateway, and its announcement.
fixtures["arp_request_for_peer"] = (
    eth(BCAST, OUR_MAC, 0x0806) + arp(1, OUR_MAC, OUR_IP, b"\0" * 6, PEER_IP))
fixtures["arp_request_for_gw"] = (
    eth(BCAST, OUR_MAC, 0x0806) + arp(1, OUR_MAC, OUR_IP, b"\0" * 6, GW_IP))
fixtures["arp_announce"] = (
    eth(BCAST, OUR_MAC, 0x0806) + arp(1, OUR_MAC, OUR_IP, b"\0" * 6, OUR_IP))
# The peer's answer to our request, unicast to us, padded.
fixtures["arp_reply_from_peer"] = pad60(
    eth(OUR_MAC, PEER_MAC, 0x0806) + arp(2, PEER_MAC, PEER_IP, OUR_MAC, OUR_IP))
# RFC 5227 probe for our address and our answer (target IP 0.0.0.0).
fixtures["arp_probe_for_us"] = pad60(
    eth(BCAST, PEER_MAC, 0x0806) + arp(1, PEER_MAC, b"\0" * 4, b"\0" * 6, OUR_IP))
fixtures["arp_reply_to_probe"] = (
    eth(PEER_MAC, OUR_MAC, 0x0806) + arp(2, OUR_MAC, OUR_IP, PEER_MAC, b"\0" * 4))

# Echo request 10.0.0.2 -> 10.0.0.1 with 56 bytes of data (like ping), and the
# reply: addresses swapped, TTL 64, ID 0, DF, TOS echoed, type 0.
data56 = bytes(range(0x10, 0x10 + 56))
req = icmp_echo(8, 0x4242, 7, data56)
fixtures["echo_request"] = (
    eth(OUR_MAC, PEER_MAC, 0x0800) + ipv4(PEER_IP, OUR_IP, 1, req, ttl=63, tos=0x10))
rep = icmp_echo(0, 0x4242, 7, data56)
fixtures["echo_reply"] = (
    eth(PEER_MAC, OUR_MAC, 0x0800) + ipv4(OUR_IP, PEER_IP, 1, rep, ttl=64, ident=0,
                                          flags_frag=0x4000, tos=0x10))
# Same request carrying a Record Route option (RFC 791: type 7, len 11, ptr 4) + EOL.
rr = bytes([7, 11, 4]) + b"\0" * 8 + b"\0"
fixtures["echo_request_options"] = (
    eth(OUR_MAC, PEER_MAC, 0x0800) + ipv4(PEER_IP, OUR_IP, 1, req, ttl=63, tos=0x10,
                                          options=rr))
# A 1-byte payload: frame padded to 60 on the wire; the reply is not.
req1 = icmp_echo(8, 1, 1, b"\xab")
fixtures["echo_request_small_padded"] = pad60(
    eth(OUR_MAC, PEER_MAC, 0x0800) + ipv4(PEER_IP, OUR_IP, 1, req1))
fixtures["echo_reply_small"] = (
    eth(PEER_MAC, OUR_MAC, 0x0800) + ipv4(OUR_IP, PEER_IP, 1, icmp_echo(0, 1, 1, b"\xab"),
                                          ttl=64, ident=0, flags_frag=0x4000))
# Odd-length data (57 bytes) to exercise odd segment boundaries.
data57 = bytes(range(0x20, 0x20 + 57))
fixtures["echo_request_odd"] = (
    eth(OUR_MAC, PEER_MAC, 0x0800) + ipv4(PEER_IP, OUR_IP, 1, icmp_echo(8, 9, 3, data57)))
fixtures["echo_reply_odd"] = (
    eth(PEER_MAC, OUR_MAC, 0x0800) + ipv4(OUR_IP, PEER_IP, 1, icmp_echo(0, 9, 3, data57),
                                          ttl=64, ident=0, flags_frag=0x4000))
# 1001 bytes of data: long enough to be cut into segments behind the headers,
# odd so segment boundaries fall mid-word.
data1001 = bytes((i * 7 + 3) & 0xFF for i in range(1001))
fixtures["echo_request_big"] = (
    eth(OUR_MAC, PEER_MAC, 0x0800) + ipv4(PEER_IP, OUR_IP, 1, icmp_echo(8, 0x77, 0x1234, data1001)))
fixtures["echo_reply_big"] = (
    eth(PEER_MAC, OUR_MAC, 0x0800) + ipv4(OUR_IP, PEER_IP, 1, icmp_echo(0, 0x77, 0x1234, data1001),
                                          ttl=64, ident=0, flags_frag=0x4000))
# id 0, seq 0, no data: the reply is all zeros, so its checksum must be 0xffff
# (RFC 1624 eqn. 3 applied to the request's checksum would give 0x0000).
fixtures["echo_request_zero"] = pad60(
    eth(OUR_MAC, PEER_MAC, 0x0800) + ipv4(PEER_IP, OUR_IP, 1, icmp_echo(8, 0, 0, b"")))
fixtures["echo_reply_zero"] = (
    eth(PEER_MAC, OUR_MAC, 0x0800) + ipv4(OUR_IP, PEER_IP, 1, icmp_echo(0, 0, 0, b""),
                                          ttl=64, ident=0, flags_frag=0x4000))
assert fixtures["echo_reply_zero"][36:38] == b"\xff\xff"

# A UDP datagram we originate (Ethernet header left zero for the stack to fill)
# to the peer and to a remote host, and the frames that must leave.
udp = struct.pack("!HHHH", 5000, 53, 12, 0) + b"ping"
fixtures["out_to_peer_unaddressed"] = b"\0" * 14 + ipv4(OUR_IP, PEER_IP, 17, udp)
fixtures["out_to_peer"] = eth(PEER_MAC, OUR_MAC, 0x0800) + ipv4(OUR_IP, PEER_IP, 17, udp)
fixtures["out_to_remote_unaddressed"] = b"\0" * 14 + ipv4(OUR_IP, REMOTE_IP, 17, udp)

print("// Generated by gen_fixtures.py -- do not edit.")
print("#pragma once")
print()
print("#include <cstdint>")
print()
print("namespace ferry::net::fixtures {")
print("// clang-format off")
for name, b in fixtures.items():
    print()
    print("inline constexpr uint8_t %s[] = {" % name)
    for i in range(0, len(b), 12):
        print("    " + " ".join("0x%02x," % x for x in b[i:i + 12]))
    print("};")
print()
print("// clang-format on")
print("}  // namespace ferry::net::fixtures")
