public import Foundation

/// The chordsets an event touched, whose histories include it, as ``Fold`` reports them:
/// without an array for an event of one chordset (nearly all), whose chordset the event
/// itself names.
public enum TouchedChordsets: Sendable, Equatable {
    /// The event's own chordset (``Event/chordsetID``), or none when it names none.
    case own
    /// The chordsets a delete-all removed or a restore-all brought back.
    case listed([UUID])

    /// The chordsets `event` touched, when it is the event this value was reported for.
    public func chordsets(of event: Event) -> [UUID] {
        switch self {
        case .own: event.chordsetID.map { [$0] } ?? []
        case .listed(let ids): ids
        }
    }
}
