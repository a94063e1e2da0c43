import ArgumentParser
@_spi(Raw) import ChordStoreClient
import ChordStoreEngine
import ChordStoreProto
import Foundation
import Synchronization
import SwiftProtobuf

/// `chordstore bench feed`: change-feed fan-out and commit-to-delivery latency.
struct BenchFeedCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "feed",
        abstract: "Fan-out of the change feed: events/s delivered to N subscribers while writers append.",
        discussion: prose("""
            For each subscriber count, starts 'chordstore serve' on a fresh temporary data
            directory, opens the subscriptions (one connection each), then appends --events
            durable adds from --writers connections. Prints the writers' events/s, the
            events/s delivered to all subscribers together, and the latency from an event's
            commit (its timestamp) to its arrival at a subscriber (p50/p99 over every
            delivery). Server, writers and subscribers share this machine's cores.
            """))

    @Option(help: "Subscriber counts to measure, comma-separated.") var subscribers = "0,1,10,100"
    @Option(help: "Events to append per measurement (at most 1,000,000).") var events = 5_000
    @Option(help: "Writer connections.") var writers = 8

    func validate() throws {
        guard (1...1_000_000).contains(events) else { throw ValidationError("--events must be 1...1000000") }
        guard (1...256).contains(writers) else { throw ValidationError("--writers must be 1...256") }
        guard counts.allSatisfy({ (0...1_000).contains($0) }), !counts.isEmpty else {
            throw ValidationError("--subscribers takes counts 0...1000, e.g. 0,1,10,100")
        }
    }

    var counts: [Int] { subscribers.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) } }

    func run() async throws {
        Output.print("feed: \(events) durable adds from \(writers) writer connections per row")
        Output.print("subscribers  writer ev/s  delivered ev/s  latency p50 ms  p99 ms")
        for count in counts {
            let child = try await ChildServer.start()
            defer { child.stop() }
            let row = try await measure(port: child.port, credentials: child.credentials, subscribers: count)
            Output.print(String(
                format: "%11d  %11.0f  %14.0f  %14.2f  %6.2f", count, row.writerRate, row.deliveredRate,
                row.latency.percentile(50), row.latency.percentile(99)))
        }
    }

    private struct Row {
        var writerRate: Double
        var deliveredRate: Double
        var latency: Latencies
    }

    private func measure(port: Int, credentials: ClientCredentials, subscribers: Int) async throws -> Row {
        let total = UInt64(events)
        let start = ContinuousClock.now
        let (writerSeconds, latency, lastDelivery) = try await withThrowingTaskGroup(of: (Duration?, Latencies, ContinuousClock.Instant?).self) { group in
            for _ in 0..<subscribers {
                group.addTask {
                    let client = Client(host: "127.0.0.1", port: port, credentials: credentials)
                    defer { Task { await client.close() } }
                    var latencies = Latencies()
                    var received: UInt64 = 0
                    for try await event in client.subscribe(from: 1) {
                        let now = Date().timeIntervalSince1970
                        let committed = Double(event.timestamp.seconds) + Double(event.timestamp.nanos) / 1e9
                        latencies.append(.microseconds(Int64(max(0, now - committed) * 1e6)))
                        received += 1
                        if received >= total { break }
                    }
                    return (nil, latencies, ContinuousClock.now)
                }
            }
            try await Task.sleep(for: .milliseconds(300 + 5 * subscribers))  // let the subscriptions open
            group.addTask {
                let writeStart = ContinuousClock.now
                try await withThrowingTaskGroup(of: Void.self) { writersGroup in
                    let perWriter = (events + writers - 1) / writers
                    for writer in 0..<writers {
                        let quota = min(perWriter, max(0, events - writer * perWriter))
                        writersGroup.addTask {
                            let client = Client(host: "127.0.0.1", port: port, credentials: credentials)
                            defer { Task { await client.close() } }
                            for i in 0..<quota { _ = try await client.addChordset(title: "feed \(writer)-\(i)") }
                        }
                    }
                    try await writersGroup.waitForAll()
                }
                return (ContinuousClock.now - writeStart, Latencies(), nil)
            }
            var writerTime = Duration.zero
            var all = Latencies()
            var last = start
            for try await (time, latencies, delivered) in group {
                if let time { writerTime = time }
                all.append(contentsOf: latencies)
                if let delivered { last = max(last, delivered) }
            }
            return (writerTime, all, last)
        }
        let writerRate = Double(events) / writerSeconds.seconds
        let deliveredRate = subscribers == 0 ? 0 : Double(events * subscribers) / (lastDelivery - start).seconds
        return Row(writerRate: writerRate, deliveredRate: deliveredRate, latency: latency)
    }
}
