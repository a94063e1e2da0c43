import ChordStoreDomain
public import ChordStoreWire
public import NIOCore

/// Addresses a server binds.
public enum HostAddress {
    /// Whether binding `host` serves this machine only.
    public static func isLoopback(_ host: String) -> Bool {
        let host = host.lowercased()
        if host == "localhost" || host == "::1" || host == "[::1]" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    /// Whether a bound `address` serves this machine only: 127.0.0.0/8, `::1`, or an
    /// IPv4-mapped loopback address.
    public static func isLoopback(_ address: SocketAddress) -> Bool {
        guard let ip = address.ipAddress?.lowercased() else { return false }
        if ip.hasPrefix("::ffff:") { return isLoopback(String(ip.dropFirst(7))) }
        return ip != "localhost" && isLoopback(ip)
    }

    /// Refuses a listener that would serve calls without authentication off this machine
    /// (docs/SECURITY.md: `--auth none` starts only on loopback): `host` is what it is
    /// asked to bind, `what` names it in the refusal (`--http-host`, say).
    public static func checkUnauthenticated(_ host: String, _ what: String) throws(WireError) {
        guard !isLoopback(host) else { return }
        throw WireError(
            .failedPrecondition,
            "--auth none serves anyone who can reach the port: it is accepted only on a loopback address (127.0.0.1, ::1, localhost), not \(what) \(host)")
    }

    /// Refuses a listener without authentication whose bound `address` is not a loopback
    /// address (a name such as `localhost` may resolve elsewhere on a machine set up so).
    public static func checkUnauthenticated(bound address: SocketAddress, _ what: String) throws(WireError) {
        guard !isLoopback(address) else { return }
        throw WireError(
            .failedPrecondition,
            "--auth none serves anyone who can reach the port: \(what) bound \(address), which is not a loopback address")
    }
}
