import ChordStoreAPI
import ChordStoreProto
import ChordStoreDomain
import ChordStoreWire
import Synchronization

/// Following the leader of a cluster through a failover (docs/PROTOCOL.md, section 11):
/// finding who leads by asking every known server, and noticing a server that stopped
/// answering.
extension Client {
    /// Whether `error` is a follower's refusal of a write.
    static func isNotLeader(_ error: ClientError) -> Bool { error.reason == .notLeader }

    /// Sends later calls to `leader`, remembering it among the known servers.
    func moveTo(_ leader: String) {
        guard let (host, port) = Self.split(leader) else { return }
        servers.withLock { if !$0.contains(leader) { $0.append(leader) } }
        target.withLock { $0 = (host, port) }
    }

    /// Asks every known server (`Health`, each within `timeout`) who leads: the leader
    /// named by the server with the newest epoch, if any names one.
    public func findLeader(timeout: Duration = .milliseconds(500)) async -> String? {
        var avoided: [String: UInt64] = [:]
        return await findLeader(avoiding: &avoided, failed: [], timeout: timeout)
    }

    /// The leader named with the newest epoch, leaving out the servers of `failed` (just
    /// lost) at the epochs they are named with now, and those of `avoided` unless named
    /// with a newer epoch than they were left out at: a frozen leader is named by the
    /// others until its lease lapses and another takes over.
    func findLeader(
        avoiding avoided: inout [String: UInt64], failed: Set<String>, timeout: Duration = .milliseconds(500)
    ) async -> String? {
        let answers = await leaderAnswers(timeout: timeout)
        for address in failed {
            avoided[address] = max(avoided[address] ?? 0, answers.filter { $0.leader == address }.map(\.epoch).max() ?? 0)
        }
        let avoiding = avoided
        let usable = answers.filter { answer in
            guard !answer.leader.isEmpty else { return false }
            guard let leftAt = avoiding[answer.leader] else { return true }
            return answer.epoch > leftAt
        }
        return usable.max { $0.epoch < $1.epoch }?.leader
    }

    /// Every known server's `Health` answer that came within `timeout`.
    private func leaderAnswers(timeout: Duration) async -> [Chordstore_V1_HealthReply] {
        let known = knownServers
        let credentials = self.credentials
        let store = self.store
        return await withTaskGroup(of: Chordstore_V1_HealthReply?.self) { group in
            for address in known {
                guard let (host, port) = Self.split(address) else { continue }
                group.addTask {
                    try? await Self.bounded(timeout) {
                        let connection = try await Connection.connect(
                            host: host, port: port, store: store, credentials: credentials.shown(to: address), connectTimeout: timeout)
                        defer { Task { await connection.close() } }
                        return try await connection.call(.health, Chordstore_V1_HealthRequest(), timeout: timeout, as: Chordstore_V1_HealthReply.self)
                    }
                }
            }
            var answers: [Chordstore_V1_HealthReply] = []
            for await answer in group { if let answer { answers.append(answer) } }
            return answers
        }
    }

    /// `body`'s result, unless `connection` stops answering meanwhile: once `body` has
    /// taken longer than `interval`, a `Health` call checks the server every interval,
    /// and one unanswered within the interval ends `body` with `UNAVAILABLE`.
    static func watched<T: Sendable>(
        _ connection: Connection, every interval: Duration, _ body: @escaping @Sendable () async throws(ClientError) -> T
    ) async throws(ClientError) -> T {
        do {
            return try await withThrowingTaskGroup(of: T?.self) { group in
                group.addTask { try await body() }
                group.addTask {
                    while true {
                        try await Task.sleep(for: interval)
                        do {
                            _ = try await bounded(interval) {
                                try await connection.call(.health, Chordstore_V1_HealthRequest(), timeout: interval, as: Chordstore_V1_HealthReply.self)
                            }
                        } catch let error as ClientError where error.isServerReply {
                            continue  // it answered (a refusal, an overload): it is not stopped
                        } catch {
                            throw ClientError(
                                .unavailable, "the server stopped answering: no answer to a health check within \(interval)", reason: .serverNotAnswering)
                        }
                    }
                }
                defer { group.cancelAll() }
                guard let result = try await group.next() ?? nil else { throw ClientError(.cancelled, "the call was cancelled") }
                return result
            }
        } catch let error as ClientError {
            throw error
        } catch {
            throw ClientError(.cancelled, "the call was cancelled")
        }
    }

    /// How often a slow call's server is checked when the client knows others.
    public static let livenessInterval: Duration = .seconds(1)
}
