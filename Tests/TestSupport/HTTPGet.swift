import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// An HTTP/1.1 response as ``httpRequest(port:method:path:headers:body:host:)`` read it.
public struct HTTPReply: Sendable {
    /// The status code (200, 404, 503, …).
    public var status: Int
    /// The header lines, by lower-cased name.
    public var headers: [String: String]
    /// The body, as text.
    public var body: String
}

/// GETs `path` from `host:port` over one plain TCP connection (`Connection: close`), on
/// its own thread (``offPool(_:)``): what a monitoring probe does, with no HTTP library.
public func httpGet(port: Int, path: String, host: String = "127.0.0.1") async throws -> HTTPReply {
    try await httpRequest(port: port, method: "GET", path: path, host: host)
}

/// Sends one request to `host:port` over a plain TCP connection (`Connection: close`)
/// and reads the whole response, on its own thread (``offPool(_:)``).
public func httpRequest(
    port: Int, method: String, path: String, headers: [String: String] = [:], body: String = "", host: String = "127.0.0.1"
) async throws -> HTTPReply {
    try await offPool {
        let client = try RawClient(port: port, host: host)
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if method != "GET" { head += "Content-Length: \(body.utf8.count)\r\n" }
        client.send(Array((head + "\r\n" + body).utf8))
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(client.fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            bytes += chunk[..<count]
        }
        guard let split = bytes.firstRange(of: Array("\r\n\r\n".utf8)) else {
            throw RawClientError("no HTTP header in \(String(decoding: bytes.prefix(200), as: UTF8.self))")
        }
        let lines = String(decoding: bytes[..<split.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        guard let statusLine = lines.first, statusLine.hasPrefix("HTTP/1.1 "),
              let status = Int(statusLine.dropFirst(9).prefix(3)) else {
            throw RawClientError("not an HTTP status line: \(lines.first ?? "")")
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var body = Array(bytes[split.upperBound...])
        if headers["transfer-encoding"] == "chunked" { body = dechunk(body) }
        return HTTPReply(status: status, headers: headers, body: String(decoding: body, as: UTF8.self))
    }
}

/// The payload of a chunked body.
private func dechunk(_ bytes: [UInt8]) -> [UInt8] {
    var rest = bytes[...]
    var out: [UInt8] = []
    let newline = Array("\r\n".utf8)
    while let end = rest.firstRange(of: newline), let size = Int(String(decoding: rest[..<end.lowerBound], as: UTF8.self), radix: 16), size > 0 {
        guard rest.distance(from: end.upperBound, to: rest.endIndex) >= size else { break }
        out += rest[end.upperBound..<(end.upperBound + size)]
        rest = rest[(end.upperBound + size)...].dropFirst(2)
    }
    return out
}
