import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The IP addresses behind a member's `HOST:PORT`: where its connections may come from
/// (see ``QuorumState``), and which of them this machine owns.
enum HostAddresses {
    /// The addresses `host` resolves to (itself if it is an IP address), normalized; empty
    /// if it does not resolve now.
    static func resolve(_ host: String) -> Set<String> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else { return [] }
        defer { freeaddrinfo(first) }
        var found: Set<String> = []
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            if getnameinfo(current.pointee.ai_addr, current.pointee.ai_addrlen, &text, socklen_t(text.count), nil, 0, NI_NUMERICHOST) == 0 {
                found.insert(normalize(String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)))
            }
            entry = current.pointee.ai_next
        }
        return found
    }

    /// The addresses member `address` (`HOST:PORT`) may connect from, looked up on a
    /// thread of its own: a slow name server must not stall the caller's.
    static func sources(of address: String) async -> Set<String> {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: resolve(host(of: address))) }
        }
    }

    /// The host part of `HOST:PORT` (brackets of an IPv6 literal removed).
    static func host(of address: String) -> String {
        guard let colon = address.lastIndex(of: ":") else { return address }
        let host = address[..<colon]
        return host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : String(host)
    }

    /// An IPv4 address seen through an IPv6 socket (`::ffff:a.b.c.d`) as plain IPv4, and
    /// an IPv6 one without its zone (`fe80::1%eth0`).
    static func normalize(_ address: String) -> String {
        let address = String(address.split(separator: "%", maxSplits: 1).first ?? "")
        return address.hasPrefix("::ffff:") && address.contains(".") ? String(address.dropFirst(7)) : address
    }

    /// Whether this machine owns `address` (a socket can be bound to it).
    static func isLocal(_ address: String) -> Bool {
        var hints = addrinfo()
        hints.ai_flags = AI_NUMERICHOST
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(address, "0", &hints, &list) == 0, let info = list else { return false }
        defer { freeaddrinfo(info) }
        let fd = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0
    }
}
