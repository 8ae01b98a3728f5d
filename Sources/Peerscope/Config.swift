import Foundation
import PeerscopeCore
import PeerscopeDetectors
import PeerscopeLogs
import PeerscopeTimeline
import Yams

/// Reading the detector configuration file (YAML).
public enum PeerscopeConfig {
    /// Loads a YAML file of detector settings, e.g.
    /// ```yaml
    /// thresholds:
    ///   keepalive-timeout.app: 8s
    ///   handshake-timeout.ice: 12
    /// ignore: [declined-invitation]
    /// ```
    /// A `suppressions` section is left to `SuppressionList`. Errors name the file.
    public static func load(path: String) throws(InputError) -> DetectorConfig {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw InputError(path: path, message: "\(path): cannot read the configuration file")
        }
        let text = String(decoding: data, as: UTF8.self)
        if let why = YAMLLimits.problem(text) { throw InputError(path: path, message: "\(path): \(why)") }
        let any: Any?
        do {
            any = try Yams.load(yaml: text)
        } catch {
            throw InputError(path: path, message: "\(path): not valid YAML: \(error)")
        }
        guard let any else { return .defaults }
        guard var dict = any as? [String: Any] else {
            throw InputError(path: path, message: "\(path): expected a mapping of detector settings at the top level")
        }
        // The suppression list shares the file (`SuppressionList` reads it).
        dict["suppressions"] = nil
        do {
            return try DetectorConfig(dictionary: dict)
        } catch {
            throw InputError(path: path, message: "\(path): \(error.description)")
        }
    }
}

/// Checking a user patterns file (`--patterns FILE`) before a run.
public enum PeerscopePatterns {

    /// Every problem of the file, one line each naming the file and the entry: unreadable or not YAML
    /// (thrown), a bad regex, a malformed or unknown `kind`. A kind the timeline does not know would
    /// only be an `other` entry, which hides typos (`app.timout`): such kinds are refused unless they
    /// say they are the user's own (`user.NAME`).
    public static func problems(path: String) throws(LogPatternFileError) -> [String] {
        let (plugins, problems) = try UserPatternPlugin.load(path: path)
        var out = problems.map(\.message)
        for p in plugins where !EventCatalogue.isUserKind(p.kind) {
            // Kinds whose timeline state depends on attributes a pattern may fill from its captures pass.
            if EventCatalogue.spec(p.kind)?.step.dependsOnAttributes == true { continue }
            if EventCatalogue.step(PeerEvent(kind: p.kind, t: 0, evidence: .logLine(input: 0, line: 1),
                                             source: p.descriptor.id, attrs: p.attrs)).state == .other {
                out.append("\(path): \(p.descriptor.id.dropFirst("log-user-".count)): unknown kind `\(p.kind.rawValue)`; "
                           + "use one the timeline knows (e.g. app.timeout, app.other, session.disconnected, gck.timeout, "
                           + "channel.send_error), or user.NAME for a kind of your own (shown as an `other` timeline entry)")
            }
        }
        return out
    }
}
