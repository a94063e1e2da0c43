import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// An HTTP/1.1 response as ``httpGet(port:path:host:)`` read it.
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
    try await offPool {
        let client = try RawClient(port: port, host: host)
        client.send(Array("GET \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nConnection: close\r\n\r\n".utf8))
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(client.fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            bytes += chunk[..<count]
        }
        let text = String(decoding: bytes, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { throw RawClientError("no HTTP header in \(text.prefix(200))") }
        let lines = text[..<split.lowerBound].components(separatedBy: "\r\n")
        guard let statusLine = lines.first, statusLine.hasPrefix("HTTP/1.1 "),
              let status = Int(statusLine.dropFirst(9).prefix(3)) else {
            throw RawClientError("not an HTTP status line: \(lines.first ?? "")")
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var body = String(text[split.upperBound...])
        if headers["transfer-encoding"] == "chunked" { body = dechunk(body) }
        return HTTPReply(status: status, headers: headers, body: body)
    }
}

/// The payload of a chunked body.
private func dechunk(_ text: String) -> String {
    var rest = Substring(text)
    var out = ""
    while let end = rest.range(of: "\r\n"), let size = Int(rest[..<end.lowerBound], radix: 16), size > 0 {
        let start = end.upperBound
        let utf8 = rest.utf8
        guard let stop = utf8.index(start, offsetBy: size, limitedBy: utf8.endIndex) else { break }
        out += String(rest[start..<stop])
        rest = rest[stop...].dropFirst(2)
    }
    return out
}
