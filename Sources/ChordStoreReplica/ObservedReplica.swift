public import ChordStoreClient
public import ChordStoreDomain
public import Foundation
public import Observation
#if canImport(Network)
import Network
#endif

/// Where the app is, as SwiftUI's `scenePhase` says it (mapped by the app: SwiftUI is not
/// a dependency of this module).
public enum AppPhase: Sendable, Hashable {
    /// In the foreground and interactive: the sync runs.
    case active
    /// Visible but not interactive (a sheet of the system, the app switcher): the sync
    /// goes on.
    case inactive
    /// In the background: the sync stops (the writes are flushed to disk first), until the
    /// app is active again.
    case background
}

/// A ``Replica`` bound to SwiftUI: an `@Observable` model on the main actor that a view
/// reads directly. Its properties follow the replica: the query's chordsets (a live
/// query, updated after each local write and each synced batch), the sync's status, the
/// number of pending writes, and the writes the server refused. Its write methods apply
/// at once and keep the refusal in ``lastError``.
///
/// ```swift
/// // Made once (in the App's init, say), not in a View's initialiser:
/// let songs = ObservedReplica(replica, query: ChordsetQuery(order: .index))
/// songs.startSync(with: client)
/// …
/// List(songs.chordsets) { Text($0.title) }
/// …
/// .onChange(of: scenePhase) { _, phase in songs.setPhase(phase == .active ? .active : phase == .background ? .background : .inactive) }
/// ```
///
/// The sync runs while the app is active or inactive, stops in the background, and
/// retries at once when the network comes back (NWPathMonitor on Apple platforms;
/// elsewhere, or in tests, the `networkChanges` given to the initialiser). Reads do not
/// wait for the sync's batches (``Replica/chordsets(_:)``).
@MainActor
@Observable
public final class ObservedReplica {
    /// The replica this model shows.
    public let replica: Replica
    /// The query whose result ``chordsets`` is; setting it restarts the live query.
    public var query: ChordsetQuery {
        didSet { watch() }
    }
    /// The query's result in the device's view (at most the replica's
    /// ``Replica/Options/maxLiveQuerySize`` chordsets).
    public private(set) var chordsets: [Chordset] = []
    /// The sync's status.
    public private(set) var status: SyncStatus
    /// The device's writes the server has not confirmed.
    public private(set) var pendingCount: Int
    /// The writes the server refused since this model was made (a conflict, a chordset
    /// deleted on another device, …), oldest first, for the app to show; cleared by
    /// ``dismissRejections()``.
    public private(set) var rejections: [RejectedWrite] = []
    /// The last local write refused at once (it did not apply to the device's view), or
    /// `nil` after a write that applied.
    public private(set) var lastError: ChordStoreError?
    /// The phase the app last reported (``setPhase(_:)``).
    public private(set) var phase: AppPhase = .active

    @ObservationIgnored private var client: Client?
    /// The running sync, or the last one (cancelled, perhaps still ending).
    @ObservationIgnored private var syncTask: Task<Void, Never>?
    /// Whether ``syncTask`` is the running sync (not paused or stopped).
    @ObservationIgnored private var syncing = false
    @ObservationIgnored private var watchTask: Task<Void, Never>?
    @ObservationIgnored private var followTasks: [Task<Void, Never>] = []
    #if canImport(Network)
    @ObservationIgnored private var monitor: NWPathMonitor?
    #endif

    /// A model of `replica` showing `query`'s result. `networkChanges` (`true`: the
    /// network is reachable again) makes a waiting sync retry at once; on Apple platforms
    /// it defaults to NWPathMonitor's reports.
    public init(_ replica: Replica, query: ChordsetQuery = ChordsetQuery(limit: 1_000), networkChanges: AsyncStream<Bool>? = nil) {
        self.replica = replica
        self.query = query
        let status = replica.status
        self.status = status
        self.pendingCount = replica.pendingWrites.count
        watch()
        follow(networkChanges)
    }

    // MARK: Sync

    /// Syncs with `client` continuously while the app is active or inactive (replacing a
    /// sync already started, which ends first).
    public func startSync(with client: Client) {
        self.client = client
        if phase != .background { runSync() }
    }

    /// Stops syncing until ``startSync(with:)`` is called again (the writes are kept, and
    /// flushed to disk).
    public func stopSync() {
        client = nil
        pauseSync()
    }

    /// Tells the model where the app is: the sync stops in the background and starts
    /// again when the app is active.
    public func setPhase(_ phase: AppPhase) {
        guard phase != self.phase else { return }
        self.phase = phase
        switch phase {
        case .background: pauseSync()
        case .active, .inactive: if !syncing { runSync() }
        }
    }

    /// The network is reachable again: a sync waiting to retry tries at once.
    public func networkBecameAvailable() {
        replica.retryNow()
    }

    /// Stops the sync and the live updates (the replica stays open: close it after).
    public func close() {
        stopSync()
        watchTask?.cancel()
        watchTask = nil
        for task in followTasks { task.cancel() }
        followTasks = []
        #if canImport(Network)
        monitor?.cancel()
        monitor = nil
        #endif
    }

    // MARK: Writes

    /// Adds a chordset; `nil` (and ``lastError``) if refused.
    @discardableResult
    public func add(_ add: AddChordset = AddChordset()) -> Chordset? {
        do {
            let chordset = try replica.addChordset(add)
            lastError = nil
            pendingCount = replica.pendingWrites.count
            return chordset
        } catch {
            lastError = error
            return nil
        }
    }

    /// Renames a chordset.
    public func rename(_ id: UUID, to title: String) { perform(.renameChordset(id: id, title: title)) }
    /// Deletes a chordset and its chords.
    public func delete(_ id: UUID) { perform(.deleteChordset(id: id)) }
    /// Moves a chordset in the user order.
    public func move(_ id: UUID, to index: Int) { perform(.moveChordset(id: id, toIndex: index)) }
    /// Sets a chord's background colour.
    public func setColor(_ chordID: UUID, _ color: ChordColor) { perform(.setChordColor(chordID: chordID, color: color)) }
    /// Sets a chord's tempo.
    public func setBPM(_ chordID: UUID, _ bpm: Double) { perform(.setChordBPM(chordID: chordID, bpm: bpm)) }
    /// Undoes the device's most recent change.
    public func undo() { perform(.undo) }
    /// Redoes the device's most recently undone change.
    public func redo() { perform(.redo) }

    /// Applies `command` to the replica; a refusal goes to ``lastError``.
    public func perform(_ command: Command) {
        do {
            try replica.perform(command)
            lastError = nil
            pendingCount = replica.pendingWrites.count
        } catch {
            lastError = error
        }
    }

    /// Forgets the refusals shown (``rejections``).
    public func dismissRejections() { rejections = [] }

    // MARK: Following the replica

    private func runSync() {
        guard let client else { return }
        let previous = syncTask
        previous?.cancel()
        let replica = self.replica
        syncing = true
        syncTask = Task(priority: .utility) {  // below the UI: a long pull yields to it
            // A replica runs one sync at a time: the one replaced ends first.
            await previous?.value
            // Ends when cancelled (paused) or when syncing needs a person (the status
            // then says `stopped` and why).
            try? await replica.run(with: client)
        }
    }

    private func pauseSync() {
        syncTask?.cancel()  // kept: a sync started next waits for it to end
        syncing = false
        try? replica.flush()
        // The view saved off the main actor, so that an app killed in the background
        // opens without folding the events copied since the last save.
        let replica = replica
        Task.detached(priority: .utility) { replica.saveView(closing: true) }
    }

    deinit {
        syncTask?.cancel()
        watchTask?.cancel()
        for task in followTasks { task.cancel() }
        #if canImport(Network)
        monitor?.cancel()
        #endif
    }

    /// Restarts the live query for ``query``.
    private func watch() {
        watchTask?.cancel()
        let updates = replica.watch(query)
        watchTask = Task { [weak self] in
            for await update in updates {
                guard let self else { return }
                self.chordsets = update.chordsets
                // Read now, not the update's count: an update made before a confirmation
                // can arrive after the status that followed it, and a confirmation that
                // leaves the list as it was sends no update to correct it.
                self.pendingCount = self.replica.pendingWrites.count
            }
        }
    }

    /// Follows the status, the refusals and the network.
    private func follow(_ networkChanges: AsyncStream<Bool>?) {
        let statuses = replica.statusUpdates()
        let notices = replica.notices()
        followTasks.append(Task { [weak self] in
            for await status in statuses {
                guard let self else { return }
                self.status = status
                self.pendingCount = self.replica.pendingWrites.count
            }
            // The replica closed: its last status.
            if let self { self.status = self.replica.status }
        })
        followTasks.append(Task { [weak self] in
            for await notice in notices {
                guard let self else { return }
                if case .rejected(let rejection) = notice { self.rejections.append(rejection) }
            }
        })
        if let networkChanges {
            followTasks.append(Task { [weak self] in
                for await reachable in networkChanges where reachable {
                    guard let self else { return }
                    self.networkBecameAvailable()
                }
            })
        } else {
            #if canImport(Network)
            let monitor = NWPathMonitor()
            let replica = self.replica
            monitor.pathUpdateHandler = { @Sendable path in
                if path.status == .satisfied { replica.retryNow() }
            }
            monitor.start(queue: DispatchQueue(label: "chordstore.replica.network"))
            self.monitor = monitor
            #endif
        }
    }
}
