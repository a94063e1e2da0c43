import CoreFoundation  // stat and timespec: with MemberImportVisibility their members are attributed to it
#if canImport(CDispatch)
import CDispatch  // or to it, depending on how the compiler batches the module's files
#endif
import Foundation
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// A `LogHandler` that writes one JSON object per line to standard error
/// (`serve --log-format json`), for log collectors:
///
/// ```json
/// {"time":"2026-11-24T18:53:12.345Z","level":"notice","label":"chordstore","message":"serving","metadata":{"address":"127.0.0.1:7420"}}
/// ```
///
/// Each line is written with one `write(2)` (repeated only if the system takes part of
/// it), so lines up to the pipe's atomic size (4 KiB) never interleave with other
/// threads' lines.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    init(label: String) {
        self.label = label
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        var line = "{\"time\":" + Self.quoted(Self.timestamp())
        line += ",\"level\":" + Self.quoted(event.level.rawValue)
        line += ",\"label\":" + Self.quoted(label)
        line += ",\"message\":" + Self.quoted(event.message.description)
        if !merged.isEmpty {
            line += ",\"metadata\":{"
            line += merged.sorted { $0.key < $1.key }.map { Self.quoted($0.key) + ":" + Self.json($0.value) }.joined(separator: ",")
            line += "}"
        }
        line += "}\n"
        var bytes = Array(line.utf8)
        bytes.withUnsafeMutableBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(STDERR_FILENO, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0, errno == EINTR { continue }
                guard written > 0 else { return }
                offset += written
            }
        }
    }

    private static func json(_ value: Logger.Metadata.Value) -> String {
        switch value {
        case .string(let text): quoted(text)
        case .stringConvertible(let value): quoted(value.description)
        case .array(let values): "[" + values.map(json).joined(separator: ",") + "]"
        case .dictionary(let values): "{" + values.sorted { $0.key < $1.key }.map { quoted($0.key) + ":" + json($0.value) }.joined(separator: ",") + "}"
        }
    }

    /// `text` as a JSON string: quotes, backslashes and control characters escaped.
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                out += "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count) + String(scalar.value, radix: 16)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// Now in UTC, ISO 8601 with milliseconds.
    private static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var parts = tm()
        var seconds = now.tv_sec
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
            Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), now.tv_nsec / 1_000_000)
    }
}
