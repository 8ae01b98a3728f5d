import PeerscopeCore

/// The diagnostics log reading reports; each message names the log file.
public enum LogDiagnostics {
    public static let layer = DiagnosticLayer(
        name: "logs", summary: "reading device and app logs, user patterns",
        diagnostics: [
            .id("log.empty", .warning, "a log file with no lines (empty, or only blank lines)"),
            .id("log.line.binary", .warning, "binary data (NUL or control bytes) where a log line should be; the line is skipped"),
            .id("log.line.encoding", .warning, "a line that is not UTF-8; invalid bytes are replaced"),
            .id("log.line.too_long", .warning, "a line or message longer than the limit; it is cut"),
            .id("log.json.malformed", .warning, "a line or object of a JSON log that is not valid JSON"),
            .id("log.json.not_object", .warning, "a JSON log value that is not an object"),
            .id("log.json.no_message", .info, "a JSON log object without eventMessage; skipped"),
            .id("log.json.too_large", .warning, "a JSON log object over the size limit; skipped"),
            .id("log.json.unterminated", .warning, "a JSON log object never closed before the end of the file"),
            .id("log.time.invalid", .warning, "a timestamp that cannot be read or is out of range; the entry before gives the time"),
            .id("log.time.no_date", .warning, "times without a date (or dates without a year) and no --date; 1970 assumed"),
            .id("log.time.no_zone", .warning, "log times without a zone and no --tz; read as UTC"),
            .id("log.time.missing", .info, "entries without a time; they take the time of the entry before"),
            .id("log.pattern.gave_up", .warning, "a user pattern spent its matching budget on a line (nested repeats backtrack)"),
            .id("log.pattern.retired", .warning, "a user pattern that gave up on too many lines; not tried on the rest of the log"),
            .id("log.patterns.invalid", .error, "an entry of a user pattern file that cannot be used; the others are"),
        ])
}
