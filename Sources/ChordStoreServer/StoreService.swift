public import ChordStoreEngine
public import ServiceLifecycle

/// The store (its writer and log) as a `Service`: it runs until the group shuts down,
/// then commits what is queued and closes the log. Put it first in the group's services:
/// a group shuts its services down in reverse order, so the store closes after everything
/// that writes to it has stopped.
public struct StoreService: Service {
    private let store: ChordStore

    /// Keeps `store` open while the group runs.
    public init(_ store: ChordStore) {
        self.store = store
    }

    /// Waits for graceful shutdown (or cancellation), then closes the store.
    public func run() async throws {
        try? await gracefulShutdown()
        store.close()
    }
}
