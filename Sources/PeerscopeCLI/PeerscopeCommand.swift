import ArgumentParser
import Foundation
import Peerscope

/// Exit codes a CI job can rely on.
enum ExitStatus {
    static let ok: Int32 = 0
    /// `check`: a finding at or above `--fail-on`.
    static let findings: Int32 = 1
    /// Bad command line.
    static let usage: Int32 = 2
    /// An input could not be read (missing, not a capture, truncated) or a capture could not start.
    static let input: Int32 = 3
}

@main
struct PeerscopeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "peerscope",
        abstract: "Tells you why nearby peer-to-peer (MultipeerConnectivity) sessions fail.",
        discussion: """
        peerscope reads captures (pcap, pcapng, gzip-compressed or not) and device logs, decodes \
        discovery (mDNS/DNS-SD), the MPC invitation channel, ICE/STUN, DTLS, the GCK session packets and \
        the apps' JSON messages, builds a timeline per peer and flags handshake timeouts, keep-alive \
        timeouts, duplicate connections and channel errors, with the frames and log lines as evidence.

        Exit codes: 0 success, 1 findings at or above --fail-on (check), 2 usage error, 3 unreadable or \
        truncated input, or a capture that could not start.

        Examples:
          peerscope analyze Samples/keepalive-timeout.pcapng
          peerscope analyze en0.pcapng awdl0.pcapng --log device.log
          peerscope check build/session.pcapng --fail-on error --output report.json
          sudo peerscope capture -i awdl0 --duration 60 --write session.pcapng
          peerscope decode Samples/healthy-pair.pcapng | jq 'select(.plugin == "gck-heartbeat")'
          peerscope plugins
        """,
        version: "0.1.0",
        subcommands: [Analyze.self, Check.self, Explain.self, Diff.self, Capture.self, Decode.self, Plugins.self, Simulate.self]
    )

    static func main() {
        // Write errors are seen as EPIPE (a closed pipe on standard output ends quietly; on a file
        // or named pipe it is an error naming the path), never as a silent kill by SIGPIPE.
        signal(SIGPIPE, SIG_IGN)
        // Likewise a file size limit (`ulimit -f`) is a write error naming the file (EFBIG), not a kill.
        signal(SIGXFSZ, SIG_IGN)
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch let code as ExitCode {
            Foundation.exit(code.rawValue)
        } catch let failure as CommandFailure {
            FileHandle.standardError.write(Data("peerscope: \(failure.message)\n".utf8))
            Foundation.exit(failure.status)
        } catch {
            let status = exitCode(for: error)
            if status == .success {
                // --help, --version
                print(fullMessage(for: error))
                Foundation.exit(ExitStatus.ok)
            }
            FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
            Foundation.exit(ExitStatus.usage)
        }
    }
}

/// A failure to report on one line with a chosen exit status.
struct CommandFailure: Error {
    var message: String
    var status: Int32
}

func printError(_ line: String) {
    FileHandle.standardError.write(Data("peerscope: \(line)\n".utf8))
}
