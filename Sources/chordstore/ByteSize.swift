import Foundation

/// Sizes given on the command line: a number of bytes, or one with a binary suffix
/// (`KiB`, `MiB`, `GiB`, `TiB`; `K`, `M`, `G`, `T` mean the same).
enum ByteSize {
    /// The bytes `text` names, or `nil` if it names none (or more than `Int.max`).
    static func parse(_ text: String) -> Int? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let digits = trimmed.prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty, let number = Int(digits) else { return nil }
        let shift: Int
        switch trimmed.dropFirst(digits.count).lowercased() {
        case "", "b": shift = 0
        case "k", "kib": shift = 10
        case "m", "mib": shift = 20
        case "g", "gib": shift = 30
        case "t", "tib": shift = 40
        default: return nil
        }
        let (bytes, overflow) = number.multipliedReportingOverflow(by: 1 << shift)
        return overflow ? nil : bytes
    }
}
