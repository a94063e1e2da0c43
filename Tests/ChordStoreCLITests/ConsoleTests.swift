import Foundation
import TestSupport
import Testing

/// The web console in a real browser: headless Chromium (installed by tools/test),
/// driven over the DevTools protocol by Tests/console/console_check.py.
@Suite("The web console")
struct ConsoleTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test("Chromium shows a chord's colour in its swatch, an add through the API without a reload, and the past on the timeline")
    func chromium() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("console-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let served = try await ServedChordstore.start(directory, [], http: true)
        defer { served.stopIfRunning() }
        let http = try #require(served.httpPort)
        let token = directory.appendingPathComponent("admin.token").path
        let cli = ["--server", "127.0.0.1:\(served.port)", "--token-file", token]

        // Through the framed protocol: a chordset, and a colour for its first chord.
        let added = try await runChordstore(cli + ["add", "Verse", "--bpm", "96"])
        #expect(added.status == 0, "\(added.stderr)")
        let words = added.stdout.split(separator: " ").map(String.init)
        let chordset = try #require(words.first { $0.count == 36 }, "\(added.stdout)")
        let shown = try await runChordstore(cli + ["show", chordset])
        let rows: [[String]] = shown.stdout.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        let firstRow = try #require(rows.first { $0.count > 2 && $0[0] == "0" }, "\(shown.stdout)")
        let firstChord = firstRow[1]
        let colour = ["--hue", "0.6", "--purity", "0.8", "--brightness", "0.9"]
        let set = try await runChordstore(cli + ["set-color", firstChord] + colour)
        #expect(set.status == 0, "\(set.stderr)")
        _ = try await runChordstore(cli + ["add", "Chorus"])

        let run = try await offPool {
            try runExecutable(
                URL(fileURLWithPath: "/usr/bin/env"),
                ["python3", Self.root.appendingPathComponent("Tests/console/console_check.py").path,
                 "--base", "http://127.0.0.1:\(http)", "--token-file", token, "--chord", firstChord] + colour,
                environment: [:], timeout: 180)
        }
        try #require(run.status == 0, "console_check.py failed (needs python3 and chromium, which tools/test installs): \(run.stdout) \(run.stderr)")
        for check in ["the console shows the chordsets", "the chord colour rgb(46, 119, 230)", "appeared without a reload",
                      "shows the store without", "\"Back to now\" shows it again"] {
            #expect(run.stdout.contains(check), "missing '\(check)' in: \(run.stdout)")
        }
        #expect(try await served.terminate() == 0)
    }
}
