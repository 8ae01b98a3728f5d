import Foundation
import PeerscopeCore

/// One log entry: a line with its header, plus the continuation lines that belong to it.
public struct LogEntry: Sendable, Hashable {
    public var input: Int
    /// 1-based line of the entry's first line.
    public var line: Int
    /// How many lines the entry spans.
    public var lineCount: Int
    /// Capture time (UTC ns).
    public var t: Nanos
    /// False when the line carried no usable time and `t` was taken from the lines around it.
    public var timeKnown: Bool
    public var process: String?
    public var pid: Int?
    public var subsystem: String?
    public var category: String?
    public var level: String?
    /// The message, continuation lines joined with "\n".
    public var message: String

    public init(input: Int = 0, line: Int, lineCount: Int = 1, t: Nanos, timeKnown: Bool = true, process: String? = nil,
                pid: Int? = nil, subsystem: String? = nil, category: String? = nil, level: String? = nil, message: String) {
        self.input = input
        self.line = line
        self.lineCount = lineCount
        self.t = t
        self.timeKnown = timeKnown
        self.process = process
        self.pid = pid
        self.subsystem = subsystem
        self.category = category
        self.level = level
        self.message = message
    }

    public var evidence: Evidence { .logLine(input: input, line: line) }
}

/// What a rule says a matching entry means.
public struct LogMatch: Sendable, Hashable {
    /// The event to emit; nil when the line is understood but is not worth an event (progress chatter).
    public var kind: EventKind?
    public var from: PeerHint
    public var to: PeerHint
    public var attrs: [String: String]
    /// GCK channel, when the line names one: repeated lines per channel coalesce into one event.
    public var channel: Int?
    /// Identities the line proves (idString + display name): taught to the `PeerDirectory`.
    public var learn: [Learned]
    /// How the line takes part in the context of the lines around it (see `LogContext`).
    public var context: LogContext

    public struct Learned: Sendable, Hashable {
        public var peerID: UInt64
        public var displayName: String?
    }

    public init(kind: EventKind?, from: PeerHint = .unknown, to: PeerHint = .unknown, attrs: [String: String] = [:],
                channel: Int? = nil, learn: [Learned] = [], context: LogContext = .none) {
        self.kind = kind
        self.from = from
        self.to = to
        self.attrs = attrs
        self.channel = channel
        self.learn = learn
        self.context = context
    }

    /// Understood, no event.
    public static let consumed = LogMatch(kind: nil)
}

/// Some lines name no peer although the lines around them do: GCK prints `Send UDP packet failed`
/// right before the line naming the participant it could not reach, and the advertiser prints
/// `Invitation declined` after `Got invite from peer[X]`. A rule says how its line uses that context;
/// the analyzer fills only hints the line left empty, and marks the event (`peerFrom=context`).
public enum LogContext: Sendable, Hashable {
    case none
    /// A peerless GCK/ICE error: `to` (or `from` for a received packet) takes the participant that
    /// a line of the same input names within the coalescing window, before or after.
    case nearbyParticipantAsTo
    case nearbyParticipantAsFrom
    /// The line names the remote peer of the current invitation (`from`, or `to` when the local
    /// side invites) and possibly the local one: later invitation lines of the input use it.
    case invitationRemoteIsFrom
    case invitationRemoteIsTo
    /// An answer to the current invitation: `to` = the remote peer, `from` = the local one when known.
    case answersInvitation
    /// A line about the current invitation's remote peer: `from` = that peer.
    case invitationRemoteAsFrom
}

/// What a rule extracted: positional values of a format string, or named captures of a regex.
public struct LogCaptures: Sendable {
    public var values: [String]
    public var named: [String: String]
    public init(values: [String] = [], named: [String: String] = [:]) {
        self.values = values
        self.named = named
    }
    public subscript(_ i: Int) -> String { i < values.count ? values[i] : "" }
}

/// A regex shared between threads (NSRegularExpression is immutable and thread-safe once built).
public final class SharedRegex: @unchecked Sendable {
    public let regex: NSRegularExpression
    public let groupNames: [String]
    public init(_ regex: NSRegularExpression, groupNames: [String]) {
        self.regex = regex
        self.groupNames = groupNames
    }

    /// The work one match attempt may do, in ICU's progress callbacks (one per ~10,000 matching
    /// steps, about 0.2 ms each here): a pattern that backtracks catastrophically (`(a+)+$` on a line of
    /// `a`s) gives up on that line instead of running for minutes. Counted in steps, not time, so the
    /// same input always gives the same result.
    public static let stepBudget = 50

    /// The first match in `text`, or `.gaveUp` when the step budget ran out first.
    public func firstMatch(in text: String, range: NSRange) -> BudgetedMatch {
        var found: NSTextCheckingResult?
        var steps = 0
        var gaveUp = false
        regex.enumerateMatches(in: text, options: [.reportProgress], range: range) { m, _, stop in
            if let m {
                found = m
                stop.pointee = true
                return
            }
            steps += 1
            if steps > SharedRegex.stepBudget {
                gaveUp = true
                stop.pointee = true
            }
        }
        if let found { return .match(found) }
        return gaveUp ? .gaveUp : .none
    }
}

public enum BudgetedMatch {
    case match(NSTextCheckingResult)
    case none
    case gaveUp
}

/// How a rule recognises its lines.
public enum LogMatcher: Sendable {
    /// A framework printf format string (spec §2.2), matched directly.
    case format(FormatPattern)
    /// A regular expression with named captures (user patterns, lines with variable shapes).
    case regex(SharedRegex)
}

/// One message shape and what it means. `needle` is a substring every matching line contains: the
/// analyzer looks for all needles in one pass and runs only the rules whose needle occurs.
public struct LogRule: Sendable {
    public var matcher: LogMatcher
    public var needle: [UInt8]
    /// The format string or pattern, for listing.
    public var shape: String
    public var build: @Sendable (LogCaptures, LogEntry) -> LogMatch?

    public init(format: String, build: @escaping @Sendable (LogCaptures, LogEntry) -> LogMatch?) {
        let f = FormatPattern(format)
        matcher = .format(f)
        needle = f.needle
        shape = format
        self.build = build
    }

    public init(regex: SharedRegex, needle: String?, build: @escaping @Sendable (LogCaptures, LogEntry) -> LogMatch?) {
        matcher = .regex(regex)
        self.needle = Array((needle ?? "").utf8)
        shape = regex.regex.pattern
        self.build = build
    }

    /// A rule from a built-in regex literal (checked by tests); one that fails to compile never matches.
    public init(pattern: String, needle: String, build: @escaping @Sendable (LogCaptures, LogEntry) -> LogMatch?) {
        if let re = try? NSRegularExpression(pattern: pattern, options: []) {
            matcher = .regex(SharedRegex(re, groupNames: LogRule.groupNames(in: pattern)))
        } else {
            matcher = .format(FormatPattern("\u{0}(invalid built-in pattern)\u{0}"))
        }
        self.needle = Array(needle.utf8)
        shape = pattern
        self.build = build
    }

    /// `(?<name>` groups in order.
    public static func groupNames(in pattern: String) -> [String] {
        var names: [String] = []
        let b = Array(pattern.utf8)
        var i = 0
        while i + 3 < b.count {
            if b[i] == UInt8(ascii: "\\") { i += 2; continue }
            if b[i] == UInt8(ascii: "("), b[i + 1] == UInt8(ascii: "?"), b[i + 2] == UInt8(ascii: "<"),
               b[i + 3] != UInt8(ascii: "="), b[i + 3] != UInt8(ascii: "!") {
                var j = i + 3
                while j < b.count, b[j] != UInt8(ascii: ">") { j += 1 }
                names.append(String(decoding: b[(i + 3)..<min(j, b.count)], as: UTF8.self))
                i = j
            }
            i += 1
        }
        return names
    }

    /// Runs the matcher on a message (its UTF-8 bytes given for the format matcher).
    func captures(_ message: String, _ bytes: UnsafeBufferPointer<UInt8>) -> LogCaptures? {
        var gaveUp = false
        return captures(message, bytes, gaveUp: &gaveUp)
    }

    /// As `captures`; `gaveUp` is set when a regex ran out of its step budget on this message.
    func captures(_ message: String, _ bytes: UnsafeBufferPointer<UInt8>, gaveUp: inout Bool) -> LogCaptures? {
        switch matcher {
        case .format(let f):
            guard let v = f.match(bytes) else { return nil }
            return LogCaptures(values: v)
        case .regex(let r):
            let ns = message as NSString
            let m: NSTextCheckingResult
            switch r.firstMatch(in: message, range: NSRange(location: 0, length: ns.length)) {
            case .match(let found): m = found
            case .none: return nil
            case .gaveUp:
                gaveUp = true
                return nil
            }
            var named: [String: String] = [:]
            for n in r.groupNames {
                let rg = m.range(withName: n)
                if rg.location != NSNotFound { named[n] = ns.substring(with: rg) }
            }
            var values: [String] = []
            if m.numberOfRanges > 1 {
                for i in 1..<m.numberOfRanges {
                    let rg = m.range(at: i)
                    values.append(rg.location != NSNotFound ? ns.substring(with: rg) : "")
                }
            }
            return LogCaptures(values: values, named: named)
        }
    }
}

/// Who a log plugin is; `peerscope plugins` lists these beside the packet plugins.
public struct LogPluginDescriptor: Sendable, Hashable {
    /// Stable id (`log-mpc-giving-up`); events carry it as `source`.
    public var id: String
    public var summary: String
    /// The message shapes it recognises (format strings or patterns), for listing.
    public var matches: [String]
    /// A line it understands, as the console prints it.
    public var example: String

    public init(id: String, summary: String, matches: [String], example: String) {
        self.id = id
        self.summary = summary
        self.matches = matches
        self.example = example
    }
}

/// A log plugin: one message type (or a family of variants of one message), one small type.
public protocol LogPlugin: Sendable {
    var descriptor: LogPluginDescriptor { get }
    var rules: [LogRule] { get }
}

extension LogPlugin {
    public var id: String { descriptor.id }
}
