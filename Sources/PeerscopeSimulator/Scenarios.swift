// The scenarios. Each builds its traffic and logs in a World and returns the findings it is meant
// to produce — taken from the scenario definition, never from a decoder.

enum Scenarios {
    static func build(_ name: String, world w: World, options: SimulationOptions, encrypted: Bool) -> [ExpectedFinding] {
        switch name {
        case "healthy-pair": return healthyPair(w, encrypted: encrypted, awdl: false, steady: options.steadySeconds)
        case "healthy-pair-encrypted": return healthyPair(w, encrypted: true, awdl: true, steady: options.steadySeconds)
        case "group-8": return group(w, count: options.peers ?? 8, encrypted: encrypted)
        case "handshake-timeout-ice": return handshakeTimeoutICE(w, encrypted: encrypted)
        case "handshake-timeout-dtls": return handshakeTimeoutDTLS(w)
        case "handshake-timeout-app": return handshakeTimeoutApp(w, encrypted: encrypted)
        case "declined-invitation": return declinedInvitation(w, encrypted: encrypted)
        case "keepalive-timeout": return keepAliveTimeout(w, encrypted: encrypted)
        case "duplicate-connection": return duplicateConnection(w, encrypted: encrypted)
        case "channel-error-dtls-alert": return dtlsAlert(w)
        case "channel-error-icmp": return channelErrorICMP(w, encrypted: encrypted)
        case "channel-error-reset": return channelErrorReset(w, encrypted: encrypted)
        case "reconnect-storm": return reconnectStorm(w, encrypted: encrypted)
        case "identity-collision": return identityCollision(w, encrypted: encrypted)
        case "reconnect-same-ports": return reconnectSamePorts(w, encrypted: encrypted)
        case "keepalive-lossy-capture": return keepAliveLossyCapture(w, encrypted: encrypted)
        case "encryption-mismatch": return encryptionMismatch(w)
        case "duplicate-beside-reconnect": return duplicateBesideReconnect(w, encrypted: encrypted)
        default: return []
        }
    }

    static func finding(_ kind: String, peer: SimDevice, observer: SimDevice, time: Int64, tolerance: Double,
                        phase: String? = nil, attempts: Int? = nil, detail: String, capture: Bool = true) -> ExpectedFinding {
        ExpectedFinding(kind: kind, peer: peer.name, peerIdString: peer.peer.idString, participant: peer.pidHex,
                        observer: observer.name, observerIdString: observer.peer.idString, time: time, toleranceSeconds: tolerance, phase: phase, detail: detail,
                        evidence: (capture ? ["capture"] : []) + ["log:\(observer.slug)"], attempts: attempts)
    }

    /// Discovery, an accepted invitation and a connected session between `a` (inviter) and `b`.
    static func connectPair(_ w: World, _ a: SimDevice, _ b: SimDevice, encrypted: Bool, inviteAt: Double) -> (GCKLink, Int64, Int64)? {
        let iface = w.commonInterface(a, b)
        let rtt = w.rtt(iface)
        let inv = w.invite(w.at(inviteAt) + w.ms(0, spread: 40), browser: a, advertiser: b, outcome: .accept, encrypted: encrypted, rtt: rtt)
        guard let l = inv.link else { return nil }
        let t = w.establish(inv.end + w.ms(3, spread: 1), l, rtt: rtt)
        return (l, t, rtt)
    }

    // MARK: healthy

    static func healthyPair(_ w: World, encrypted: Bool, awdl: Bool, steady: Double? = nil) -> [ExpectedFinding] {
        let iface = awdl
            ? w.addInterface(name: "awdl0", linkType: .ethernet, family: .v6, description: "AWDL peer-to-peer Wi-Fi")
            : w.addInterface(name: "en0", linkType: .ethernet, family: .v4, description: "Wi-Fi")
        let a = w.addDevice(awdl ? "Carol's iPhone" : "Alice's iPhone", interfaces: [iface])
        let b = w.addDevice(awdl ? "Dave's MacBook Pro" : "Bob's iPad", platform: awdl ? "macOS" : "iOS", interfaces: [iface])
        w.discovery([(a, 0.05), (b, 0.35)])
        guard let (l, t, rtt) = connectPair(w, a, b, encrypted: encrypted, inviteAt: 1.6) else { return [] }
        let hs = w.appHandshake(t + w.ms(1000, spread: 30), l, rtt: rtt, answered: true)
        let st = w.steady(hs.end, l, until: hs.end + w.ms(max(1, steady ?? 20) * 1000), rtt: rtt, keepAlives: true,
                          chats: [(a, 2.5, "Hi \(b.name)!"), (b, 4.1, "Hey, I can see you."), (a, 11.0, "Lunch at noon?"), (b, 12.3, "Sounds good")])
        let te = st.end + w.ms(200, spread: 20)
        w.app(a, te, "User ended the chat")
        w.disconnect(te, l, by: a, rtt: rtt)
        w.stopAdvertising(a, te + w.ms(300))
        w.lost(b, a, te + w.ms(305, spread: 2))
        return []
    }

    // MARK: group

    static func group(_ w: World, count: Int, encrypted: Bool) -> [ExpectedFinding] {
        let lan = w.addInterface(name: "any", linkType: .linuxSLL, family: .v4, description: "Linux cooked capture on the Wi-Fi LAN")
        let awdl = w.addInterface(name: "awdl0", linkType: .ethernet, family: .v6, description: "AWDL peer-to-peer Wi-Fi")
        let host = w.addDevice("Erin's iPad", interfaces: [lan, awdl])
        let names = ["Frank's iPhone", "Grace's iPhone", "Heidi's iPad", "Ivan's iPhone", "Judy's iPad", "Mallory's iPhone", "Niaj's iPhone"]
        let n = max(1, min(7, count - 1))
        let onLAN = n / 2
        var peers: [SimDevice] = []
        for i in 0 ..< n { peers.append(w.addDevice(names[i], interfaces: [i < onLAN ? lan : awdl])) }
        w.discovery([(host, 0.05)] + peers.enumerated().map { ($0.element, 0.2 + Double($0.offset) * 0.15) })
        var links: [GCKLink] = []
        var handshakeEnds: [Int64] = []
        var ready = w.at(2.0)
        for p in peers {
            let iface = w.commonInterface(host, p)
            let rtt = w.rtt(iface)
            let inv = w.invite(ready + w.ms(250, spread: 40), browser: host, advertiser: p, outcome: .accept, encrypted: encrypted, rtt: rtt)
            guard let l = inv.link else { continue }
            let t = w.establish(inv.end + w.ms(3, spread: 1), l, rtt: rtt)
            links.append(l)
            handshakeEnds.append(w.appHandshake(t + w.ms(1000, spread: 30), l, rtt: rtt, answered: true).end)
            ready = t
        }
        // Mesh: peers on the same link connect to each other with connection data pushed by the host.
        var mesh: [GCKLink] = []
        var t = ready + w.ms(500)
        for (i, x) in peers.enumerated() {
            for y in peers[(i + 1)...] where x.interfaces == y.interfaces {
                w.log(host, t - w.ms(2), "MCSession", "XData: pushing connection data to non-neighbor peer[\(y.pidHex)].")
                let l = GCKLink(a: x, b: y, aPort: x.allocateUDPPort(), bPort: y.allocateUDPPort(), interface: w.commonInterface(x, y),
                                encrypted: encrypted, aToken: w.rng.u32(), bToken: w.rng.u32(), helloWord: w.rng.u32(), iceWord: w.rng.u32())
                w.stateChange(x, y, t, from: "Not Connected", to: "Connecting")
                w.stateChange(y, x, t + w.ms(1), from: "Not Connected", to: "Connecting")
                let rtt = w.rtt(l.interface)
                t = w.establish(t + w.ms(2), l, rtt: rtt) + w.ms(30, spread: 10)
                mesh.append(l)
            }
        }
        let start = max(handshakeEnds.max() ?? t, t)
        let end = start + w.ms(15_000)
        for (i, l) in links.enumerated() {
            let rtt = w.rtt(l.interface)
            var chats: [(SimDevice, Double, String)] = [(host, 3.0, "Welcome, everyone!")]
            if i == 0 { chats.append((l.b, 5.0, "Hello from \(l.b.name)")) }
            _ = w.steady(handshakeEnds[i], l, until: end, rtt: rtt, keepAlives: true, chats: chats,
                         heartbeatPhase: 0.5 + Double(i) * 0.3)
        }
        for (i, l) in mesh.enumerated() {
            _ = w.steady(start, l, until: end, rtt: w.rtt(l.interface), keepAlives: false, heartbeatPhase: 0.2 + Double(i) * 0.4)
        }
        w.app(host, end + w.ms(100), "User ended the chat")
        for (i, l) in links.enumerated() { w.disconnect(end + w.ms(100 + Double(i) * 2), l, by: host, rtt: w.rtt(l.interface)) }
        w.stopAdvertising(host, end + w.ms(400))
        return []
    }

    // MARK: handshake timeouts

    static func handshakeTimeoutICE(_ w: World, encrypted: Bool) -> [ExpectedFinding] {
        let iface = w.addInterface(name: "awdl0", linkType: .ethernet, family: .v6, description: "AWDL peer-to-peer Wi-Fi")
        let a = w.addDevice("Alice's iPhone", interfaces: [iface])
        let b = w.addDevice("Bob's iPad", interfaces: [iface])
        w.discovery([(a, 0.05), (b, 0.4)])
        let rtt = w.rtt(iface)
        let inv = w.invite(w.at(1.7), browser: a, advertiser: b, outcome: .accept, encrypted: encrypted, rtt: rtt)
        guard let l = inv.link else { return [] }
        w.listenLogs(inv.end + w.ms(2), l)
        // Bob's app goes to the background: MPC stops advertising (goodbye) and the app is suspended.
        let tb = inv.end + w.ms(40, spread: 5)
        w.app(b, tb - w.ms(1), "Application did enter background")
        w.stopAdvertising(b, tb)
        w.mute(b, from: tb + w.ms(10))
        w.lost(a, b, tb + w.ms(12, spread: 2))
        let timeout = w.iceUnanswered(inv.end + w.ms(8, spread: 2), l)
        w.stateChange(a, b, timeout + w.ms(1), from: "Connecting", to: "Not Connected")
        return [finding("handshake-timeout", peer: b, observer: a, time: timeout, tolerance: 3, phase: "ice",
                        detail: "ICE connectivity checks from \(a.name) to \(b.name) go unanswered; the 10 s ICE timer fires on channel 0")]
    }

    static func handshakeTimeoutDTLS(_ w: World) -> [ExpectedFinding] {
        let iface = w.addInterface(name: "en0", linkType: .ethernet, family: .v4, description: "Wi-Fi")
        let a = w.addDevice("Alice's iPhone", interfaces: [iface])
        let b = w.addDevice("Bob's MacBook Pro", platform: "macOS", interfaces: [iface])
        w.discovery([(a, 0.05), (b, 0.3)])
        let rtt = w.rtt(iface)
        let inv = w.invite(w.at(1.5), browser: a, advertiser: b, outcome: .accept, encrypted: true, rtt: rtt)
        guard let l = inv.link else { return [] }
        w.listenLogs(inv.end + w.ms(2), l)
        let t = w.iceConnect(inv.end + w.ms(6, spread: 2), l, rtt: rtt)
        let timeout = w.dtlsUnanswered(t + w.ms(2, spread: 1), l)
        w.stateChange(a, b, timeout + w.ms(1), from: "Connecting", to: "Not Connected")
        w.log(b, timeout + w.ms(40, spread: 10), "GCKSession", "Perform DTLS Handshake for participant [\(a.pidHex)] on channel [\(l.channel)] failed with hResult [-2146828288].")
        w.stateChange(b, a, timeout + w.ms(42, spread: 10), from: "Connecting", to: "Not Connected")
        return [finding("handshake-timeout", peer: b, observer: a, time: timeout, tolerance: 3, phase: "dtls",
                        detail: "ICE succeeds but \(b.name) never answers \(a.name)'s DTLS ClientHello (retransmitted 1, 2, 4 s apart); the 10 s DTLS handshake timer fires")]
    }

    static func handshakeTimeoutApp(_ w: World, encrypted: Bool) -> [ExpectedFinding] {
        let iface = w.addInterface(name: "any", linkType: .linuxSLL, family: .v4, description: "Linux cooked capture on the Wi-Fi LAN")
        let a = w.addDevice("Alice's iPhone", interfaces: [iface])
        let b = w.addDevice("Bob's iPhone", interfaces: [iface])
        w.discovery([(a, 0.05), (b, 0.3)])
        guard let (l, t, rtt) = connectPair(w, a, b, encrypted: encrypted, inviteAt: 1.5) else { return [] }
        let hsStart = t + w.ms(1000, spread: 30)
        let hs = w.appHandshake(hsStart, l, rtt: rtt, answered: false)
        _ = w.steady(t, l, until: hs.end, rtt: rtt, keepAlives: false)
        w.app(a, hs.end + w.ms(0.3), "Disconnecting from peer: \(b.name)")
        w.disconnect(hs.end + w.ms(0.5), l, by: a, rtt: rtt)
        // Encrypted, the app messages are inside DTLS records: only the log shows the handshake went
        // unanswered (both sides' heartbeats and acknowledgements go on, so the capture looks healthy).
        return [finding("handshake-timeout", peer: b, observer: a, time: hs.end, tolerance: 2, phase: "app",
                        detail: "\(a.name) sends the app 'handshake'; \(b.name) never answers with 'handshake_response'; the 10 s app timer fires"
                            + (encrypted ? " (encrypted: the app messages are inside DTLS, only the log shows it)" : ""),
                        capture: !encrypted)]
    }

    // MARK: keep-alive timeout

    static func keepAliveTimeout(_ w: World, encrypted: Bool) -> [ExpectedFinding] {
        let iface = w.addInterface(name: "en0", linkType: .ethernet, family: .v4, description: "Wi-Fi")
        let a = w.addDevice("Alice's iPhone", interfaces: [iface])
        let b = w.addDevice("Bob's iPad", interfaces: [iface])
        w.discovery([(a, 0.05), (b, 0.25)])
        guard let (l, t, rtt) = connectPair(w, a, b, encrypted: encrypted, inviteAt: 1.5) else { return [] }
        let hs = w.appHandshake(t + w.ms(1000, spread: 30), l, rtt: rtt, answered: true)
        let freeze = hs.end + w.ms(9_300, spread: 50)
        w.app(b, freeze - w.ms(1), "Application will resign active")
        w.mute(b, from: freeze)
        let st = w.steady(hs.end, l, until: hs.end + w.ms(40_000), rtt: rtt, keepAlives: true, silence: (b, freeze),
                          chats: [(a, 1.5, "Are you there?")])
        guard let to = st.keepAliveTimeout else { return [] }
        w.disconnect(to.time + w.ms(0.5), l, by: a, rtt: rtt, remoteNotices: false)
        // Encrypted, the keep-alives are inside DTLS and the session ends 6-7 s into the silence, well
        // before the 15 s session-traffic threshold a capture alone can judge: only the log shows it.
        return [finding("keepalive-timeout", peer: b, observer: a, time: to.time, tolerance: 3,
                        detail: "\(b.name)'s keep_alive messages and GCK heartbeats stop while \(a.name)'s continue; the 6 s keep-alive monitor fires"
                            + (encrypted ? " (encrypted: the keep-alives are inside DTLS and the session ends before 15 s of silence, only the log shows it)" : ""),
                        capture: !encrypted)]
    }

    /// The keep-alive timeout again, but the capturing machine's buffer overflowed for 2.5 s inside the
    /// silence (a burst of other traffic): it dropped 40 packets, among them every packet of Alice's in
    /// that stretch, and says so in its interface statistics. The silence is real (the log shows the
    /// timer fire), but the capture alone cannot tell it from its own loss: the finding is uncertain.
    static func keepAliveLossyCapture(_ w: World, encrypted: Bool) -> [ExpectedFinding] {
        var found = keepAliveTimeout(w, encrypted: encrypted)
        guard let f = found.first, let iface = w.interfaces.indices.first, let alice = w.devices.first else { return found }
        let start = f.time - w.ms(4_500), end = start + w.ms(2_500)
        let aliceAddress = w.address(alice, iface)
        w.captureDrops.append(World.CaptureDrop(interface: iface, start: start, end: end, extra: 31) { frame in
            frame.ipPacket.count >= 16 && Array(frame.ipPacket[12 ..< 16]) == aliceAddress
        })
        found[0].confidence = f.evidence.contains("capture") ? "uncertain" : nil
        found[0].detail += "; the capture dropped \(alice.name)'s packets and 31 others from \(LogTime.iso(start)) to \(LogTime.iso(end)) "
            + "(pcapng interface statistics): uncertain from the capture alone, certain once the log confirms it"
        return found
    }

    // MARK: encryption mismatch

    /// Alice's session requires encryption, Bob's app built its MCSession with `.none`. The invitation
    /// goes through (each side's connection data says its preference); ICE connects; then Alice sends
    /// DTLS ClientHellos (`0xD0…`) and Bob plaintext GCK Hellos (`0xC1…`), neither understands the
    /// other, and Alice's 10 s DTLS handshake timer fires: the session never comes up.
    static func encryptionMismatch(_ w: World) -> [ExpectedFinding] {
        let iface = w.addInterface(name: "en0", linkType: .ethernet, family: .v4, description: "Wi-Fi")
        let a = w.addDevice("Alice's iPhone", interfaces: [iface])
        let b = w.addDevice("Bob's iPad", interfaces: [iface])
        w.discovery([(a, 0.05), (b, 0.3)])
        let rtt = w.rtt(iface)
        let t0 = w.at(1.5)
        let inv = w.invite(t0, browser: a, advertiser: b, outcome: .accept, encrypted: true, rtt: rtt, advertiserPreference: EncryptionPreference.none)
        guard let l = inv.link else { return [] }
        w.log(a, inv.end + w.ms(1), "MCSession", "Peer [\(b.namePID)] has incompatible encryption preference [None].")
        w.listenLogs(inv.end + w.ms(2), l)
        let t = w.iceConnect(inv.end + w.ms(6, spread: 2), l, rtt: rtt)
        let timeout = w.dtlsUnanswered(t + w.ms(2, spread: 1), l)
        // Bob speaks plaintext GCK: Hellos, retransmitted, never answered.
        var th = t + w.ms(3, spread: 1)
        while th < timeout {
            w.udpLater(th, iface: iface, from: b, sport: l.bPort, to: a, dport: l.aPort) {
                GCKPacket.hello(source: b.peer.participant, destination: a.peer.participant, token: l.helloWord)
            }
            th += w.ms(2_000, spread: 20)
        }
        w.stateChange(a, b, timeout + w.ms(1), from: "Connecting", to: "Not Connected")
        w.stateChange(b, a, timeout + w.ms(40, spread: 10), from: "Connecting", to: "Not Connected")
        // The handshake timers that fire are the mismatch's consequence: one finding, not three.
        return [
            finding("channel-error", peer: b, observer: a, time: t0, tolerance: 1,
                    detail: "\(b.name) uses encryptionPreference none (plaintext GCK 0xC1…), \(a.name) requires it (DTLS 0xD0…); neither answers "
                        + "the other and the 10 s DTLS handshake timer fires at \(LogTime.iso(timeout)): the session never comes up"),
        ]
    }

    // MARK: duplicate connection

    static func duplicateConnection(_ w: World, encrypted: Bool) -> [ExpectedFinding] {
        let iface = w.addInterface(name: "awdl0", linkType: .ethernet, family: .v6, description: "AWDL peer-to-peer Wi-Fi")
        let a = w.addDevice("Alice's iPhone", interfaces: [iface])
        let b = w.addDevice("Bob's iPad", interfaces: [iface])
        w.discovery([(a, 0.05), (b, 0.08)])
        let rtt = w.rtt(iface)
        let t1 = w.at(1.5)
        let inv1 = w.invite(t1, browser: a, advertiser: b, outcome: .accept, encrypted: encrypted, rtt: rtt)
        let inv2 = w.invite(t1 + w.ms(40, spread: 5), browser: b, advertiser: a, outcome: .accept, encrypted: encrypted, rtt: rtt,
                            advertiserState: 1)
        guard let l1 = inv1.link, let l2 = inv2.link else { return [] }
        let c1 = w.establish(inv1.end + w.ms(3), l1, rtt: rtt)
        let c2 = w.establish(inv2.end + w.ms(3), l2, rtt: rtt, announce: false)
        // The second session completes: MCSession already has the peer connected; the seed app's
        // duplicate check fires and `session.disconnect()` drops everything.
        w.log(a, c2, "MCSession", "Peer already in state [Connected]")
        w.log(b, c2 + w.ms(0.5), "MCSession", "Peer already in state [Connected]")
        w.app(a, c2 + w.ms(0.6), "Peer \(b.name) changed state: 2")
        w.app(a, c2 + w.ms(0.7), "Peer connected: \(b.name)")
        w.app(a, c2 + w.ms(0.9), "Ignoring duplicate connection from \(b.name)")
        _ = w.steady(c1, l1, until: c2, rtt: rtt, keepAlives: false, heartbeatPhase: 0.1)
        w.disconnect(c2 + w.ms(1.2), l1, by: a, rtt: rtt)
        w.log(a, c2 + w.ms(1.5), "GCKSession", "Disconnecting participant [\(b.pidHex)].")
        w.log(a, c2 + w.ms(1.6), "GCKSession", "Closing connection to participant [\(b.pidHex)] on channel [\(l2.channel)].")
        // Heartbeats on both sessions in between make the two UDP flows visible for a while.
        _ = w.steady(c2, l2, until: c2 + w.ms(1), rtt: rtt, keepAlives: false)
        return [finding("duplicate-connection", peer: b, observer: a, time: c2, tolerance: 3,
                        detail: "\(a.name) and \(b.name) invite each other within 40 ms: two invitation channels (to ports \(b.srvPort) and \(a.srvPort)) "
                            + "and two GCK sessions (UDP \(l1.aPort)<->\(l1.bPort) and \(l2.aPort)<->\(l2.bPort))")]
    }

    // MARK: channel errors

    static func dtlsAlert(_ w: World) -> [ExpectedFinding] {
        let iface = w.addInterface(name: "en0", linkType: .ethernet, family: .v4, description: "Wi-Fi")
        let a = w.addDevice("Alice's iPhone", interfaces: [iface])
        let b = w.addDevice("Bob's iPad", interfaces: [iface])
        w.discovery([(a, 0.05), (b, 0.3)])
        guard let (l, t, rtt) = connectPair(w, a, b, encrypted: true, inviteAt: 1.5) else { return [] }
        let hs = w.appHandshake(t + w.ms(1000, spread: 30), l, rtt: rtt, answered: true)
        let st = w.steady(hs.end, l, until: hs.end + w.ms(8_000), rtt: rtt, keepAlives: true, chats: [(b, 2.0, "Sending you the photo")])
        let ta = st.end + w.ms(300, spread: 50)
        // An encrypted fatal alert from Bob (epoch 1).
        let fragment = w.rng.bytes(DTLSRecord.cbcSize(2))
        w.udpLater(ta, iface: iface, from: b, sport: l.bPort, to: a, dport: l.aPort) {
            DTLSRecord.wrapped(.alert, epoch: 1, sequence: l.nextDTLS(b), fragment: fragment)
        }
        w.log(b, ta - w.ms(0.5), "GCKSession", "Closing connection to participant [\(a.pidHex)] on channel [\(l.channel)].")
        let tr = ta + rtt / 2
        w.log(a, tr + w.ms(0.4), "GCKSession",
              "SSLWrite failed, packet was not sent for participant [\(b.pidHex)] channelID [\(l.channel)] DTLS context [\(a.pointer())] pCList [\(a.pointer())]; SSLError = errSSLClosedAbort (-9806): errno = Connection reset by peer (54).")
        w.log(a, tr + w.ms(0.6), "GCKSession", "Failed to send Data packet to participant \(b.pidHex). Will mark channel \(l.channel) as invalid.")
        w.log(a, tr + w.ms(0.8), "GCKSession", "Closing connection to participant [\(b.pidHex)] on channel [\(l.channel)].")
        w.stateChange(a, b, tr + w.ms(1.2), from: "Connected", to: "Not Connected")
        w.stateChange(b, a, ta + w.ms(0.2), from: "Connected", to: "Not Connected")
        return [finding("channel-error", peer: b, observer: a, time: ta, tolerance: 2,
                        detail: "\(b.name) sends a DTLS alert record (content type 21) on the session flow; \(a.name)'s SSLWrite fails and the channel closes")]
    }

    /// Kills `b`'s app at `tk`; `a`'s next datagram draws an ICMP port unreachable and a channel error.
    /// Returns the ICMP time.
    static func killAndUnreachable(_ w: World, _ l: GCKLink, kill b: SimDevice, at tk: Int64, rtt: Int64) -> Int64 {
        let a = l.other(b)
        w.mute(b, from: tk)
        let tf = tk + w.ms(1200, spread: 100)
        let json = AppJSON.keepAlive(a, tf)
        let src = a.peer.participant, dst = b.peer.participant
        let size = GCKPacket.data(source: src, destination: dst, serial: 0, payload: Array(json.utf8)).count
        let ip = w.sendGCK(tf, l, from: a, size: size) {
            GCKPacket.data(source: src, destination: dst, serial: l.nextSerial(a), payload: Array(json.utf8))
        }
        let ti = tf + rtt / 2
        w.icmpUnreachable(ti, iface: l.interface, from: b, to: a, original: ip)
        let tl = ti + rtt / 2
        w.log(a, tl + w.ms(0.3), "GCKSession", "Send UDP packet failed with error (8000003D).")
        w.log(a, tl + w.ms(0.5), "GCKSession", "Failed to send Data packet to participant \(b.pidHex). Will mark channel \(l.channel) as invalid.")
        w.log(a, tl + w.ms(0.7), "GCKSession", "Closing connection to participant [\(b.pidHex)] on channel [\(l.channel)].")
        w.app(a, tl + w.ms(1), "Failed to send keep-alive: Error Domain=MCErrorDomain Code=1 \"Peers (\(b.name)) not connected\"")
        w.app(a, tl + w.ms(1.2), "Disconnecting from peer: \(b.name)")
        w.stateChange(a, b, tl + w.ms(1.5), from: "Connected", to: "Not Connected")
        return ti
    }

    static func channelErrorICMP(_ w: World, encrypted: Bool) -> [ExpectedFinding] {
        let iface = w.addInterface(name: "any", linkType: .linuxSLL, family: .v4, description: "Linux cooked capture on the Wi-Fi LAN")
        let a = w.addDevice("Alice's iPhone", interfaces: [iface])
        let b = w.addDevice("Bob's iPhone", interfaces: [iface])
        w.discovery([(a, 0.05), (b, 0.3)])
        guard let (l, t, rtt) = connectPair(w, a, b, encrypted: encrypted, inviteAt: 1.5) else { return [] }
        let hs = w.appHandshake(t + w.ms(1000, spread: 30), l, rtt: rtt, answered: true)
        let tk = hs.end + w.ms(7_100, spread: 50)
        _ = w.steady(hs.end, l, until: tk, rtt: rtt, keepAlives: true, chats: [(a, 1.0, "Can you hear me?")])
        let ti = killAndUnreachable(w, l, kill: b, at: tk, rtt: rtt)
        return [finding("channel-error", peer: b, observer: a, time: ti, tolerance: 2,
                        detail: "\(b.name)'s app dies; \(a.name)'s next datagram to UDP port \(l.bPort) draws ICMP port unreachable and the channel is marked invalid")]
    }

    static func channelErrorReset(_ w: World, encrypted: Bool) -> [ExpectedFinding] {
        let iface = w.addInterface(name: "en0", linkType: .ethernet, family: .v4, description: "Wi-Fi")
        let a = w.addDevice("Alice's iPhone", interfaces: [iface])
        let b = w.addDevice("Bob's iPad", interfaces: [iface])
        w.discovery([(a, 0.05), (b, 0.3)])
        let rtt = w.rtt(iface)
        let inv = w.invite(w.at(1.5), browser: a, advertiser: b, outcome: .resetBeforeResponse, encrypted: encrypted, rtt: rtt)
        let tReset = inv.end - w.ms(2) - rtt / 2
        return [finding("channel-error", peer: b, observer: a, time: tReset, tolerance: 2,
                        detail: "the invitation channel to \(b.name)'s port \(b.srvPort) is reset (TCP RST) after the Invite, before any Response")]
    }

    // MARK: reconnect storm

    static func reconnectStorm(_ w: World, encrypted: Bool) -> [ExpectedFinding] {
        let iface = w.addInterface(name: "any", linkType: .linuxSLL, family: .v4, description: "Linux cooked capture on the Wi-Fi LAN")
        let a = w.addDevice("Alice's iPhone", interfaces: [iface])
        let b = w.addDevice("Bob's iPhone", interfaces: [iface])
        w.discovery([(a, 0.05), (b, 0.3)])
        guard let (l, t, rtt) = connectPair(w, a, b, encrypted: encrypted, inviteAt: 1.5) else { return [] }
        let hs = w.appHandshake(t + w.ms(1000, spread: 30), l, rtt: rtt, answered: true)
        let tk = hs.end + w.ms(5_100, spread: 50)
        _ = w.steady(hs.end, l, until: tk, rtt: rtt, keepAlives: true)
        let ti = killAndUnreachable(w, l, kill: b, at: tk, rtt: rtt)
        // Back-off as in the Diffusion seed: first retry immediate, then 1 s more per attempt up to 5 s.
        var ta = ti + rtt / 2 + w.ms(5)
        let firstAttempt = ta
        let oldPort = b.srvPort
        var failed = 0
        var last = ta
        for attempt in 1 ... 7 {
            let delay = min(attempt - 1, 5)
            ta += w.ms(Double(delay) * 1000, spread: delay == 0 ? 0 : 30)
            w.app(a, ta - w.ms(0.5), "BackOffReconnectionStrategy --> session wishes to reconnect. Current state of strategy --> attempt:[\(attempt)] delay:[\(delay)] maxDelay:[5]")
            if attempt > 1 {
                let elapsed = Double(ta - last) / 1e9
                w.app(a, ta - w.ms(0.7), "BackOffReconnectionStrategy --> elapsed time since last attempt: \(ExpectedJSON.num(elapsed))")
            }
            w.app(a, ta, "BackOffReconnectionStrategy --> attempt starting now")
            w.app(a, ta + w.ms(0.2), "Inviting \(b.name)")
            w.stateChange(a, b, ta + w.ms(0.3), from: "Not Connected", to: "Connecting")
            w.refusedDial(ta + w.ms(0.5), browser: a, advertiser: b, port: oldPort, rtt: rtt)
            w.stateChange(a, b, ta + w.ms(3) + rtt, from: "Connecting", to: "Not Connected")
            failed += 1
            last = ta
        }
        // Bob relaunches the app: a new process, a new SRV port, the same archived MCPeerID.
        let tr = ta + w.ms(1500, spread: 100)
        w.unmute(b)
        b.processID += 17
        b.threadID += 311
        w.earlierSRVPorts[b.slug, default: []].append(oldPort)
        let delta = 1 + w.rng.int(1 ... 900)
        b.srvPort = UInt16(Int(oldPort) + delta <= 65_535 ? Int(oldPort) + delta : Int(oldPort) - delta)
        b.nextUDPPort = 16402
        w.app(b, tr - w.ms(50), "Application: active")
        w.startAdvertisingAndBrowsing(b, tr)
        let tf = tr + w.ms(27, spread: 3)
        w.log(a, tf, "MCNearbyServiceBrowser", "Peer already in the dictionary, but has a different NSNetService object. will replace it with the newly found peer.")
        w.found(a, b, tf + w.ms(1))
        w.mdnsAnnounce(a, tr + w.ms(60, spread: 20), iface: iface)
        w.found(b, a, tr + w.ms(62, spread: 2))
        // The next attempt (delay 5 s after the last one) succeeds.
        let t8 = ta + w.ms(5000, spread: 30)
        w.app(a, t8 - w.ms(0.5), "BackOffReconnectionStrategy --> session wishes to reconnect. Current state of strategy --> attempt:[8] delay:[5] maxDelay:[5]")
        w.app(a, t8, "BackOffReconnectionStrategy --> attempt starting now")
        let inv = w.invite(t8 + w.ms(0.5), browser: a, advertiser: b, outcome: .accept, encrypted: encrypted, rtt: rtt)
        if let l2 = inv.link {
            let c = w.establish(inv.end + w.ms(3), l2, rtt: rtt)
            let hs2 = w.appHandshake(c + w.ms(1000, spread: 30), l2, rtt: rtt, answered: true)
            _ = w.steady(hs2.end, l2, until: hs2.end + w.ms(4_000), rtt: rtt, keepAlives: true)
        }
        return [
            finding("channel-error", peer: b, observer: a, time: ti, tolerance: 2,
                    detail: "\(b.name)'s app is killed; the session's next datagram draws ICMP port unreachable"),
            finding("reconnect-storm", peer: b, observer: a, time: firstAttempt, tolerance: 3, attempts: failed,
                    detail: "\(failed) failed re-invitations to \(b.name)'s stale port \(oldPort) (TCP SYN answered by RST) at back-off 0, 1, 2, 3, 4, 5, 5 s "
                        + "between \(LogTime.iso(firstAttempt)) and \(LogTime.iso(last)); attempt 8 reaches the relaunched app on port \(b.srvPort)"),
        ]
    }

    // MARK: reconnects on the same ports

    /// A session between `l`'s devices runs from `t0` to `until` (GCK heartbeats and app keep-alives),
    /// then `b` drops out of range: nothing more is seen of the session; `a`'s MPC reports Not
    /// Connected a moment later. Returns the time `a` noticed.
    static func dropOut(_ w: World, _ l: GCKLink, from t0: Int64, until: Int64, rtt: Int64) -> Int64 {
        // App traffic starts a moment after GCK is up (keep-alive times jitter both ways).
        _ = w.steady(t0 + w.ms(300), l, until: until, rtt: rtt, keepAlives: true, heartbeatPhase: 0.4)
        let a = l.a, b = l.b
        a.neighbors = max(0, a.neighbors - 1)
        b.neighbors = max(0, b.neighbors - 1)
        let tn = until + w.ms(400, spread: 40)
        w.log(a, tn - w.ms(0.5), "GCKSession", "Disconnecting participant [\(b.pidHex)].")
        w.stateChange(a, b, tn, from: "Connected", to: "Not Connected")
        w.stateChange(b, a, tn + w.ms(3, spread: 1), from: "Connected", to: "Not Connected")
        return tn
    }

    /// A new invitation and session for a pair whose sockets were closed: GCK binds from 16402 again,
    /// so the new session uses the same UDP ports as the one before.
    static func reinvite(_ w: World, at t: Int64, _ a: SimDevice, _ b: SimDevice, encrypted: Bool, rtt: Int64) -> (GCKLink, Int64)? {
        a.nextUDPPort = 16402
        b.nextUDPPort = 16402
        w.app(a, t - w.ms(2), "Browser found \(b.name)")
        let inv = w.invite(t, browser: a, advertiser: b, outcome: .accept, encrypted: encrypted, rtt: rtt)
        guard let l = inv.link else { return nil }
        return (l, w.establish(inv.end + w.ms(3, spread: 1), l, rtt: rtt))
    }

    static func reconnectSamePorts(_ w: World, encrypted: Bool) -> [ExpectedFinding] {
        let iface = w.addInterface(name: "en0", linkType: .ethernet, family: .v4, description: "Wi-Fi")
        let a = w.addDevice("Alice's iPhone", interfaces: [iface])
        let b = w.addDevice("Bob's iPhone", interfaces: [iface])
        w.discovery([(a, 0.05), (b, 0.3)])
        let rtt = w.rtt(iface)
        guard var (l, t) = reinvite(w, at: w.at(1.5), a, b, encrypted: encrypted, rtt: rtt) else { return [] }
        // Bob's device keeps dropping off the link; each time Alice's app re-invites it after a back-off
        // one second longer than the last (0, 1, 2, 3, 4, 5 s).
        var firstRetry: Int64?
        var retries = 0
        for attempt in 0 ... 6 {
            let noticed = dropOut(w, l, from: t, until: t + w.ms(attempt == 6 ? 12_000 : 2_500, spread: 50), rtt: rtt)
            if attempt == 6 {
                w.app(a, noticed + w.ms(1), "User ended the chat")
                break
            }
            let next = noticed + w.ms(Double(attempt) * 1000 + 20, spread: 5)
            guard let (l2, t2) = reinvite(w, at: next, a, b, encrypted: encrypted, rtt: rtt) else { return [] }
            if firstRetry == nil { firstRetry = next }
            retries += 1
            (l, t) = (l2, t2)
        }
        guard let first = firstRetry else { return [] }
        return [finding("reconnect-storm", peer: b, observer: a, time: first, tolerance: 1, attempts: retries,
                        detail: "\(b.name) drops out \(retries) times; \(a.name) re-invites it after 0, 1, 2, 3, 4, 5 s and each new session "
                            + "uses UDP \(l.aPort)<->\(l.bPort) again: \(retries + 1) sessions, each superseding the last, no duplicate")]
    }

    static func duplicateBesideReconnect(_ w: World, encrypted: Bool) -> [ExpectedFinding] {
        let iface = w.addInterface(name: "en0", linkType: .ethernet, family: .v4, description: "Wi-Fi")
        let a = w.addDevice("Alice's iPhone", interfaces: [iface])
        let b = w.addDevice("Bob's iPad", interfaces: [iface])
        w.discovery([(a, 0.05), (b, 0.3)])
        let rtt = w.rtt(iface)
        guard let (l1, t1) = reinvite(w, at: w.at(1.5), a, b, encrypted: encrypted, rtt: rtt) else { return [] }
        // Session #1 goes quiet (Bob out of range); Alice re-invites on the same ports: #1 is superseded.
        let noticed = dropOut(w, l1, from: t1, until: t1 + w.ms(4_000, spread: 50), rtt: rtt)
        guard let (l2, t2) = reinvite(w, at: noticed + w.ms(1_020, spread: 5), a, b, encrypted: encrypted, rtt: rtt) else { return [] }
        // While #2 runs, Bob's app (which also browses) invites Alice: a second session on other ports.
        let tDup = t2 + w.ms(6_000, spread: 50)
        let inv = w.invite(tDup, browser: b, advertiser: a, outcome: .accept, encrypted: encrypted, rtt: rtt, advertiserState: 2)
        guard let l3 = inv.link else { return [] }
        let t3 = w.establish(inv.end + w.ms(3, spread: 1), l3, rtt: rtt, announce: false)
        let end = t3 + w.ms(4_000, spread: 50)
        _ = w.steady(t2 + w.ms(300), l2, until: end, rtt: rtt, keepAlives: true, heartbeatPhase: 0.4)
        _ = w.steady(t3, l3, until: end, rtt: rtt, keepAlives: false, heartbeatPhase: 0.7)
        w.app(a, end + w.ms(100), "User ended the chat")
        w.disconnect(end + w.ms(100), l3, by: a, rtt: rtt)
        w.disconnect(end + w.ms(102), l2, by: a, rtt: rtt)
        return [finding("duplicate-connection", peer: b, observer: a, time: tDup, tolerance: 1,
                        detail: "\(b.name) invites \(a.name) while their second session (UDP \(l2.aPort)<->\(l2.bPort)) runs: a third session on "
                            + "UDP \(l3.aPort)<->\(l3.bPort) carries heartbeats beside it; the first session, quiet when the second began, was superseded (no finding)")]
    }

    // MARK: declined invitation

    static func declinedInvitation(_ w: World, encrypted: Bool) -> [ExpectedFinding] {
        let iface = w.addInterface(name: "en0", linkType: .ethernet, family: .v4, description: "Wi-Fi")
        let a = w.addDevice("Alice's iPhone", interfaces: [iface])
        let b = w.addDevice("Bob's iPad", interfaces: [iface])
        w.discovery([(a, 0.05), (b, 0.3)])
        let rtt = w.rtt(iface)
        let inv = w.invite(w.at(1.5), browser: a, advertiser: b, outcome: .decline, encrypted: encrypted, rtt: rtt,
                           declineReason: "User declined the invitation from \(a.name)")
        var f = finding("declined-invitation", peer: b, observer: a, time: inv.end - 2 * rtt, tolerance: 2,
                        detail: "\(b.name) answers \(a.name)'s Invite with MCNearbyServiceAcceptInviteKey = false (no connection data)")
        f.evidence.append("log:\(b.slug)")
        return [f]
    }

    // MARK: identity collision

    static func identityCollision(_ w: World, encrypted: Bool) -> [ExpectedFinding] {
        let iface = w.addInterface(name: "en0", linkType: .ethernet, family: .v4, description: "Wi-Fi")
        let host = w.addDevice("Bob's iPad", interfaces: [iface])
        let first = w.addDevice("Alice's iPhone", interfaces: [iface])
        let second = w.addDevice("Alice's iPhone", interfaces: [iface])
        w.discovery([(host, 0.05), (first, 0.3), (second, 3.0)])
        guard let (l, t, rtt) = connectPair(w, host, first, encrypted: encrypted, inviteAt: 1.2) else { return [] }
        let hs = w.appHandshake(t + w.ms(1000, spread: 30), l, rtt: rtt, answered: true)
        // The second "Alice's iPhone" invites Bob; Bob's app keys peers by display name and declines.
        let inv = w.invite(w.at(4.2), browser: second, advertiser: host, outcome: .decline, encrypted: encrypted, rtt: rtt,
                           declineReason: "Declining invitation from \(second.name): a peer with this name is already connected")
        let st = w.steady(hs.end, l, until: max(hs.end, inv.end) + w.ms(8_000), rtt: rtt, keepAlives: true)
        w.app(host, st.end + w.ms(100), "User ended the chat")
        w.disconnect(st.end + w.ms(100), l, by: host, rtt: rtt)
        var f = finding("declined-invitation", peer: host, observer: second, time: inv.end - 2 * rtt, tolerance: 2,
                        detail: "two devices advertise the display name \"\(second.name)\" (\(first.peer.idString), \(second.peer.idString)); "
                            + "\(host.name), already connected to the first, declines the second one's invitation (MCNearbyServiceAcceptInviteKey = false)")
        f.evidence.append("log:\(host.slug)")
        // Seen from the network, the same display name is advertised under two peer IDs at once.
        let dup = finding("duplicate-connection", peer: second, observer: host, time: w.at(3.0), tolerance: 2,
                          detail: "display name \"\(second.name)\" is advertised by \(first.peer.idString) and \(second.peer.idString) at once")
        return [f, dup]
    }
}
