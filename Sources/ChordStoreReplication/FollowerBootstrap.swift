public import ChordStoreRecords
public import ChordStoreClient
import ChordStoreDomain
import ChordStoreWire
import ChordStoreEngine
public import Foundation
public import Logging

/// A new follower's first copy of its leader: instead of replaying the leader's whole
/// log event by event (about 30 s for a million events), it takes the leader's files as
/// a backup (`Backup`: LMDB's compacting copy of the views and the log) into its data
/// directory, opens them, and then follows from the copy's last event as usual. The copy
/// moves pages at disk and network speed, and the views need no rebuilding.
///
/// The files arrive in `DATA/bootstrap.partial/`, each checked against its digest, and
/// are moved into place only once whole (the log last); a crash before that leaves a
/// directory without a log, which bootstraps again on the next start.
///
/// The views come first, and they are all that reads of the current state need: once
/// they are whole, `serveViews` may serve them (``ChordStore/openViews(at:options:)``)
/// while the log, about a third of the bytes, is still arriving. They are then written
/// through the page cache, to be read from memory at once, and synced with the rest at
/// the end. The server is stopped before the files move into place.
public enum FollowerBootstrap {
    /// The staging directory inside the data directory.
    public static let staging = "bootstrap.partial"

    /// Starts serving reads from the views in the directory it is given (the copy's
    /// `views/`, whole and checked against its digest) and returns what stops that,
    /// which the bootstrap calls before the files move into place, the copy whole or not.
    public typealias ViewsServer = @Sendable (_ views: URL) async throws -> @Sendable () async -> Void

    /// Whether `directory` holds no log yet (a new data directory, or one whose bootstrap
    /// was interrupted).
    public static func isNew(_ directory: URL) -> Bool {
        !FileManager.default.fileExists(atPath: directory.appendingPathComponent(BackupFiles.log).path)
    }

    /// Copies the files of the leader at `leader` into `directory` (which holds no log),
    /// showing `credentials` (a cluster member's, or an admin token), trying again with a
    /// backoff for up to `patience`. Returns the copied log's last event. Throws the last
    /// failure when `patience` runs out: the caller then replays the log instead.
    /// With `serveViews`, reads are served from the copy's views while its log arrives
    /// (a failure to start that is logged, and the copy goes on).
    public static func run(
        leader: String, into directory: URL, credentials: ClientCredentials, patience: Duration = .seconds(30), logger: Logger,
        serveViews: ViewsServer? = nil
    ) async throws -> LogPosition {
        let stage = directory.appendingPathComponent(staging)
        let deadline = ContinuousClock.now + patience
        var backoff = Backoff(first: .milliseconds(200), limit: .seconds(5), jitter: 0.2)
        while true {
            clearLeftovers(in: directory)
            let began = ContinuousClock.now
            do {
                let (head, bytes) = try await copy(
                    from: leader, into: directory, staging: stage, credentials: credentials, serveViews: serveViews, logger: logger)
                logger.notice("bootstrapped from a copy of the leader's files", metadata: [
                    "leader": "\(leader)", "events": "\(head.sequence)", "epoch": "\(head.epoch)",
                    "bytes": "\(bytes)", "took": "\(ContinuousClock.now - began)",
                ])
                return head
            } catch {
                // Nothing of a failed copy stays: the directory holds no log again.
                discardInstalled(in: directory)
                let wait = backoff.next()
                guard Self.isTransient(error), ContinuousClock.now + wait < deadline else { throw error }
                logger.warning("cannot copy the leader's files yet; trying again", metadata: [
                    "leader": "\(leader)", "error": "\(error)", "retry_in": "\(wait)",
                ])
                try await Task.sleep(for: wait)
            }
        }
    }

    /// One attempt: the leader's files into `staging`, then into `directory`, opened and
    /// checked. Returns the log's last event and the bytes copied.
    private static func copy(
        from leader: String, into directory: URL, staging: URL, credentials: ClientCredentials, serveViews: ViewsServer?,
        logger: Logger
    ) async throws -> (LogPosition, UInt64) {
        guard let client = Client(address: leader, retry: .once, credentials: credentials) else {
            throw ChordStoreError(.invalidArgument, "\(leader) is not HOST:PORT")
        }
        var stopServing: (@Sendable () async -> Void)?
        let manifest: BackupManifest
        do {
            manifest = try await BackupDownload.download(from: client, into: staging, cachedViews: serveViews != nil, arrived: { name in
                guard name == BackupFiles.views, let serveViews else { return }
                do {
                    stopServing = try await serveViews(staging.appendingPathComponent("views"))
                    logger.notice("serving reads from the copy of the leader's views while its log arrives", metadata: ["leader": "\(leader)"])
                } catch {
                    logger.warning("cannot serve reads from the copy of the leader's views; they wait for the log", metadata: [
                        "leader": "\(leader)", "error": "\(error)",
                    ])
                }
            })
        } catch {
            await client.close()  // first: the leader's copy and its slot end at once
            await stopServing?()
            throw error
        }
        await stopServing?()
        await client.close()
        let head = try ChordStore.restore(backup: staging, into: directory, move: true, ignoring: leftovers)
        try? FileManager.default.removeItem(at: staging)
        return (head, manifest.files.reduce(UInt64(0)) { $0 + $1.bytes })
    }

    /// Whether trying again may help: the leader unreachable, busy or too slow, or a copy
    /// damaged on the way. A refused credential, a newer format or a full disk here is
    /// not retried.
    static func isTransient(_ error: any Error) -> Bool {
        switch error {
        case let error as ClientError: [.unavailable, .deadlineExceeded, .resourceExhausted].contains(error.code)
        case let error as ChordStoreError: error.code == .unavailable || error.code == .dataLoss  // a copy that arrived damaged
        default: false
        }
    }

    /// What a data directory without a log may hold and a bootstrap may replace: the
    /// staging directory, views of no log, the lock files, the node's admin token.
    static let leftovers: Set<String> = [staging, "views", "chordstore.lock", "lock.mdb", "admin.token"]

    /// Removes what an interrupted bootstrap left: the staging directory, and views with
    /// no log beside them.
    private static func clearLeftovers(in directory: URL) {
        try? FileManager.default.removeItem(at: directory.appendingPathComponent(staging))
        try? FileManager.default.removeItem(at: directory.appendingPathComponent("views"))
    }

    /// Removes what a failed attempt placed in a directory that held no log: the log it
    /// may have moved in (and LMDB's lock file beside it), the views, the staging area.
    private static func discardInstalled(in directory: URL) {
        for name in [BackupFiles.log, BackupFiles.log + ".partial", "lock.mdb"] {
            try? FileManager.default.removeItem(at: directory.appendingPathComponent(name))
        }
        clearLeftovers(in: directory)
    }
}
