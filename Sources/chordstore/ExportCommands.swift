import ArgumentParser
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
import Foundation
import SwiftProtobuf

/// The first line of an export: what it holds.
struct ExportHeader: Codable {
    /// The export format (1).
    var chordstoreExport = 1
    var store: String
    var exported: String
}

/// `chordstore export --store NAME > FILE.jsonl`: one store's events, to move it.
struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write one store's events as JSON Lines (to move the store to another server).",
        discussion: """
            Prints a header line ({"chordstore_export":1,"store":…,"exported":…}), then every
            event of the store (--store, default 'default') in order, one EventEnvelope per
            line in protobuf's canonical JSON: with its sequence number, time, session,
            command id, undo mark and the event itself. `chordstore import` reads it back
            into an empty store, here or on another server; the round trip gives the same
            chordsets, history, undo stacks and command ids. Give --out FILE to write a file
            (0600) instead of standard output.
            """)
    @OptionGroup var global: GlobalOptions
    @Option(help: ArgumentHelp("Write to this file instead of standard output.", valueName: "FILE")) var out: String?

    func run() async throws {
        let sink: FileHandle
        if let out {
            guard FileManager.default.createFile(atPath: out, contents: nil, attributes: [.posixPermissions: 0o600]),
                  let handle = FileHandle(forWritingAtPath: out) else {
                throw Failure(ChordStoreError(.unavailable, "cannot create \(out)"))
            }
            sink = handle
        } else {
            sink = FileHandle.standardOutput
        }
        defer { if out != nil { try? sink.close() } }
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.sortedKeys]
        let header = ExportHeader(store: global.storeName, exported: Instant.now.description)
        sink.write(try encoder.encode(header) + Data("\n".utf8))
        let writer = LineWriter(sink)
        let count = try await withAccess(global) { store in
            try await store.events(from: 1, limit: 0) { envelope in try writer.write(envelope.jsonString()) }
            writer.flush()
            return writer.lines
        }
        if out != nil { Output.print("exported \(count) events of store \(global.storeName) to \(out ?? "")") }
    }
}

/// `chordstore import --store NAME FILE.jsonl`: an export appended to a new store.
struct ImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Read a store's events (an export) into an empty store.",
        discussion: """
            Reads FILE (or standard input for '-'), as `chordstore export` writes it (the
            header line is optional: `chordstore --json log` output works too), and appends
            its events to the store named by --store, creating the store if it does not
            exist (an admin token). The store must hold no events, unless --resume is given
            after an interrupted import of the same file: events the store already holds are
            then skipped. Events keep their sequence numbers, times, sessions, command ids
            and undo marks; each is checked against the store as a command would be, and
            batches of 1,000 are committed whole or not at all.
            """)
    @OptionGroup var global: GlobalOptions
    @Argument(help: ArgumentHelp("The export to read ('-': standard input).", valueName: "FILE")) var file: String
    @Flag(help: "Go on after an interrupted import of this file: skip the events the store already holds.") var resume = false

    func run() async throws {
        let input: FileHandle
        if file == "-" {
            input = FileHandle.standardInput
        } else {
            guard let handle = FileHandle(forReadingAtPath: file) else { throw Failure(ChordStoreError(.notFound, "cannot read \(file)")) }
            input = handle
        }
        let name = global.storeName
        let progress = ProgressReporter(label: "importing")
        defer { progress.finish() }
        let (imported, last, created) = try await withAccess(global) { store -> (Int, UInt64, Bool) in
            var created = false
            let info: StoreInfo
            do {
                info = try await store.storeInfo(name)
            } catch let error as ChordStoreError where error.code == .notFound {
                info = try await store.createStore(name)
                created = true
            }
            guard info.headSequence == 0 || resume else {
                throw ChordStoreError(
                    .failedPrecondition,
                    "store \(name) holds \(info.headSequence) events: import into an empty store, or give --resume to go on after an interrupted import of this file")
            }
            var skipped = info.headSequence
            var last = info.headSequence
            var imported = 0
            var batch: [Chordstore_V1_EventEnvelope] = []
            var batchBytes = 0
            var lineNumber = 0
            func send() async throws {
                guard !batch.isEmpty else { return }
                last = try await store.importEvents(batch)
                imported += batch.count
                progress.report(UInt64(imported), UInt64(imported))
                batch.removeAll(keepingCapacity: true)
                batchBytes = 0
            }
            let lines = LineReader(input)
            while let line = lines.next() {
                lineNumber += 1
                let text = line.trimmingCharacters(in: .whitespaces)
                if text.isEmpty { continue }
                if lineNumber == 1, text.contains("\"chordstore_export\"") {
                    try Self.checkHeader(text)
                    continue
                }
                let envelope: Chordstore_V1_EventEnvelope
                do {
                    envelope = try Chordstore_V1_EventEnvelope(jsonString: text)
                } catch {
                    throw ChordStoreError(.invalidArgument, "line \(lineNumber) of \(file) is not an EventEnvelope in protobuf JSON: \(error)")
                }
                if skipped > 0, envelope.sequence <= skipped { continue }
                skipped = 0
                batch.append(envelope)
                batchBytes += text.utf8.count
                if batch.count >= Self.batchSize || batchBytes >= Self.batchBytes { try await send() }
            }
            try await send()
            return (imported, last, created)
        }
        Output.print("imported \(imported) events into store \(name)\(created ? " (created)" : ""); its last event is \(last)")
    }

    /// Events per `ImportEvents` call (the server's limit).
    static let batchSize = 1_000
    /// Bytes of JSON per call, well inside a frame once encoded.
    static let batchBytes = 1 << 20

    private static func checkHeader(_ text: String) throws {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        guard let header = try? decoder.decode(ExportHeader.self, from: Data(text.utf8)) else {
            throw ChordStoreError(.invalidArgument, "the first line looks like an export header but is not one")
        }
        guard header.chordstoreExport <= 1 else {
            throw ChordStoreError(.failedPrecondition, "the export has format \(header.chordstoreExport), newer than this chordstore reads (1)")
        }
    }
}

/// Writes lines to a file handle, buffered, from a `@Sendable` callback.
final class LineWriter: @unchecked Sendable {
    private let handle: FileHandle
    private let lock = NSLock()
    private var buffer = Data()
    private var count = 0

    init(_ handle: FileHandle) { self.handle = handle }

    func write(_ line: String) {
        lock.withLock {
            buffer.append(contentsOf: line.utf8)
            buffer.append(UInt8(ascii: "\n"))
            count += 1
            if buffer.count >= 1 << 16 {
                handle.write(buffer)
                buffer.removeAll(keepingCapacity: true)
            }
        }
    }

    func flush() {
        lock.withLock {
            handle.write(buffer)
            buffer.removeAll(keepingCapacity: true)
        }
    }

    var lines: Int { lock.withLock { count } }
}

/// Reads a file handle line by line, a megabyte at a time (an export can be large).
final class LineReader {
    private let handle: FileHandle
    private var buffer = Data()
    private var ended = false

    init(_ handle: FileHandle) { self.handle = handle }

    /// The next line, without its newline; `nil` at the end.
    func next() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex...newline)
                return line
            }
            if ended {
                guard !buffer.isEmpty else { return nil }
                defer { buffer.removeAll() }
                return String(decoding: buffer, as: UTF8.self)
            }
            let chunk = handle.readData(ofLength: 1 << 20)
            if chunk.isEmpty { ended = true } else { buffer.append(chunk) }
        }
    }
}
