"""Random loss of TCP frames with nftables (there is no netem here), and the
one thing that makes it mean the same for every sender.

A kernel on a veth sends GSO packets of up to 64 KiB that no device ever
splits; ferry's ports send MTU-sized frames. A rule that drops p % of packets
then costs ferry a loss event every 1/p frames and the kernel one every 45/p:
the kernel baselines of issue 16 barely moved between 1 % and 3 % loss, which
no wire does. Dropping a GSO packet with the chance that one of its frames
would be lost is no better: the whole 64 KiB goes, so the kernel loses 45
frames per event. The honest bed has every sender put wire frames on the
lossy link: segmentation_off() turns TSO and GSO off on the kernel's devices
of that link, so TCP builds MSS-sized packets, as a NIC's TSO would put them
on a wire (it costs the kernel its per-byte saving, which ferry's ports do
not have either). The rules then drop p % of frames, both ways.
"""

from . import topo


def rules(pct, table="benchloss"):
    """The nft script: pct % of TCP packets dropped, both directions, counted."""
    n = int(round(pct * 100))  # per 10000
    rule = f"meta l4proto tcp numgen random mod 10000 < {n} counter drop;"
    return (f"table inet {table} {{\n"
            f"  chain in {{ type filter hook input priority 0; policy accept;\n    {rule} }}\n"
            f"  chain out {{ type filter hook output priority 0; policy accept;\n    {rule} }}\n"
            f"}}\n")


def segmentation_off(ns, dev):
    """TSO and GSO off on dev in namespace ns (a name, or None for this one)."""
    topo.ethtool_off(ns, dev, [topo.ETHTOOL_STSO, topo.ETHTOOL_SGSO])
