/// Finds the `RST_STREAM` frames a client sends in the bytes of an HTTP/2 connection
/// (RFC 9113: the 24-byte preface, then frames of a 9-byte header and a payload) and
/// takes them out of the byte stream, passing every other byte on unchanged and in order.
/// A pure state machine: bytes arrive in chunks split anywhere; ``scan(_:)`` says what
/// to pass on and which streams the client reset.
///
/// ```swift
/// var scanner = StreamResetScanner()
/// let output = chunk.withUnsafeReadableBytes { scanner.scan($0) }  // output.pass, output.resets
/// ```
///
/// Why: swift-nio-http2 closes a connection whose client resets more than 200 streams
/// in 30 s (its defence against "rapid reset" floods), and grpc-swift's transport offers
/// no way to change that. A gRPC client cancels a call by resetting its stream, so an
/// ordinary client stopping its live streams would lose its connection and every other
/// call on it. The endpoint ends a reset stream itself instead (``StreamResetHandler``),
/// under a limit of its own (``ChordStoreWire/WireLimits/maxStreamResets``).
struct StreamResetScanner: Sendable {
    /// A piece of what to pass on.
    enum Segment: Equatable, Sendable {
        /// Bytes of an earlier chunk held back until their frame's type was known.
        case held([UInt8])
        /// A range of the chunk just scanned.
        case range(Range<Int>)
    }

    /// A reset the client sent.
    struct Reset: Equatable, Sendable {
        /// The stream it resets.
        var stream: UInt32
        /// Whether it was taken out (else it passes on, to the HTTP/2 handler).
        var taken: Bool
    }

    /// What to do with a chunk of bytes.
    struct Output: Equatable, Sendable {
        /// What to pass on, in order: the bytes so far minus the resets taken out.
        var pass: [Segment] = []
        /// The resets the client sent in this chunk, in order.
        var resets: [Reset] = []

        mutating func append(_ range: Range<Int>) {
            if !range.isEmpty { pass.append(.range(range)) }
        }
    }

    static let prefaceLength = 24
    static let headerLength = 9
    static let resetType: UInt8 = 0x3
    static let resetLength = 4

    private enum Phase: Sendable {
        /// The connection preface's bytes still to pass.
        case preface(left: Int)
        /// Reading a frame header: its bytes from earlier chunks (not passed on yet).
        case header(held: [UInt8])
        /// Passing a frame's payload: the bytes left.
        case payload(left: Int)
        /// Reading the payload of a reset of `stream` (taken out, or passed on): the bytes left.
        case reset(stream: UInt32, taken: Bool, left: Int)
    }

    private var phase = Phase.preface(left: prefaceLength)

    /// Whether resets are taken out (`false`: every byte passes, resets included, to the
    /// HTTP/2 handler).
    var takesResets = true

    /// Scans the next chunk of the connection's bytes.
    mutating func scan(_ bytes: UnsafeRawBufferPointer) -> Output {
        var output = Output()
        var index = 0
        var runStart = 0  // where the bytes to pass on began in this chunk
        while index < bytes.count {
            switch phase {
            case .preface(let left):
                let taken = min(left, bytes.count - index)
                index += taken
                phase = taken == left ? .header(held: []) : .preface(left: left - taken)
            case .payload(let left):
                let taken = min(left, bytes.count - index)
                index += taken
                phase = taken == left ? .header(held: []) : .payload(left: left - taken)
            case .reset(let stream, let takenOut, let left):
                let read = min(left, bytes.count - index)
                index += read
                if takenOut { runStart = index }
                if read == left {
                    output.resets.append(Reset(stream: stream, taken: takenOut))
                    phase = .header(held: [])
                } else {
                    phase = .reset(stream: stream, taken: takenOut, left: left - read)
                }
            case .header(let held):
                let needed = Self.headerLength - held.count
                guard bytes.count - index >= needed else {
                    // The header goes on in the next chunk: hold it back until its type is known.
                    output.append(runStart..<index)
                    phase = .header(held: held + bytes[index...])
                    index = bytes.count
                    runStart = index
                    continue
                }
                let header = held + bytes[index..<(index + needed)]
                let start = index
                index += needed
                let length = Int(header[0]) << 16 | Int(header[1]) << 8 | Int(header[2])
                if header[3] == Self.resetType, length == Self.resetLength {
                    let stream = (UInt32(header[5]) << 24 | UInt32(header[6]) << 16 | UInt32(header[7]) << 8 | UInt32(header[8])) & 0x7fff_ffff
                    if takesResets {
                        output.append(runStart..<start)
                        runStart = index
                    } else if !held.isEmpty {
                        output.pass.append(.held(held))
                    }
                    phase = .reset(stream: stream, taken: takesResets, left: Self.resetLength)
                } else {
                    // A header held back began this chunk (`runStart` is 0): it goes first.
                    if !held.isEmpty { output.pass.append(.held(held)) }
                    phase = length == 0 ? .header(held: []) : .payload(left: length)
                }
            }
        }
        output.append(runStart..<bytes.count)
        return output
    }
}
