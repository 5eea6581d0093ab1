/// When a track handed over without a gap becomes audible.
///
/// playbin announces the next stream (STREAM_START) once the previous one's last samples are
/// in the audio sink's ring buffer, not once they have been played: the previous track still
/// sounds for up to the sink's buffer time. Reporting the new track then would name it on the
/// lock screen early, and a player that reloads at that moment would cut the previous track's
/// end. At the announcement a position query still answers the previous track's position, so
/// what is left of it is its length minus that position.
enum HandOverTiming {
    /// The longest a tail is believed: a sink never holds more than this.
    static let longestTail: Duration = .seconds(1)

    /// How long after the announcement the new track is heard: the previous track's remaining
    /// media time at `rate`, or zero when its length or position is unknown or out of range.
    static func audibleDelay(previousLength: Duration?, positionAtSwitch: Duration?, rate: Double) -> Duration {
        guard let previousLength, let positionAtSwitch, rate > 0, positionAtSwitch <= previousLength else {
            return .zero
        }
        let tail = (previousLength - positionAtSwitch) / rate
        return tail <= longestTail ? tail : .zero
    }

    /// The position to report for the loaded track's load `ticket`, given what its phase or the
    /// pipeline answered (`reported`) and the position last reported for that load (`last`).
    /// playbin may answer nothing for a moment while it switches streams, and once it has
    /// switched to a handed-over track (`handingOver`) it answers the new stream's time before
    /// the bus has said so: in both cases the last position heard of this load is still what
    /// sounds, not zero.
    static func steadied(
        _ reported: Duration?, last: (ticket: LoadTicket, position: Duration)?, ticket: LoadTicket,
        handingOver: Bool
    ) -> Duration? {
        guard let last, last.ticket == ticket else { return reported }
        guard let reported else { return last.position }
        return handingOver && reported < last.position ? last.position : reported
    }
}
