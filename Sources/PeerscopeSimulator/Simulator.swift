// Public entry points: the scenario list, running one, and the results (capture bytes, device logs,
// expected findings).

public struct SimulationOptions: Sendable {
    public var seed: UInt64
    /// Number of devices for scenarios that take one (group-8: 2...8, including the host).
    public var peers: Int?
    /// Use DTLS (`.required` on both sides) where the scenario allows the choice.
    public var encrypted: Bool
    public var format: CaptureFileFormat
    /// Length of the connected phase of the healthy scenarios (default 20 s): hours make a long,
    /// steady capture (benchmarks of memory over time).
    public var steadySeconds: Double?

    public init(seed: UInt64 = 1, peers: Int? = nil, encrypted: Bool = false, format: CaptureFileFormat = .pcapng,
                steadySeconds: Double? = nil) {
        self.seed = seed; self.peers = peers; self.encrypted = encrypted; self.format = format
        self.steadySeconds = steadySeconds
    }
}

public struct ScenarioInfo: Sendable {
    public let name: String
    public let summary: String
    /// Accepts `peers` (and its range).
    public let peerRange: ClosedRange<Int>?
    /// Always encrypted, whatever `encrypted` says.
    public let alwaysEncrypted: Bool
}

public enum SimulatorError: Error, CustomStringConvertible, Equatable {
    case unknownScenario(String)
    case peersNotSupported(String)
    case peersOutOfRange(Int, ClosedRange<Int>)

    public var description: String {
        switch self {
        case .unknownScenario(let s): return "unknown scenario '\(s)' (see --list)"
        case .peersNotSupported(let s): return "scenario '\(s)' has a fixed set of devices; --peers applies to group-8"
        case let .peersOutOfRange(n, r): return "--peers \(n) is out of range \(r.lowerBound)...\(r.upperBound)"
        }
    }
}

/// One finding a scenario is built to produce.
public struct ExpectedFinding: Sendable, Equatable {
    /// handshake-timeout, keepalive-timeout, duplicate-connection, channel-error, reconnect-storm, declined-invitation
    public var kind: String
    /// Display name of the peer at fault.
    public var peer: String
    public var peerIdString: String
    public var participant: String
    /// The device whose capture/log shows it (display name and instance name: names can collide).
    public var observer: String
    public var observerIdString: String
    /// Capture time in nanoseconds since the Unix epoch.
    public var time: Int64
    public var toleranceSeconds: Double
    /// For handshake timeouts: "ice", "dtls", "app".
    public var phase: String?
    public var detail: String
    /// Where it is visible: "capture", "log:<device slug>".
    public var evidence: [String]
    /// Extra numbers (e.g. reconnect attempts).
    public var attempts: Int?
    /// `uncertain` when the capture is built to lose packets where the finding's judgement rests on
    /// silence (the capture's own interface statistics say so); nil: certain.
    public var confidence: String?
}

public struct DeviceSummary: Sendable, Equatable {
    public var name: String
    public var slug: String
    public var idString: String
    public var participant: String
    public var addresses: [String]
    public var srvPort: Int
    public var logFile: String
}

public struct MDNSExpectation: Sendable, Equatable {
    public var instance: String
    public var displayName: String
    public var srvPorts: [Int]
}

public struct DeviceLog: Sendable {
    public var device: String
    public var slug: String
    public var text: String
}

public struct SimulationResult: Sendable {
    public let scenario: String
    public let summary: String
    public let options: SimulationOptions
    public let encrypted: Bool
    public let capture: [UInt8]
    public let logs: [DeviceLog]
    public let findings: [ExpectedFinding]
    public let devices: [DeviceSummary]
    public let interfaces: [SimInterface]
    public let advertised: [MDNSExpectation]
    public let frameCount: Int
    public let durationSeconds: Double

    /// The `<scenario>.expected.json` document (deterministic key order, 2-space indent).
    public func expectedJSON() -> String { ExpectedJSON.render(self) }
}

public enum Simulator {
    public static let scenarios: [ScenarioInfo] = [
        ScenarioInfo(name: "healthy-pair", summary: "An iPhone and an iPad discover each other, invite, connect in plaintext, chat with keep-alives, then one leaves.",
                     peerRange: nil, alwaysEncrypted: false),
        ScenarioInfo(name: "healthy-pair-encrypted", summary: "The healthy pair over AWDL (IPv6 link-local) with DTLS: every datagram is 0xD0 + a DTLS record.",
                     peerRange: nil, alwaysEncrypted: true),
        ScenarioInfo(name: "group-8", summary: "A host invites seven peers on two interfaces (any/SLL IPv4 and awdl0/Ethernet IPv6); the session meshes.",
                     peerRange: 2 ... 8, alwaysEncrypted: false),
        ScenarioInfo(name: "handshake-timeout-ice", summary: "Invitation accepted, then the invitee goes to the background: ICE checks go unanswered and time out after 10 s.",
                     peerRange: nil, alwaysEncrypted: false),
        ScenarioInfo(name: "handshake-timeout-dtls", summary: "ICE succeeds, but the peer never answers the DTLS ClientHello: retransmissions, then the DTLS handshake timer fires.",
                     peerRange: nil, alwaysEncrypted: true),
        ScenarioInfo(name: "handshake-timeout-app", summary: "Session connects, but the peer never answers the app 'handshake' with 'handshake_response'; the 10 s app timer fires.",
                     peerRange: nil, alwaysEncrypted: false),
        ScenarioInfo(name: "keepalive-timeout", summary: "One side's keep-alives and heartbeats stop while the other keeps sending; the 6 s keep-alive monitor fires.",
                     peerRange: nil, alwaysEncrypted: false),
        ScenarioInfo(name: "duplicate-connection", summary: "Both devices invite each other at once: two invitation channels and two sessions between the same pair.",
                     peerRange: nil, alwaysEncrypted: false),
        ScenarioInfo(name: "channel-error-dtls-alert", summary: "An encrypted session is torn down by a DTLS alert record from one peer.",
                     peerRange: nil, alwaysEncrypted: true),
        ScenarioInfo(name: "channel-error-icmp", summary: "The peer's app dies: its session UDP port answers with ICMP port unreachable.",
                     peerRange: nil, alwaysEncrypted: false),
        ScenarioInfo(name: "channel-error-reset", summary: "The invitee's process dies after the Invite: its kernel resets the invitation channel before any Response.",
                     peerRange: nil, alwaysEncrypted: false),
        ScenarioInfo(name: "reconnect-storm", summary: "After the peer's app is killed, the inviter re-dials its stale record with back-off (0, 1, 2, ... 5 s) until it returns.",
                     peerRange: nil, alwaysEncrypted: false),
        ScenarioInfo(name: "reconnect-same-ports", summary: "A peer keeps dropping out of range: the inviter re-invites it with growing back-off (0, 1, 2, 3, 4, 5 s) and every new session comes up on the same UDP ports as the one before.",
                     peerRange: nil, alwaysEncrypted: false),
        ScenarioInfo(name: "keepalive-lossy-capture", summary: "The keep-alive timeout, captured by a machine whose buffer overflowed inside the silence: 40 packets dropped, recorded in the pcapng interface statistics; the finding is uncertain from the capture alone.",
                     peerRange: nil, alwaysEncrypted: false),
        ScenarioInfo(name: "encryption-mismatch", summary: "One app requires encryption, the other uses none: after the invitation and ICE, DTLS ClientHellos (0xD0) meet plaintext GCK Hellos (0xC1) and the session never comes up.",
                     peerRange: nil, alwaysEncrypted: true),
        ScenarioInfo(name: "duplicate-beside-reconnect", summary: "A session goes quiet and is replaced by a re-invitation on the same ports (superseded, not a duplicate); later the invitee invites back while that session still runs: two sessions carry traffic at once.",
                     peerRange: nil, alwaysEncrypted: false),
        ScenarioInfo(name: "declined-invitation", summary: "The invitee's user declines: the Response carries MCNearbyServiceAcceptInviteKey = false and no connection data.",
                     peerRange: nil, alwaysEncrypted: false),
        ScenarioInfo(name: "identity-collision", summary: "Two devices named \"Alice's iPhone\" with different peer IDs at once (a duplicate identity); the second one's invitation is declined.",
                     peerRange: nil, alwaysEncrypted: false),
    ]

    public static func scenario(named name: String) -> ScenarioInfo? { scenarios.first { $0.name == name } }

    /// Runs one scenario. Same name, options and seed: byte-identical results.
    public static func run(_ name: String, options: SimulationOptions = SimulationOptions()) throws -> SimulationResult {
        guard let info = scenario(named: name) else { throw SimulatorError.unknownScenario(name) }
        if let p = options.peers {
            guard let range = info.peerRange else { throw SimulatorError.peersNotSupported(name) }
            guard range.contains(p) else { throw SimulatorError.peersOutOfRange(p, range) }
        }
        let world = World(seed: options.seed ^ SimRandom.fnv1a(name))
        let encrypted = info.alwaysEncrypted || options.encrypted
        let built = Scenarios.build(name, world: world, options: options, encrypted: encrypted)
        world.tail(after: max(built.map(\.time).max() ?? 0, world.lastEventTime()))
        return finish(world, info: info, options: options, encrypted: encrypted, findings: built)
    }

    private static func finish(_ w: World, info: ScenarioInfo, options: SimulationOptions, encrypted: Bool,
                               findings: [ExpectedFinding]) -> SimulationResult {
        var frames = w.frames.sorted { ($0.time, $0.order) < ($1.time, $1.order) }
        // Frames whose bytes depend on send order are built now, in time order.
        for i in frames.indices { if let build = frames[i].build { frames[i].ipPacket = build(); frames[i].build = nil } }
        // Packets the capturing machine dropped (sent on the air, never written), and its statistics.
        var statistics: [SimStatistics] = []
        var dropped = 0
        for d in w.captureDrops.sorted(by: { $0.start < $1.start }) {
            statistics.append(SimStatistics(time: d.start, interface: d.interface, osDrop: UInt64(dropped)))
            let before = frames.count
            frames.removeAll { $0.interface == d.interface && $0.time >= d.start && $0.time <= d.end && d.drops($0) }
            dropped += before - frames.count + d.extra
            statistics.append(SimStatistics(time: d.end, interface: d.interface, osDrop: UInt64(dropped)))
        }
        let ifaces = w.interfaces.map(\.interface)
        let comment = "peerscope simulator: scenario \(info.name), seed \(options.seed)\(encrypted ? ", encrypted" : "")"
        let capture = options.format == .pcapng
            ? CaptureFileWriter.pcapng(interfaces: ifaces, frames: frames, comment: comment, statistics: statistics)
            : CaptureFileWriter.pcap(interfaces: ifaces, frames: frames)
        let logs = w.devices.map { d -> DeviceLog in
            let lines = d.logs.sorted { ($0.time, $0.order) < ($1.time, $1.order) }.map(\.line)
            return DeviceLog(device: d.name, slug: d.slug, text: lines.joined(separator: "\n") + "\n")
        }
        let devices = w.devices.map { d in
            DeviceSummary(name: d.name, slug: d.slug, idString: d.peer.idString, participant: d.pidHex,
                          addresses: d.interfaces.map { w.addressString(d, $0) }, srvPort: Int(d.srvPort),
                          logFile: "logs/\(info.name)/\(d.slug).log")
        }
        var advertised: [MDNSExpectation] = []
        for d in w.devices {
            if let i = advertised.firstIndex(where: { $0.instance == d.peer.idString }) {
                if !advertised[i].srvPorts.contains(Int(d.srvPort)) { advertised[i].srvPorts.append(Int(d.srvPort)) }
            } else {
                advertised.append(MDNSExpectation(instance: d.peer.idString, displayName: d.name, srvPorts: w.extraSRVPorts(d) + [Int(d.srvPort)]))
            }
        }
        let first = frames.first?.time ?? simulationEpochNanos
        let last = frames.last?.time ?? simulationEpochNanos
        return SimulationResult(scenario: info.name, summary: info.summary, options: options, encrypted: encrypted,
                                capture: capture, logs: logs, findings: findings.sorted { $0.time < $1.time },
                                devices: devices, interfaces: ifaces, advertised: advertised,
                                frameCount: frames.count, durationSeconds: Double(last - first) / 1e9)
    }
}

enum ExpectedJSON {
    static func str(_ s: String) -> String { "\"" + AppJSON.escape(s, slash: false) + "\"" }

    static func num(_ d: Double) -> String {
        let micros = Int64((d * 1000).rounded())
        let whole = micros / 1000, frac = abs(micros % 1000)
        let f = String(frac)
        return "\(whole)." + String(repeating: "0", count: 3 - f.count) + f
    }

    static func render(_ r: SimulationResult) -> String {
        var o: [String] = []
        o.append("{")
        o.append("  \"scenario\": \(str(r.scenario)),")
        o.append("  \"summary\": \(str(r.summary)),")
        o.append("  \"seed\": \(r.options.seed),")
        o.append("  \"encrypted\": \(r.encrypted),")
        o.append("  \"captureStart\": \(str(LogTime.iso(simulationEpochNanos))),")
        o.append("  \"durationSeconds\": \(num(r.durationSeconds)),")
        o.append("  \"frames\": \(r.frameCount),")
        o.append("  \"interfaces\": [")
        o.append(r.interfaces.map { i in
            "    { \"name\": \(str(i.name)), \"linkType\": \(str(i.linkType == .ethernet ? "ethernet" : "linux-sll")) }"
        }.joined(separator: ",\n"))
        o.append("  ],")
        o.append("  \"serviceType\": \"_chat-app._tcp\",")
        o.append("  \"devices\": [")
        o.append(r.devices.map { d in
            "    { \"name\": \(str(d.name)), \"idString\": \(str(d.idString)), \"participant\": \(str(d.participant)), "
                + "\"addresses\": [\(d.addresses.map(str).joined(separator: ", "))], \"srvPort\": \(d.srvPort), \"log\": \(str(d.logFile)) }"
        }.joined(separator: ",\n"))
        o.append("  ],")
        o.append("  \"advertised\": [")
        o.append(r.advertised.map { a in
            "    { \"instance\": \(str(a.instance)), \"displayName\": \(str(a.displayName)), \"srvPorts\": [\(a.srvPorts.map(String.init).joined(separator: ", "))] }"
        }.joined(separator: ",\n"))
        o.append("  ],")
        if r.findings.isEmpty {
            o.append("  \"findings\": []")
        } else {
            o.append("  \"findings\": [")
            o.append(r.findings.map { f in
                var lines = ["    {",
                             "      \"kind\": \(str(f.kind)),",
                             "      \"peer\": \(str(f.peer)),",
                             "      \"peerIdString\": \(str(f.peerIdString)),",
                             "      \"participant\": \(str(f.participant)),",
                             "      \"observer\": \(str(f.observer)),",
                             "      \"observerIdString\": \(str(f.observerIdString)),"]
                if let p = f.phase { lines.append("      \"phase\": \(str(p)),") }
                if let n = f.attempts { lines.append("      \"attempts\": \(n),") }
                if let c = f.confidence { lines.append("      \"confidence\": \(str(c)),") }
                lines.append("      \"time\": \(str(LogTime.iso(f.time))),")
                lines.append("      \"offsetSeconds\": \(num(Double(f.time - simulationEpochNanos) / 1e9)),")
                lines.append("      \"toleranceSeconds\": \(num(f.toleranceSeconds)),")
                lines.append("      \"evidence\": [\(f.evidence.map(str).joined(separator: ", "))],")
                lines.append("      \"detail\": \(str(f.detail))")
                lines.append("    }")
                return lines.joined(separator: "\n")
            }.joined(separator: ",\n"))
            o.append("  ]")
        }
        o.append("}")
        return o.filter { !$0.isEmpty }.joined(separator: "\n") + "\n"
    }
}
