import ChordStoreDomain
import Crypto
import Foundation

/// The secrets of bearer tokens: `cs1.<id>.<43 characters of base64url>`, 256 random
/// bits after the id. The server keeps only their SHA-256 and compares hashes in
/// constant time.
public enum TokenSecret {
    /// Longest secret looked at; a longer one is refused unread.
    static let maxLength = 128

    /// A new secret for token `id`.
    public static func make(id: String) -> String {
        var generator = SystemRandomNumberGenerator()
        let random = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let encoded = Data(random).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        return "cs1.\(id).\(encoded)"
    }

    /// A new token id: 12 hexadecimal digits (48 random bits).
    public static func makeID() -> String {
        var generator = SystemRandomNumberGenerator()
        return String(UInt64.random(in: 0..<(1 << 48), using: &generator), radix: 16).leftPadded(to: 12)
    }

    /// The id a secret names, or `nil` if it is not shaped like one.
    public static func id(of secret: String) -> String? {
        guard secret.utf8.count <= maxLength else { return nil }
        let parts = secret.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "cs1", !parts[1].isEmpty, parts[2].utf8.count >= 32 else { return nil }
        return String(parts[1])
    }

    /// SHA-256 of the secret's UTF-8 bytes.
    public static func hash(_ secret: String) -> [UInt8] {
        Array(SHA256.hash(data: Data(secret.utf8)))
    }

    /// Whether two hashes are equal, taking the same time whatever their contents.
    public static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        count >= length ? self : String(repeating: "0", count: length - count) + self
    }
}
