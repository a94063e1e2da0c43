import ChordStoreDomain
import Foundation

/// Reads a file handle line by line, a megabyte at a time (an export can be large); a
/// line longer than ``maxLine`` is an error, not a reason to read the whole file.
final class LineReader {
    private let handle: FileHandle
    private var buffer = Data()
    /// Where the unread bytes of `buffer` start.
    private var start = 0
    /// Bytes of `buffer` from `start` already searched for a newline.
    private var searched = 0
    private var ended = false
    /// The longest line taken.
    static let maxLine = 16 << 20

    init(_ handle: FileHandle) { self.handle = handle }

    /// The next line, without its newline; `nil` at the end.
    func next() throws -> String? {
        while true {
            let from = buffer.index(buffer.startIndex, offsetBy: start + searched)
            if let newline = buffer[from...].firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[(buffer.startIndex + start)..<newline], as: UTF8.self)
                start = newline - buffer.startIndex + 1
                searched = 0
                return line
            }
            searched = buffer.count - start
            guard searched <= Self.maxLine else {
                throw ChordStoreError(.invalidArgument, "a line is longer than \(Self.maxLine >> 20) MiB: this is not an export")
            }
            if ended {
                guard searched > 0 else { return nil }
                defer { start = buffer.count; searched = 0 }
                return String(decoding: buffer[(buffer.startIndex + start)...], as: UTF8.self)
            }
            if start > 0 {  // drop what was read, once per chunk
                buffer.removeSubrange(buffer.startIndex..<(buffer.startIndex + start))
                start = 0
            }
            let chunk = handle.readData(ofLength: 1 << 20)
            if chunk.isEmpty { ended = true } else { buffer.append(chunk) }
        }
    }
}
