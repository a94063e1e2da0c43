@testable import ChordStoreEngine
import Testing

/// The bounded channel between a replay's reader thread and its folding thread.
@Suite("Replay channel")
struct ChannelTests {
    @Test("a channel cancelled while it holds unread items is freed without a trap, and a send after the cancel is refused")
    func cancelledWithItemsLeft() {
        for unread in 0...4 {
            let channel = Channel<Int>(capacity: 4)
            for item in 0..<unread { #expect(channel.send(item)) }
            if unread > 1 { #expect(channel.receive() == 0) }
            channel.cancel()
            if unread < 4 { #expect(!channel.send(99)) }
        }
    }
}
