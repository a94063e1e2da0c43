import ChordStoreServer
import ChordStoreWire
import GRPCCore

extension CallBounds {
    /// ``ChordStoreServer/CallBounds/run(cancelled:_:)`` for a gRPC call: a client's
    /// RST_STREAM ends the work with `CANCELLED`.
    func runCancellable<T: Sendable>(_ work: @escaping @Sendable () async throws(WireError) -> T) async throws(WireError) -> T {
        let cancelled = OneShotSignal()
        let outcome: Result<T, WireError> = await withRPCCancellationHandler {
            do throws(WireError) {
                return .success(try await run(cancelled: cancelled, work))
            } catch {
                return .failure(error)
            }
        } onCancelRPC: {
            cancelled.fire()  // the client reset the stream
        }
        return try outcome.get()
    }

    /// The `grpc-timeout` header's duration (`nil` when absent or malformed): 1 to 8
    /// digits (gRPC's limit, so no unit overflows), then H, M, S, m, u or n.
    static func timeout(in metadata: Metadata) -> Duration? {
        guard let text = metadata[stringValues: "grpc-timeout"].first(where: { _ in true }), (2...9).contains(text.utf8.count),
              let unit = text.last, text.dropLast().allSatisfy(\.isASCII), let amount = Int64(text.dropLast()), amount >= 0
        else { return nil }
        switch unit {
        case "H": return .seconds(amount * 3_600)
        case "M": return .seconds(amount * 60)
        case "S": return .seconds(amount)
        case "m": return .milliseconds(amount)
        case "u": return .microseconds(amount)
        case "n": return .nanoseconds(amount)
        default: return nil
        }
    }
}
