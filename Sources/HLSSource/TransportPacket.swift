/// The header of one 188-byte MPEG-TS packet, as the HLS source's readers of segments
/// (``TimedID3Scanner``, ``TransportStreamEntry``) take it: which stream it carries, whether a
/// PES packet or a table section begins in it, and its payload after any adaptation field.
struct TransportPacket {
    /// The bytes of a packet.
    static let size = 188

    /// The packet identifier: the stream it carries.
    let pid: Int
    /// Whether a PES packet or a table section begins in its payload.
    let startsUnit: Bool
    /// Its payload, after any adaptation field; nil when it carries none.
    let payload: ArraySlice<UInt8>?

    /// Reads the packet `bytes` (``size`` of them); nil when they do not begin with the sync
    /// byte: the stream is not a transport stream there, or lost sync.
    init?(_ bytes: ArraySlice<UInt8>) {
        let start = bytes.startIndex
        guard bytes.count >= Self.size, bytes[start] == 0x47 else { return nil }
        pid = Int(bytes[start + 1] & 0x1F) << 8 | Int(bytes[start + 2])
        startsUnit = bytes[start + 1] & 0x40 != 0
        let control = bytes[start + 3] >> 4 & 0x03
        let first = start + 4 + (control & 0x02 != 0 ? 1 + Int(bytes[start + 4]) : 0)
        payload = control & 0x01 != 0 && first < bytes.endIndex ? bytes[first..<bytes.endIndex] : nil
    }
}
