import ArgumentParser
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
import CoreFoundation  // stat and timespec: with MemberImportVisibility their members are attributed to it
#if canImport(CDispatch)
import CDispatch  // or to it, depending on how the compiler batches the module's files
#endif
import Foundation
import SwiftProtobuf
import Synchronization

/// The first line of an export: what it holds.
struct ExportHeader: Codable {
    /// The export format (1).
    var chordstoreExport = 1
    var store: String
    var exported: String
}

/// The last line of an export: how many events it holds, so that a file cut short (a
/// full disk, a killed export) is refused instead of imported in part.
struct ExportTrailer: Codable {
    struct End: Codable {
        var events: Int
        var lastSequence: UInt64
    }

    var chordstoreExportEnd: End

    static let marker = "\"chordstore_export_end\""

    static func decode(_ line: String) -> ExportTrailer? {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try? decoder.decode(ExportTrailer.self, from: Data(line.utf8))
    }
}

/// `chordstore export --store NAME > FILE.jsonl`: one store's events, to move it.
struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write one store's events as JSON Lines (to move the store to another server).",
        discussion: prose("""
            Prints a header line ({"chordstore_export":1,"store":…,"exported":…}), then every
            event of the store (--store, default 'default') in order, one EventEnvelope per
            line in protobuf's canonical JSON: with its sequence number, time, session,
            command id, undo mark and the event itself; then a last line
            ({"chordstore_export_end":{"events":N,"last_sequence":S}}) by which import tells
            a whole export from one cut short. `chordstore import` reads it back
            into an empty store, here or on another server; the round trip gives the same
            chordsets, history, undo stacks and command ids. Give --out FILE to write a file
            (0600) instead of standard output.
            """))
    @OptionGroup var global: GlobalOptions
    @Option(help: ArgumentHelp("Write to this file instead of standard output.", valueName: "FILE")) var out: String?

    func run() async throws {
        // A reader that goes away (`| head`) is a failed write with a message, not a
        // signal that kills the export midway (with --server, NIO ignores it already).
        signal(SIGPIPE, SIG_IGN)
        // Refused before a line is written, not by withAccess after the header.
        if global.data != nil { try global.requireDataDirectory() }
        let sink: FileHandle
        var created = false
        if let out {
            // Opened, not replaced: --out may name a pipe, a device or a link to follow. A
            // new file is made 0600; an existing regular file is truncated and made 0600.
            var fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            created = fd >= 0
            if fd < 0, errno == EEXIST { fd = open(out, O_WRONLY | O_TRUNC | O_CLOEXEC) }
            guard fd >= 0 else {
                throw Failure(ChordStoreError(.unavailable, "cannot open \(out) for writing: \(String(cString: strerror(errno)))"))
            }
            var status = stat()
            if !created, fstat(fd, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG { _ = fchmod(fd, 0o600) }
            sink = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        } else {
            sink = FileHandle.standardOutput
        }
        let target = out ?? "standard output"
        let count: Int
        let writer = LineWriter(sink, target: target)
        do {
            let encoder = JSONEncoder()
            encoder.keyEncodingStrategy = .convertToSnakeCase
            encoder.outputFormatting = [.sortedKeys]
            try writer.writeLine(try encoder.encode(ExportHeader(store: global.storeName, exported: Instant.now.description)))
            count = try await withAccess(global) { store in
                try await store.events(from: 1, limit: 0) { envelope in try writer.write(envelope.jsonString(), sequence: envelope.sequence) }
                return writer.lines
            }
            let trailer = ExportTrailer(chordstoreExportEnd: .init(events: count, lastSequence: writer.lastSequence))
            try writer.writeLine(try encoder.encode(trailer))
            try writer.flush()
            if out != nil { try sink.close() }
        } catch {
            if let out, created { try? FileManager.default.removeItem(atPath: out) }  // no half export left behind
            throw error
        }
        if out != nil { Output.print("exported \(count) events of store \(global.storeName) to \(target)") }
    }
}

/// `chordstore import --store NAME FILE.jsonl`: an export appended to a new store.
struct ImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Read a store's events (an export) into an empty store.",
        discussion: prose("""
            Reads FILE (or standard input for '-'), as `chordstore export` writes it (the
            header line is optional: `chordstore --json log` output works too; an export
            with a header must end with its last line, or it was cut short and is refused
            before anything is imported, or for standard input when its end is reached),
            and appends
            its events to the store named by --store, creating the store if it does not
            exist (an admin token); a store it created is removed again if the import
            fails before any event is in it. The store must hold no events, unless --resume
            is given after an interrupted import of the same file: events the store already
            holds are then skipped, once the file's event at the store's last one is found
            to be that event (its command id, time and session). Events keep their sequence
            numbers, times, sessions, command ids and undo marks; each is checked against
            the store as a command would be, and batches of up to 1,000 (and 1 MiB) are
            committed whole or not at all: a refusal says how many events the store kept,
            and --resume goes on once the file is mended.
            """))
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
            try Self.checkWhole(file)
        }
        let name = global.storeName
        let progress = ProgressReporter(label: "importing")
        defer { progress.finish() }
        let (imported, last, created) = try await withAccess(global) { store -> (Int, UInt64, Bool) in
            try await importing(input, into: store, name: name, progress: progress)
        }
        Output.print("imported \(imported) events into store \(name)\(created ? " (created)" : ""); its last event is \(last)")
    }

    /// Appends the events read from `input` to store `name`; returns how many, the store's
    /// last event and whether the store was created. A missing store is created only when
    /// the first batch is ready (or at the end of an empty export), and removed again if
    /// the import then fails before anything is in it: a refused file leaves no store.
    private func importing(
        _ input: FileHandle, into store: any StoreAccess, name: String, progress: ProgressReporter
    ) async throws -> (Int, UInt64, Bool) {
        var head: UInt64 = 0
        var exists = true
        do {
            head = try await store.storeInfo(name).headSequence
        } catch let error as ChordStoreError where error.code == .notFound {
            exists = false
        }
        guard head == 0 || resume else {
            throw ChordStoreError(
                .failedPrecondition,
                "store \(name) holds \(head) events: import into an empty store, or give --resume to go on after an interrupted import of this file")
        }
        // With --resume, the file's event at the store's last one must be that event (its
        // command id, time and session): another file would merge two stores.
        let held = head == 0 ? nil : try await Self.event(head, of: store)
        var created = false
        var last = head
        var imported = 0
        var batch: [Chordstore_V1_EventEnvelope] = []
        var batchBytes = 0
        var lineNumber = 0
        var hasHeader = false
        var trailer: ExportTrailer?
        var read = 0
        /// Whether the file's event at the store's last one was found to be that event.
        var matched = false
        func createIfMissing() async throws {
            guard !exists else { return }
            _ = try await store.createStore(name)
            exists = true
            created = true
        }
        func send() async throws {
            guard !batch.isEmpty else { return }
            try await createIfMissing()
            last = try await store.importEvents(batch)
            imported += batch.count
            progress.report(UInt64(imported), UInt64(imported))
            batch.removeAll(keepingCapacity: true)
            batchBytes = 0
        }
        do {
            let lines = LineReader(input)
            while let line = try lines.next() {
                lineNumber += 1
                let text = line.trimmingCharacters(in: .whitespacesAndNewlines)
                if text.isEmpty { continue }
                if lineNumber == 1, text.contains("\"chordstore_export\"") {
                    try Self.checkHeader(text)
                    hasHeader = true
                    continue
                }
                if trailer != nil { throw ChordStoreError(.invalidArgument, "line \(lineNumber) of \(file) follows the export's last line") }
                if text.hasPrefix("{" + ExportTrailer.marker) {
                    guard let end = ExportTrailer.decode(text) else { throw ChordStoreError(.invalidArgument, "line \(lineNumber) of \(file) is not an export's last line") }
                    trailer = end
                    continue
                }
                read += 1
                let envelope: Chordstore_V1_EventEnvelope
                do {
                    envelope = try Chordstore_V1_EventEnvelope(jsonString: text)
                } catch {
                    let start = text.count > 60 ? text.prefix(60) + "…" : Substring(text)
                    throw ChordStoreError(.invalidArgument, "line \(lineNumber) of \(file) is not an EventEnvelope in protobuf JSON (\(error)): \(start)")
                }
                if let held, envelope.sequence <= held.sequence {
                    if envelope.sequence == held.sequence {
                        guard Self.sameEvent(envelope, held) else {
                            throw ChordStoreError(
                                .failedPrecondition,
                                "store \(name)'s event \(head) is not the one on line \(lineNumber) of \(file): --resume goes on only with the file whose import was interrupted")
                        }
                        matched = true
                    }
                    continue
                }
                if head > 0, !matched {
                    throw ChordStoreError(
                        .failedPrecondition,
                        "\(file) has no event \(head), store \(name)'s last: --resume goes on only with the file whose import was interrupted")
                }
                batch.append(envelope)
                batchBytes += text.utf8.count
                if batch.count >= Self.batchSize || batchBytes >= Self.batchBytes { try await send() }
            }
            try await send()
            if read == 0, !hasHeader { throw ChordStoreError(.invalidArgument, "\(file) holds no events and is not an export") }
            if head > 0, !matched {
                throw ChordStoreError(
                    .failedPrecondition, "\(file) has no event \(head), store \(name)'s last: it is not the file whose import was interrupted")
            }
            if hasHeader {
                guard let trailer else {
                    throw ChordStoreError(
                        .dataLoss, "\(file) ends before the export's last line: it was cut short; store \(name) holds the \(last) events it had (export again, and import with --resume)")
                }
                guard trailer.chordstoreExportEnd.events == read else {
                    throw ChordStoreError(.dataLoss, "\(file) holds \(read) events, but its last line says \(trailer.chordstoreExportEnd.events)")
                }
            }
            try await createIfMissing()
        } catch {
            // Only a store this import made and that is still empty (a reply may have been
            // lost after its first batch committed) goes again.
            if created, (try? await store.storeInfo(name).headSequence) == 0 { _ = try? await store.deleteStore(name) }
            // Batches that went in stay: say so, and how to go on.
            if imported > 0, var refusal = error as? ChordStoreError {
                refusal.message += " (store \(name) kept the \(imported) events imported before it, up to its event \(last): mend the file and import it again with --resume to go on)"
                throw refusal
            }
            throw error
        }
        return (imported, last, created)
    }

    /// Event `sequence` of `store`, as the wire has it.
    private static func event(_ sequence: UInt64, of store: any StoreAccess) async throws -> Chordstore_V1_EventEnvelope? {
        let found = Mutex<Chordstore_V1_EventEnvelope?>(nil)
        try await store.events(from: sequence, limit: 1) { envelope in found.withLock { $0 = envelope } }
        return found.withLock { $0 }
    }

    /// Whether two envelopes are the same event of a store: the same sequence, command
    /// id, time and session.
    private static func sameEvent(_ a: Chordstore_V1_EventEnvelope, _ b: Chordstore_V1_EventEnvelope) -> Bool {
        a.sequence == b.sequence && a.commandID == b.commandID && a.timestamp == b.timestamp && a.session == b.session
    }

    /// Events per `ImportEvents` call (the server's limit).
    static let batchSize = 1_000
    /// Bytes of JSON per call, well inside a frame once encoded.
    static let batchBytes = 1 << 20

    /// Refuses an export file cut short before anything is imported: one that begins
    /// with a header must end with the export's last line.
    private static func checkWhole(_ path: String) throws {
        guard let handle = FileHandle(forReadingAtPath: path) else { return }
        defer { try? handle.close() }
        let head = String(decoding: handle.readData(ofLength: 256), as: UTF8.self)
        guard head.hasPrefix("{\"chordstore_export\"") else { return }
        let size = (try? handle.seekToEnd()) ?? 0
        try? handle.seek(toOffset: size > 4_096 ? size - 4_096 : 0)
        let tail = String(decoding: handle.readData(ofLength: 4_096), as: UTF8.self)
        let lines = tail.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        if let trailerIndex = lines.lastIndex(where: { $0.hasPrefix("{" + ExportTrailer.marker) }), trailerIndex != lines.count - 1 {
            throw Failure(ChordStoreError(
                .invalidArgument, "\(path) has lines after the export's last line: it was edited or joined with another file; export again"))
        }
        guard let last = lines.last, last.hasPrefix("{" + ExportTrailer.marker), let trailer = ExportTrailer.decode(last) else {
            throw Failure(ChordStoreError(
                .dataLoss, "\(path) does not end with the export's last line: it was cut short (a full disk, a killed export); export again"))
        }
        // The count the last line gives, checked before anything is imported.
        try handle.seek(toOffset: 0)
        var events = 0
        let reader = LineReader(handle)
        while let line = try reader.next() {
            let text = line.trimmingCharacters(in: .whitespacesAndNewlines)
            if text.isEmpty || text.hasPrefix("{\"chordstore_export\"") || text.hasPrefix("{" + ExportTrailer.marker) { continue }
            events += 1
        }
        guard events == trailer.chordstoreExportEnd.events else {
            throw Failure(ChordStoreError(
                .dataLoss, "\(path) holds \(events) events, but its last line says \(trailer.chordstoreExportEnd.events): it was edited; export again"))
        }
    }

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
