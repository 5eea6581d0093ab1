import DBusKit
import Dispatch
import EngineAPI
import FoundationEssentials
import PlayerCore

/// The lyrics line last signalled, and the re-arms of the timer that follows the lines.
struct LyricsState {
    /// `LyricsLine` as last signalled.
    var signalledLine = -1
    /// Counts re-arms of the line timer: a timer armed before the latest one does nothing.
    var generation: UInt64 = 0
}

extension MPRISService {
    /// The longest the line timer waits, so a position jump the player does not report as a seek
    /// (a gapless hand-over, a load that reports the old track's position for a moment) is caught.
    static let lyricsRecheck: Duration = .seconds(2)
    /// How long after a line's start its timer fires: the position then surely reached it.
    static let lyricsMargin: Duration = .milliseconds(3)

    /// Checks the current line now and re-arms the timer for the next one. Called on every
    /// change of the player (track, state, rate), every seek and when lyrics arrive.
    func followLyrics() {
        lyricsQueue.async { [weak self] in self?.updateLyricsLine(generation: nil) }
    }

    /// The current line's index for `LyricsLine`: −1 before the first line, and without timed lyrics.
    func currentLyricsLine() -> Int32 {
        let lyrics = published.withLock { $0.snapshot.nowPlaying?.lyrics }
        guard let lyrics, lyrics.isTimed else { return -1 }
        return Int32(clamping: lyrics.lineIndex(at: shownPosition()))
    }

    /// Signals `LyricsLine` when it changed and arms a timer for the next line's start at the
    /// current rate. Runs on the lyrics queue; a timer superseded by a re-arm (`generation` no
    /// longer current) does nothing.
    private func updateLyricsLine(generation fired: UInt64?) {
        let (lyrics, playing, rate, generation) = published.withLock { state in
            if fired == nil { state.lyrics.generation &+= 1 }
            return (
                state.snapshot.nowPlaying?.lyrics, state.snapshot.status == .playing, state.snapshot.rate,
                state.lyrics.generation
            )
        }
        if let fired, fired != generation { return }
        let position = shownPosition()
        let timed = lyrics?.isTimed == true
        let index = timed ? lyrics!.lineIndex(at: position) : -1
        // Tracks without timed lyrics send nothing, but a line left showing is taken back once.
        let signal = published.withLock { state -> Bool in
            guard index != state.lyrics.signalledLine else { return false }
            state.lyrics.signalledLine = index
            return true
        }
        if signal, hasSpoolInterface {
            connection.emitPropertiesChanged(
                path: Self.objectPath, interface: Self.spoolInterface,
                changed: [("LyricsLine", .int32(Int32(clamping: index)))])
        }
        guard timed, playing, rate > 0 else { return }
        let wait = Self.lyricsWait(from: position, to: lyrics!.nextChange(after: position), rate: rate)
        let nanoseconds =
            Int(wait.components.seconds) * 1_000_000_000 + Int(wait.components.attoseconds / 1_000_000_000)
        lyricsQueue.asyncAfter(deadline: .now() + .nanoseconds(max(1_000_000, nanoseconds))) { [weak self] in
            self?.updateLyricsLine(generation: generation)
        }
    }

    /// How long the line timer waits at `position` for the line that starts at `next` (nil: none)
    /// while playing at `rate`: the wall-clock time until the track reaches it, never longer than
    /// ``lyricsRecheck``.
    static func lyricsWait(from position: Duration, to next: Duration?, rate: Double) -> Duration {
        guard let next else { return lyricsRecheck }
        return min(lyricsRecheck, (next - position) / rate + lyricsMargin)
    }

    /// `Lyrics` of `org.spool.Spool1`: the current track's timed lines (microseconds, text).
    static func lyricsValue(_ lyrics: Lyrics?) -> DBusValue {
        .array(
            elementSignature: "(xs)",
            (lyrics?.lines ?? []).map { .structure([.int64(Int64($0.time.microseconds)), .string($0.text)]) })
    }
}
