import ChordStoreClient
@testable import ChordStoreReplication
import Foundation
import TestSupport
import Testing

/// The members' kept connections (``PeerProbe``): one that stops answering is replaced,
/// so a member is not reported unreachable for as long as the node runs.
@Suite("Peer probe")
struct PeerProbeTests {
    @Test("a kept connection that stayed silent past a call's deadline is replaced: the next probe reaches the member")
    func silentConnectionReplaced() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let proxy = try RelayProxy(targetPort: server.port, silentConnections: 1)
        defer { proxy.stop() }
        let probe = PeerProbe(credentials: ClientCredentials())
        defer { Task { await probe.close() } }
        let address = "127.0.0.1:\(proxy.port)"
        #expect(await probe.statuses([address], within: .milliseconds(200)).isEmpty, "the first connection never answers")
        // The call itself gives up at its deadline and the client's grace after it.
        try await Task.sleep(for: .milliseconds(200) + Client.deadlineGrace + .milliseconds(500))
        let answered = await probe.statuses([address], within: .seconds(10))
        #expect(answered.map(\.lastSequence) == [0], "a probe after the silent one reaches the server on a new connection")
        #expect(proxy.accepted == 2)
    }
}
