import ChordStoreHTTP
import Testing

/// `/health/ready`'s decision, case by case, without a server.
@Suite("Readiness")
struct ReadinessTests {
    @Test("an open leader is ready and takes writes")
    func leader() {
        let readiness = Readiness(Readiness.Observation())
        #expect(readiness.isReady)
        #expect(readiness.status == "ready" && readiness.role == "leader" && readiness.writes == "accepted")
        #expect(readiness.lagEvents == nil)
    }

    @Test("a draining or closed node is not ready, saying why")
    func drainingOrClosed() {
        var observation = Readiness.Observation()
        observation.draining = true
        observation.open = false
        let readiness = Readiness(observation)
        #expect(!readiness.isReady && readiness.status == "not ready")
        #expect(readiness.reasons == ["the store is closed", "the server is shutting down"])
    }

    @Test("a full disk refuses writes but keeps the node ready for reads, and says so")
    func writesRefused() {
        var observation = Readiness.Observation()
        observation.writeRefusal = "RESOURCE_EXHAUSTED: the disk is full"
        let readiness = Readiness(observation)
        #expect(readiness.isReady)
        #expect(readiness.writes == "refused: RESOURCE_EXHAUSTED: the disk is full")
    }

    @Test("a follower is ready while it hears from its leader and is within the lag bound")
    func follower() {
        var policy = Readiness.Policy()
        policy.maxLagEvents = 100
        var observation = Readiness.Observation()
        observation.leading = false
        #expect(Readiness(observation, policy: policy).reasons == ["has not heard from a leader yet"])

        observation.following = Readiness.Following(applied: 950, leaderLast: 1_000, silence: .milliseconds(300))
        let caughtUp = Readiness(observation, policy: policy)
        #expect(caughtUp.isReady && caughtUp.role == "follower" && caughtUp.lagEvents == 50)
        #expect(caughtUp.writes == "sent to the leader")

        observation.following = Readiness.Following(applied: 800, leaderLast: 1_000, silence: .milliseconds(300))
        #expect(Readiness(observation, policy: policy).reasons == ["200 events behind the leader (at most 100)"])

        observation.following = Readiness.Following(applied: 1_000, leaderLast: 1_000, silence: .seconds(7))
        #expect(Readiness(observation, policy: policy).reasons == ["no word from the leader for 7.0 s"])

        // A follower ahead of what it last heard (the leader's count was read earlier) is not behind.
        observation.following = Readiness.Following(applied: 1_010, leaderLast: 1_000, silence: .zero)
        #expect(Readiness(observation, policy: policy).lagEvents == 0)
    }
}
