import ChordStoreDomain

/// The steps of a session's undo and redo stacks and history on its record alone: what
/// each step changes in the record, and what the link of the event it pushes or appends
/// gets (the entry below it, the event before it). The views' one-step change
/// (``LMDBStateView/noteSessionChange(_:_:mark:)``) and the single steps both use them.
extension SessionRecord {
    /// Pushes `sequence` on the undo stack; returns the entry below it.
    mutating func pushUndo(_ sequence: UInt64) -> UInt64 {
        defer { undoTop = sequence }
        return undoTop
    }

    /// Pops `target`, which must be the undo stack's top, leaving `below()` (the entry
    /// below it, read only once the top is checked) on top.
    mutating func popUndo(_ target: UInt64, of session: String, below: () throws -> UInt64) throws {
        guard undoTop == target else {
            throw ChordStoreError(.dataLoss, "session \(session)'s undo stack has \(undoTop) on top, not \(target)")
        }
        undoTop = try below()
    }

    /// Pushes `sequence` on the redo stack; returns the entry below it.
    mutating func pushRedo(_ sequence: UInt64, of session: String) throws -> UInt64 {
        let (depth, overflow) = redoDepth.addingReportingOverflow(1)
        guard !overflow else { throw ChordStoreError(.dataLoss, "session \(session)'s redo depth is damaged; rebuild the views") }
        defer {
            redoTop = sequence
            redoDepth = depth
        }
        return redoTop
    }

    /// Pops `target`, which must be the redo stack's top, leaving `below()` on top.
    mutating func popRedo(_ target: UInt64, of session: String, below: () throws -> UInt64) throws {
        guard redoTop == target else {
            throw ChordStoreError(.dataLoss, "session \(session)'s redo stack has \(redoTop) on top, not \(target)")
        }
        redoTop = try below()
        redoDepth -= min(redoDepth, 1)
    }

    /// Empties the redo stack (its entries' links stay, unreachable); whether it held any.
    mutating func clearRedo() -> Bool {
        guard redoTop != 0 || redoDepth != 0 else { return false }
        redoTop = 0
        redoDepth = 0
        return true
    }

    /// Appends `sequence` to the history; returns the event before it (0: none), whose
    /// link's `next` becomes `sequence`.
    mutating func appendHistory(_ sequence: UInt64) -> UInt64 {
        defer {
            if first == 0 { first = sequence }
            last = sequence
        }
        return last
    }
}
