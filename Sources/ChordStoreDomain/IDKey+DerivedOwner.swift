extension IDKey {
    /// ``DerivedChordIDs/owner(of:)`` on keys: the id's last byte is where `low`, loaded
    /// in memory order, keeps it (its top byte on a little-endian machine).
    package var derivedOwner: IDKey? {
        #if _endian(little)
        let shift: UInt64 = 56
        #else
        let shift: UInt64 = 0
        #endif
        let nibble = (low >> shift) & 0x0F
        guard nibble >= 1, nibble <= UInt64(Chordset.chordCount) else { return nil }
        return IDKey(high: high, low: low & ~(0x0F << shift))
    }

    /// ``DerivedChordIDs/isDerived(_:of:)`` on keys.
    package func isDerived(of chordset: IDKey) -> Bool { derivedOwner == chordset }
}
