/// The one escaper for the XML and HTML the writers produce (JUnit, HTML): the five markup
/// characters as references (`&#39;` for the apostrophe: valid in XML, HTML 4 and HTML 5 alike), and
/// every character XML 1.0 cannot carry (C0 controls other than tab, line feed and carriage return;
/// U+FFFE, U+FFFF) replaced by U+FFFD, so the output always parses.
public enum MarkupEscaping {
    /// How tab, line feed and carriage return are written.
    public enum Breaks: Sendable {
        /// As character references (`&#10;`): kept even inside attribute values (JUnit).
        case references
        /// Tab and line feed as they are (HTML text); carriage return as `&#13;`.
        case literal
    }

    /// `s` escaped for text and attribute values.
    public static func escape(_ s: String, breaks: Breaks) -> String {
        var o = ""
        o.reserveCapacity(s.utf8.count)
        for u in s.unicodeScalars {
            switch u {
            case "&": o += "&amp;"
            case "<": o += "&lt;"
            case ">": o += "&gt;"
            case "\"": o += "&quot;"
            case "'": o += "&#39;"
            case "\n": o += breaks == .references ? "&#10;" : "\n"
            case "\t": o += breaks == .references ? "&#9;" : "\t"
            case "\r": o += "&#13;"
            default:
                if isXMLChar(u) { o.unicodeScalars.append(u) } else { o += "\u{FFFD}" }
            }
        }
        return o
    }

    /// XML 1.0's `Char`: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]
    /// (a Swift scalar is never a surrogate).
    public static func isXMLChar(_ u: Unicode.Scalar) -> Bool {
        let v = u.value
        return v == 0x9 || v == 0xA || v == 0xD || (v >= 0x20 && v != 0xFFFE && v != 0xFFFF)
    }
}
