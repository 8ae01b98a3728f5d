import PeerscopeCore

/// Capture quality inside the verdicts (issue #11): a finding whose judgement rests on silence
/// (`Finding.silence`) inside a window with known packet loss is `uncertain`, with the reason.
public enum CaptureQuality {
    /// The findings with `confidence` and `caveats` set from `losses`.
    public static func qualify(_ findings: [Finding], losses: [CaptureLoss]) -> [Finding] {
        let hiding = losses.filter(\.hidesPackets)
        guard !hiding.isEmpty else { return findings }
        return findings.map { f in
            // A log line saying the timer fired does not depend on what the capture saw.
            guard let s = f.silence, f.details["confirmedByLog"] != "true" else { return f }
            let touching = hiding.filter { $0.overlaps(s.lowerBound, s.upperBound) }
            guard !touching.isEmpty else { return f }
            var g = f
            g.confidence = .uncertain
            g.caveats = touching.map(\.caveat)
            return g
        }
    }
}
