// The cost per insert of the live state's tables, with and without structural sharing.
// A chordset's entry is shaped like the state's (a title, a date, its chords' values); the
// keys are random 128-bit ids, as chordset ids are. "Published each 50" keeps a copy for
// readers after every 50 inserts, as the writer publishes after a batch of 50 adds: the
// next change of the persistent table then copies the nodes on its path (the price of one
// copy shared with readers); a Swift Dictionary in the same use would copy itself whole,
// which is why the live state keeps two copies (LeftRight) and folds each change twice.
import Foundation
import HashTreeCollections

struct Key: Hashable { var high: UInt64; var low: UInt64 }
struct Entry { var title: String; var created: Double; var chords: [UInt64] }

func measure(_ name: String, _ count: Int, _ body: () -> Void) {
    let start = DispatchTime.now().uptimeNanoseconds
    body()
    let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start)
    print(name.padding(toLength: 62, withPad: " ", startingAt: 0), String(format: "%8.1f ns per operation", elapsed / Double(count)))
}

let size = Int(CommandLine.arguments.dropFirst().first ?? "") ?? 1_000_000
var random = SystemRandomNumberGenerator()
let keys = (0..<size).map { _ in Key(high: random.next(), low: random.next()) }
let later = (0..<100_000).map { _ in Key(high: random.next(), low: random.next()) }
let chords = Array(repeating: UInt64(1), count: 5)
print("\(size) entries, then 100,000 more")

var table: [Key: Entry] = [:]
table.reserveCapacity(size + later.count)
measure("Dictionary: insert", size) { for key in keys { table[key] = Entry(title: "t", created: 1, chords: chords) } }
var tree = TreeDictionary<Key, Entry>()
measure("TreeDictionary: insert, not shared", size) { for key in keys { tree[key] = Entry(title: "t", created: 1, chords: chords) } }

var total = 0.0
let probes = keys.shuffled()
measure("Dictionary: lookup", size) { for key in probes { total += table[key]!.created } }
measure("TreeDictionary: lookup", size) { for key in probes { total += tree[key]!.created } }

measure("Dictionary: insert (the live state does each twice)", later.count) {
    for key in later { table[key] = Entry(title: "t", created: 1, chords: chords) }
}
var published = tree
measure("TreeDictionary: insert, published each 50", later.count) {
    for (offset, key) in later.enumerated() {
        tree[key] = Entry(title: "t", created: 1, chords: chords)
        if offset % 50 == 49 { published = tree }
    }
}
measure("TreeDictionary: change an entry, published each 50", later.count) {
    for (offset, key) in probes.prefix(later.count).enumerated() {
        tree[key]!.created += 1
        if offset % 50 == 49 { published = tree }
    }
}
print("(checksum \(total), \(published.count) published)")
