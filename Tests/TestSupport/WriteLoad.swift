import ChordStoreProto
import Foundation
import SwiftProtobuf
import Synchronization

/// Clients adding chordsets one after the other over their own connections, each on a
/// thread of its own with a blocking socket (``RawClient``): a load that goes on at the
/// server's pace however busy the test process's task threads are. It records every
/// acknowledged chordset id and how each client ended.
public final class WriteLoad: Sendable {
    private struct State {
        var acknowledged: [Data] = []
        var endings: [String] = []
    }

    private let state = Mutex(State())
    private let stopped = Atomic(false)
    private let done = DispatchGroup()

    /// Starts `clients` clients on 127.0.0.1:`port`, each adding up to `writes`
    /// chordsets (titles and command ids `PREFIX-client-index`), showing `token` if given.
    public init(port: Int, clients: Int, writes: Int, token: String? = nil, prefix: String = "load") {
        let metadata = token.map { ["authorization": "Bearer \($0)"] } ?? [:]
        for client in 0..<clients {
            done.enter()
            Thread.detachNewThread { [self] in
                let ending = run(port: port, client: client, writes: writes, metadata: metadata, prefix: prefix)
                state.withLock { $0.endings.append(ending) }
                done.leave()
            }
        }
    }

    private func run(port: Int, client: Int, writes: Int, metadata: [String: String], prefix: String) -> String {
        guard let connection = try? RawClient(port: port) else { return "no connection" }
        for index in 0..<writes {
            if stopped.load(ordering: .relaxed) { return "stopped" }
            let callID = UInt64(index + 1)
            let request = Chordstore_V1_AddChordsetRequest.with {
                $0.title = "\(prefix)-\(client)-\(index)"
                $0.context.commandID = "\(prefix)-\(client)-\(index)"
            }
            do {
                try connection.call(callID, "chordstore.v1.ChordStore/AddChordset", request, metadata: metadata)
                while true {
                    guard let frame = try connection.readFrame() else { return "closed" }
                    switch frame.kind {
                    case .goAway(let goAway): return "GoAway \(goAway.status.code)"
                    case .reply(let reply) where reply.callID == callID && reply.hasStatus:
                        guard reply.status.code == 0 else { return "status \(reply.status.code)" }
                        let answer = try Chordstore_V1_CommandReply(serializedBytes: reply.payload)
                        state.withLock { $0.acknowledged.append(answer.event.chordsetAdded.chordset.id) }
                    default: continue
                    }
                    break
                }
            } catch {
                return "error \(error)"
            }
        }
        return "done"
    }

    /// The chordset ids acknowledged so far.
    public var acknowledged: [Data] { state.withLock { $0.acknowledged } }

    /// How the clients that ended did: `done`, `stopped`, `status CODE`, `GoAway CODE`,
    /// `closed` (the server closed the connection), or `error …` (a read timed out).
    public var endings: [String] { state.withLock { $0.endings } }

    /// Asks the clients to stop after their current call.
    public func stop() { stopped.store(true, ordering: .relaxed) }

    /// Waits until every client has ended.
    public func finished() async {
        _ = try? await offPool { [done] in done.wait() }
    }
}
