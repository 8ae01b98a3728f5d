import Foundation
import PeerscopeDetectors
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
    /// Errors name the file.
    public static func load(path: String) throws(InputError) -> DetectorConfig {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw InputError(path: path, message: "\(path): cannot read the configuration file")
        }
        let text = String(decoding: data, as: UTF8.self)
        let any: Any?
        do {
            any = try Yams.load(yaml: text)
        } catch {
            throw InputError(path: path, message: "\(path): not valid YAML: \(error)")
        }
        guard let any else { return .defaults }
        guard let dict = any as? [String: Any] else {
            throw InputError(path: path, message: "\(path): expected a mapping of detector settings at the top level")
        }
        do {
            return try DetectorConfig(dictionary: dict)
        } catch {
            throw InputError(path: path, message: "\(path): \(error.description)")
        }
    }
}
