import PeerscopeCore

/// The diagnostics the packet layers report (link layers, IP with reassembly, UDP, TCP, ICMP).
/// A header cut short is `info` when the snap length explains it, `warning` otherwise.
public enum PacketDiagnostics {
    public static let layer = DiagnosticLayer(
        name: "packets", summary: "link layers, IPv4/IPv6 and reassembly, UDP, TCP streams, ICMP errors",
        diagnostics: link + ip + fragments + transport)

    static let link: [DiagnosticSpec] = [
        .id("link.unsupported", .warning, "a link type peerscope does not decode; its frames are counted and skipped"),
        .id("eth.truncated", .warning, "an Ethernet header cut short"),
        .id("vlan.truncated", .warning, "a VLAN tag cut short"),
        .id("vlan.too_deep", .warning, "more than 8 stacked VLAN tags; the frame is skipped"),
        .id("pppoe.truncated", .warning, "a PPPoE header cut short"),
        .id("llc.truncated", .warning, "an 802.2 SNAP header cut short"),
        .id("null.truncated", .warning, "a BSD loopback header cut short"),
        .id("raw.truncated", .warning, "an empty raw IP frame"),
        .id("raw.bad_version", .warning, "a raw IP frame that is neither IPv4 nor IPv6"),
        .id("sll.truncated", .warning, "a Linux cooked (SLL) header cut short"),
        .id("sll2.truncated", .warning, "a Linux cooked v2 (SLL2) header cut short"),
        .id("pktap.truncated", .warning, "an Apple PKTAP header cut short"),
        .id("pktap.bad_length", .warning, "a PKTAP header length that cannot be right"),
        .id("pktap.nested", .warning, "PKTAP inside PKTAP; the frame is skipped"),
        .id("wlan.truncated", .warning, "an 802.11 header cut short"),
        .id("radiotap.truncated", .warning, "a radiotap header cut short"),
        .id("radiotap.bad_length", .warning, "a radiotap length or presence words that run past the header"),
        .id("ppp.truncated", .warning, "a PPP header cut short"),
    ]

    static let ip: [DiagnosticSpec] = [
        .id("ipv4.truncated", .warning, "an IPv4 header cut short"),
        .id("ipv4.bad_version", .warning, "an IPv4 header whose version is not 4"),
        .id("ipv4.bad_ihl", .warning, "an IPv4 header length below 20 or past the packet"),
        .id("ipv4.bad_checksum", .info, "an IPv4 header checksum that does not match (checked only when asked; offload leaves it unfilled)"),
        .id("ipv4.zero_total_length", .info, "IPv4 total length 0 (segmentation offload); the captured length is used"),
        .id("ipv4.bad_total_length", .warning, "an IPv4 total length below the header or past the frame"),
        .id("ipv4.frag.truncated", .warning, "an IPv4 fragment cut short; it cannot be reassembled"),
        .id("ipv6.truncated", .warning, "an IPv6 header cut short"),
        .id("ipv6.bad_version", .warning, "an IPv6 header whose version is not 6"),
        .id("ipv6.zero_payload_length", .info, "IPv6 payload length 0 (jumbogram or offload); the captured length is used"),
        .id("ipv6.bad_payload_length", .warning, "an IPv6 payload length past the frame"),
        .id("ipv6.ext.too_many", .warning, "more than 32 IPv6 extension headers; the packet is skipped"),
        .id("ipv6.ext.truncated", .warning, "an IPv6 extension header cut short or running past the packet"),
        .id("ipv6.frag.nested", .warning, "an IPv6 fragment header inside a reassembled datagram"),
        .id("ipv6.frag.truncated", .warning, "an IPv6 fragment cut short; it cannot be reassembled"),
    ]

    /// Reassembly, the same for IPv4 and IPv6 (`ipv4.frag.*`, `ipv6.frag.*`).
    static let fragments: [DiagnosticSpec] = ["ipv4", "ipv6"].flatMap { v in [
        DiagnosticSpec.id("\(v).frag.oversized", .warning, "a fragment that ends past the largest datagram; the datagram is dropped"),
        .id("\(v).frag.bad_length", .info, "a non-final fragment whose length is not a multiple of 8"),
        .id("\(v).frag.limit", .warning, "too many datagrams in reassembly at once; the oldest is dropped"),
        .id("\(v).frag.inconsistent", .warning, "fragments that disagree on where the datagram ends"),
        .id("\(v).frag.overlap", .info, "a fragment that overlaps earlier ones with the same bytes"),
        .id("\(v).frag.overlap_conflict", .warning, "a fragment that overlaps earlier ones with other bytes; the first are kept"),
        .id("\(v).frag.too_many", .warning, "more than 1024 fragments for one datagram; it is dropped"),
        .id("\(v).frag.incomplete", .warning, "a datagram whose fragments never all arrived (timed out or at the end of input)"),
    ] }

    static let transport: [DiagnosticSpec] = [
        .id("udp.truncated", .warning, "a UDP header or payload cut short"),
        .id("udp.bad_length", .warning, "a UDP length field below 8 or past the IP payload"),
        .id("icmp.truncated", .warning, "an ICMP header cut short"),
        .id("icmpv6.truncated", .warning, "an ICMPv6 header cut short"),
        .id("icmp.quote.truncated", .info, "an ICMP error whose quoted packet is cut short"),
        .id("icmpv6.quote.truncated", .info, "an ICMPv6 error whose quoted packet is cut short"),
        .id("tcp.truncated", .warning, "a TCP header or segment cut short"),
        .id("tcp.bad_offset", .warning, "a TCP data offset below 20 or past the segment"),
        .id("tcp.port_reuse", .info, "a new SYN on a connection that had not closed; a new connection starts"),
        .id("tcp.syn.conflict", .info, "a SYN with another initial sequence number; ignored"),
        .id("tcp.reassembly.overflow", .warning, "too many bytes buffered behind a hole in a TCP stream; the hole is skipped"),
        .id("tcp.overlap.conflict", .warning, "a TCP segment that overlaps buffered bytes with other content; the first copy is kept"),
        .id("tcp.table.full", .warning, "too many TCP connections tracked; the least recently seen are evicted"),
    ]
}
