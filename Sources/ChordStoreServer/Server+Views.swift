public import ChordStoreEngine
public import ChordStoreReplication
import Foundation

extension Server {
    /// What a new follower serves while its copy of the leader's log arrives
    /// (``FollowerBootstrap/ViewsServer``): once the copy's views are whole, a store over
    /// them alone (``ChordStore/openViews(at:options:)``) behind the server `make` builds
    /// for it, listening on `host:port`.
    ///
    /// It answers reads of the current state as the copy's views have it. Commands are
    /// refused as on a follower (`failedPrecondition`, "not the leader"); as-of reads,
    /// histories, event feeds and backups fail with `unavailable`. Stopping it closes the
    /// listener, lets calls in flight end for up to `grace` (live queries end with
    /// `unavailable`: the node serves again from its whole copy moments later), and
    /// closes the store.
    public static func servingViews(
        host: String, port: Int, grace: Duration = .seconds(1), make: @escaping @Sendable (ChordStore) -> Server
    ) -> FollowerBootstrap.ViewsServer {
        { views in
            let store = try ChordStore.openViews(at: views)
            let server = make(store)
            do {
                _ = try await server.start(host: host, port: port)
            } catch {
                await server.shutdown(grace: .zero)  // stops its event loops
                store.close()
                throw error
            }
            return {
                await server.shutdown(grace: grace)
                await server.replication?.closePeerConnections()
                store.close()
            }
        }
    }
}
