import ArgumentParser
import Foundation
import PeerscopeCapture
import PeerscopeSimulator

extension CaptureFileFormat: ExpressibleByArgument {}

/// `peerscope simulate`: deterministic MPC captures, device logs and expected findings.
struct Simulate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "Write a simulated MultipeerConnectivity capture, its device logs and its expected findings.",
        discussion: """
        Every scenario is deterministic: the same scenario, options and seed give byte-identical files. \
        Timestamps start at 2026-01-15T10:00:00Z, never at the wall clock; addresses are documentation \
        ranges (192.0.2.0/24, fe80::/64) and device names are invented.

        Besides the capture, it writes the findings the scenario is built to produce as JSON (by default \
        <output without extension>.expected.json) and, with --log-dir, one Xcode-console-style log per \
        device (<dir>/<device>.log).

        Examples:
          peerscope simulate --list
          peerscope simulate healthy-pair -o /tmp/healthy.pcapng
          peerscope simulate keepalive-timeout -o k.pcapng \\
              --log-dir logs --seed 7
          peerscope simulate group-8 --peers 5 -o /tmp/group.pcapng
          peerscope simulate healthy-pair --encrypted \\
              --format pcap -o /tmp/enc.pcap
        """
    )

    @Argument(help: "Scenario name (see --list).")
    var scenario: String?

    @Flag(name: .long, help: "List the scenarios with a one-line description.")
    var list = false

    @Option(name: [.short, .long], help: "Capture file to write.")
    var output: String?

    @Option(name: .long, help: "Random seed (jitter, peer IDs, addresses, ports).")
    var seed: UInt64 = 1

    @Option(name: .long, help: "Number of devices, including the host (group-8 only, 2...8).")
    var peers: Int?

    @Flag(name: .long, help: "Use DTLS (encryptionPreference .required) where the scenario allows it.")
    var encrypted = false

    @Option(name: .long, help: "Capture file format: pcapng or pcap (pcap frames every packet with the first interface's link type).")
    var format: CaptureFileFormat = .pcapng

    @Option(name: .long, help: ArgumentHelp("Length of the connected phase in seconds (healthy-pair scenarios only; default 20). Hours give a long, steady capture.", valueName: "seconds"))
    var steady: Double?

    @Option(name: .long, help: "Directory for the device logs (one <device>.log each).")
    var logDir: String?

    @Option(name: .long, help: "Where to write the expected findings (default: <output without extension>.expected.json).")
    var expected: String?

    func validate() throws {
        if list { return }
        guard let scenario else { throw ValidationError("Give a scenario name, or --list.") }
        guard let info = Simulator.scenario(named: scenario) else {
            throw ValidationError("Unknown scenario '\(scenario)'. Known: \(Simulator.scenarios.map(\.name).joined(separator: ", ")).")
        }
        if output == nil { throw ValidationError("--output FILE is required.") }
        if let p = peers {
            guard let range = info.peerRange else { throw ValidationError("--peers applies to group-8 only.") }
            guard range.contains(p) else { throw ValidationError("--peers must be in \(range.lowerBound)...\(range.upperBound).") }
        }
        if let steady {
            guard scenario.hasPrefix("healthy-pair") else { throw ValidationError("--steady applies to healthy-pair and healthy-pair-encrypted only.") }
            guard steady.isFinite, steady >= 1, steady <= 7 * 86_400 else { throw ValidationError("--steady must be between 1 and 604800 seconds (a week).") }
        }
    }

    func run() throws {
        if list {
            let width = Simulator.scenarios.map(\.name.count).max() ?? 0
            for s in Simulator.scenarios {
                print(s.name + String(repeating: " ", count: width - s.name.count + 2) + s.summary)
            }
            return
        }
        guard let scenario, let output else { return }
        let result = try Simulator.run(scenario, options: SimulationOptions(seed: seed, peers: peers, encrypted: encrypted, format: format,
                                                                              steadySeconds: steady))
        let expectedPath = expected ?? SimulationResult.defaultExpectedPath(forCapture: output)
        // No two of the files written may be one file (`--expected` onto the capture, a log onto either).
        var outputs: [(option: String, path: String?)] = [("--output", output), ("--expected", expectedPath)]
        if let logDir {
            outputs += result.logs.map { ("--log-dir", (logDir as NSString).appendingPathComponent("\($0.slug).log")) }
        }
        try guardOutputs(outputs, inputs: [])
        do throws(SimulationWriteError) {
            try result.write(capturePath: output, logDirectory: logDir, expectedPath: expectedPath) { (bytes, path) throws(SimulationWriteError) in
                do throws(OutputError) {
                    let stale = try OutputFile.writeWhole(path: path, option: path == output ? "--output" : "--expected", bytes: bytes)
                    for s in stale { printError(s.message) }
                } catch {
                    throw SimulationWriteError(path: path, reason: error.reason)
                }
            }
        } catch {
            throw CommandFailure(message: error.description, status: ExitStatus.input)
        }
        print("\(scenario): \(result.frameCount) frames, \(result.capture.count) bytes, \(String(format: "%.1f", result.durationSeconds)) s -> \(output)")
        print("expected findings: \(result.findings.count) -> \(expectedPath)")
        if let logDir { print("device logs: \(result.logs.count) -> \(logDir)") }
    }
}
