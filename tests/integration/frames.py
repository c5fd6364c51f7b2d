"""Crafts Ethernet/IPv4/ICMP frames (good and deliberately malformed) and sends
them on an interface with an AF_PACKET socket. Run inside the test namespace:
    frames.py IFACE DST_MAC KIND COUNT
KIND is one of KINDS below. Needs no third-party module, so every byte sent is
visible here.
"""

import socket
import struct
import sys


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def mac_bytes(mac):
    return bytes(int(x, 16) for x in mac.split(":"))


def ip_bytes(addr):
    return socket.inet_aton(addr)


def ipv4(payload, src, dst, proto=1, ttl=64, ver_ihl=0x45, frag=0, total=None,
         bad_cksum=False, options=b"", ident=0x1234):
    ihl_len = 20 + len(options)
    total = ihl_len + len(payload) if total is None else total
    hdr = struct.pack("!BBHHHBBH4s4s", ver_ihl, 0, total, ident, frag, ttl, proto, 0,
                      ip_bytes(src), ip_bytes(dst)) + options
    c = csum(hdr)
    if bad_cksum:
        c ^= 0x5555
    return hdr[:10] + struct.pack("!H", c) + hdr[12:] + payload


def icmp_echo(ident=0x77, seq=1, payload=b"ferry-test-payload", bad_cksum=False):
    msg = struct.pack("!BBHHH", 8, 0, 0, ident, seq) + payload
    c = csum(msg)
    if bad_cksum:
        c ^= 0x00FF
    return msg[:2] + struct.pack("!H", c) + msg[4:]


def frame(dst_mac, src_mac, payload, ethertype=0x0800):
    return mac_bytes(dst_mac) + mac_bytes(src_mac) + struct.pack("!H", ethertype) + payload


SRC, DST = "10.77.0.2", "10.77.0.1"


def fragmented_echo(d, s, ident):
    """An echo request of 1000 bytes of data in three fragments, the last
    one first (RFC 791: ferry reassembles, answers one 1028-byte datagram)."""
    msg = icmp_echo(ident=ident, payload=bytes(i % 251 for i in range(1000)))
    parts = [(0, msg[:400], True), (400, msg[400:800], True), (800, msg[800:], False)]
    frames_ = [frame(d, s, ipv4(p, SRC, DST, ident=ident,
                                frag=(0x2000 if mf else 0) | (off // 8)))
               for off, p, mf in parts]
    return [frames_[2], frames_[0], frames_[1]]

# kind -> function(dst_mac, src_mac) -> frame bytes; the counter each must bump.
KINDS = {
    "good_echo": (lambda d, s: frame(d, s, ipv4(icmp_echo(), SRC, DST)), "icmp_echo_replied"),
    "bad_ip_cksum": (lambda d, s: frame(d, s, ipv4(icmp_echo(), SRC, DST, bad_cksum=True)),
                     "ipv4_drop_bad_checksum"),
    "truncated_ip": (lambda d, s: frame(d, s, ipv4(icmp_echo(), SRC, DST)[:10]),
                     "ipv4_drop_truncated"),
    "bad_version": (lambda d, s: frame(d, s, ipv4(icmp_echo(), SRC, DST, ver_ihl=0x65)),
                    "ipv4_drop_bad_version"),
    "bad_ihl": (lambda d, s: frame(d, s, ipv4(icmp_echo(), SRC, DST, ver_ihl=0x44)),
                "ipv4_drop_bad_ihl"),
    # Total length beyond the frame: the datagram arrived cut short.
    "long_total_length": (lambda d, s: frame(d, s, ipv4(icmp_echo(), SRC, DST, total=1400)),
                          "ipv4_drop_truncated"),
    # Total length shorter than the header itself: impossible, a bad length.
    "short_total_length": (lambda d, s: frame(d, s, ipv4(icmp_echo(), SRC, DST, total=12)),
                           "ipv4_drop_bad_length"),
    # A first fragment (MF) of 26 bytes: not a multiple of 8.
    "fragment_odd": (lambda d, s: frame(d, s, ipv4(icmp_echo(), SRC, DST, frag=0x2000)),
                     "ipv4_frag_drop_bad"),
    "bad_icmp_cksum": (lambda d, s: frame(d, s, ipv4(icmp_echo(bad_cksum=True), SRC, DST)),
                       "icmp_drop_bad_checksum"),
    "other_mac": (lambda d, s: frame("02:11:22:33:44:55", s, ipv4(icmp_echo(), SRC, DST)),
                  "eth_drop_not_ours"),
    "not_our_ip": (lambda d, s: frame(d, s, ipv4(icmp_echo(), SRC, "10.77.0.9")),
                   "ipv4_drop_not_ours"),
    "unknown_proto": (lambda d, s: frame(d, s, ipv4(b"\0" * 8, SRC, DST, proto=253)),
                      "ipv4_drop_unknown_protocol"),
}


def main():
    iface, dst_mac, kind, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    src_mac = open(f"/sys/class/net/{iface}/address").read().strip()
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as s:
        s.bind((iface, 0))
        if kind == "fragmented_echo":  # COUNT datagrams, each in fragments
            for i in range(count):
                for f in fragmented_echo(dst_mac, src_mac, 0x500 + i):
                    s.send(f)
            print(f"sent {count} fragmented echo requests")
            return
        data = KINDS[kind][0](dst_mac, src_mac)
        for _ in range(count):
            s.send(data)
    print(f"sent {count} x {kind} ({len(data)} bytes)")


if __name__ == "__main__":
    main()
