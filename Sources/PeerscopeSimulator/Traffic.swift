// Higher-level traffic patterns built from World's blocks: discovery among several devices,
// the seeds' app handshake, and steady-state keep-alives, heartbeats and chat.

struct KeepAliveTimeout {
    var observer: SimDevice
    var peer: SimDevice
    var time: Int64
}

struct SteadyResult {
    var end: Int64
    var keepAliveTimeout: KeepAliveTimeout?
}

extension World {
    /// Every device starts advertising and browsing at its time; each finds the others on shared interfaces.
    func discovery(_ starts: [(SimDevice, Double)]) {
        for (d, s) in starts { startAdvertisingAndBrowsing(d, at(s)) }
        for (i, (x, sx)) in starts.enumerated() {
            for (j, (y, sy)) in starts.enumerated() where i < j {
                guard x.interfaces.contains(where: { y.interfaces.contains($0) }) else { continue }
                let iface = commonInterface(x, y)
                // The later one's query is answered by the earlier one; the earlier one hears the later one's announcement.
                let (early, late, lateStart) = sx <= sy ? (x, y, sy) : (y, x, sx)
                let answer = at(lateStart) + ms(2) + ms(Double(rng.int(20 ... 120)), spread: 0)
                mdnsAnnounce(early, answer, iface: iface)
                found(late, early, answer + ms(1.5, spread: 0.5))
                found(early, late, at(lateStart) + ms(26, spread: 3))
            }
        }
    }

    /// The seeds' app handshake: `handshake` from the inviter, `handshake_response` back (when `answered`).
    /// Returns the time the inviter considers the handshake done (or the handshake timeout time).
    func appHandshake(_ t0: Int64, _ l: GCKLink, rtt: Int64, answered: Bool) -> (end: Int64, completed: Bool) {
        let a = l.a, b = l.b
        app(a, t0 - ms(1002), "Waiting for channels to establish...")
        app(a, t0 - ms(2), "Starting handshake process")
        app(a, t0 - ms(1), "Preparing to send handshake...")
        app(a, t0, "Sending handshake...")
        let tr = appData(t0 + ms(0.3), l, from: a, json: AppJSON.handshake(a), rtt: rtt)
        app(a, t0 + ms(0.6), "Sent handshake to \(b.name)")
        let hsDesc = AppJSON.swiftDescription([("type", "handshake"), ("deviceId", "\(a.name)"), ("platform", a.platform)])
        app(b, tr + ms(0.5), "Received data from \(a.name): \(hsDesc)")
        if !answered {
            app(b, tr + ms(0.7), "Unknown message type: handshake")
            let tt = t0 + ms(10_000)
            app(a, tt, "Handshake timeout for peer: \(b.name)")
            return (tt, false)
        }
        let tResp = tr + ms(2, spread: 0.5)
        let ta = appData(tResp, l, from: b, json: AppJSON.handshakeResponse(b), rtt: rtt)
        let respDesc = AppJSON.swiftDescription([("type", "handshake_response"), ("status", "accepted"), ("deviceId", b.name)])
        app(a, ta + ms(0.5), "Received data from \(b.name): \(respDesc)")
        app(a, ta + ms(0.8), "Handshake accepted, waiting for channel stabilization...")
        app(a, ta + ms(400), "Channel stabilization delay completed")
        app(a, ta + ms(700), "Starting keep-alive exchange")
        return (ta + ms(1000), true)
    }

    /// Steady state on one link from `t0` to `until`: keep-alives every 2 s each way (when `keepAlives`),
    /// GCK heartbeats every 5.5-6 s each way, chat messages at the given offsets (seconds after `t0`).
    /// `silence`: that device sends nothing from that time on; its peer's keep-alive monitor then fires
    /// 6 s after the last keep-alive it received (checked every second), and the session ends there.
    func steady(_ t0: Int64, _ l: GCKLink, until: Int64, rtt: Int64, keepAlives: Bool,
                silence: (SimDevice, Int64)? = nil, chats: [(SimDevice, Double, String)] = [],
                heartbeatPhase: Double = 0.8) -> SteadyResult {
        var end = until
        var timeout: KeepAliveTimeout?
        // Keep-alive monitor (only when keep-alives run and someone goes silent).
        if keepAlives, let (silent, since) = silence {
            let observer = l.other(silent)
            // Last keep-alive the observer received: the silent side's ticks before `since`.
            var lastRx = t0
            var k = t0 + ms(300)
            while k < since { lastRx = k + rtt / 2; k += ms(2000) }
            var check = t0 + ms(1000)
            while check <= lastRx + ms(6000) { check += ms(1000) }
            timeout = KeepAliveTimeout(observer: observer, peer: silent, time: check)
            end = min(end, check)
        }
        func silentNow(_ d: SimDevice, _ t: Int64) -> Bool {
            if let (s, since) = silence, s === d, t >= since { return true }
            return false
        }
        let pairs: [(SimDevice, Int64)] = [(l.a, ms(0)), (l.b, ms(300))]
        for (d, phase) in pairs {
            let other = l.other(d)
            // Keep-alives.
            if keepAlives {
                var t = t0 + phase
                while t < end {
                    let tj = t + ms(0, spread: 150)
                    if tj < end && !silentNow(d, tj) {
                        let tr = appData(tj, l, from: d, json: AppJSON.keepAlive(d, tj), rtt: rtt)
                        let desc = AppJSON.swiftDescription([("type", "keep_alive"), ("timestamp", AppJSON.seconds(tj, sinceUnix: true)),
                                                             ("deviceId", d.name)])
                        if tr < end && !silentNow(other, tr) { app(other, tr + ms(0.5), "Received data from \(d.name): \(desc)") }
                    }
                    t += ms(2000)
                }
            }
            // Heartbeats.
            // Never before the steady state begins (a small phase with its jitter could land before
            // the session's own setup).
            var h = max(t0 + ms(1), t0 + ms(heartbeatPhase * 1000 + (d === l.a ? 0 : 1700), spread: 200))
            var retransmitLogged = false
            while h < end {
                if !silentNow(d, h) {
                    _ = heartbeat(h, l, from: d)
                    if let (s, since) = silence, s === other, h > since + ms(3000), !retransmitLogged {
                        let sn = Int(l.heartbeatSN[ObjectIdentifier(d), default: 1]) - 1
                        log(d, h + ms(1500), "GCKSession",
                            "Retransmitting Heartbeat with SN [\(sn)] to participant [\(other.pidHex)] over channel [\(l.channel)].")
                        retransmitLogged = true
                    }
                }
                h += ms(Double(rng.int(5500 ... 6000)), spread: 0)
            }
        }
        for (d, offset, text) in chats {
            let tc = t0 + ms(offset * 1000, spread: 100)
            if tc < end && !silentNow(d, tc) {
                appData(tc, l, from: d, json: AppJSON.chat(d, text, tc), rtt: rtt)
            }
        }
        if let to = timeout {
            app(to.observer, to.time, "Keep-alive timeout for peer: \(to.peer.name)")
            app(to.observer, to.time + ms(0.3), "Disconnecting from peer: \(to.peer.name)")
        }
        return SteadyResult(end: end, keepAliveTimeout: timeout)
    }

    func lastEventTime() -> Int64 {
        max(frames.map(\.time).max() ?? simulationEpochNanos, devices.flatMap { $0.logs.map(\.time) }.max() ?? simulationEpochNanos)
    }

    /// A few seconds of background after the last event, so a capture shows time passing beyond every
    /// finding: the browsers keep re-querying (RFC 6762 intervals of 1 s, then 2 s).
    func tail(after t: Int64) {
        for d in devices where !isMuted(d, t) {
            for iface in d.interfaces {
                mdnsQuery(d, t + ms(1000, spread: 80), iface: iface, unicastResponse: false)
                mdnsQuery(d, t + ms(3000, spread: 80), iface: iface, unicastResponse: false)
            }
        }
    }

    func rtt(_ iface: Int) -> Int64 {
        interfaces[iface].family == .v6 ? ms(9, spread: 3) : ms(4, spread: 1.5)
    }
}
