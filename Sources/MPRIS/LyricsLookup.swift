import DBusKit
import Dispatch
import EngineAPI
import FoundationEssentials
import PlayerCore

/// What is known of the current track's lyrics, and the line last signalled.
struct LyricsState {
    /// The track the lyrics were read for.
    var id: TrackID?
    /// The lyrics tag they were read with (a later tag with other lyrics is read again).
    var tagText: String?
    /// Whether they came from a `.lrc` file beside the track, which wins over any tag.
    var fromSidecar = false
    /// The lyrics read (nil: none, or still being read).
    var lyrics: Lyrics?
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

    /// `snapshot` with its track's lyrics: those of a `.lrc` file beside the track (on disk, or
    /// for an http(s) track fetched once in the background), else its lyrics tag, which is often
    /// LRC itself. They are read and parsed on the art queue, never in a D-Bus call or on the
    /// player's executor; a track shows its lyrics when they answer. Called with the published
    /// state locked.
    func withLyrics(_ snapshot: PlayerSnapshot, _ state: inout Published) -> PlayerSnapshot {
        guard let track = snapshot.nowPlaying else {
            state.lyrics.id = nil
            state.lyrics.lyrics = nil
            return snapshot
        }
        let id = track.entry.id
        let tagText = track.tags.lyrics
        let known = state.lyrics.id == id
        if !known || (!state.lyrics.fromSidecar && state.lyrics.tagText != tagText) {
            state.lyrics.id = id
            state.lyrics.tagText = tagText
            state.lyrics.fromSidecar = false
            if !known { state.lyrics.lyrics = nil }
            readLyrics(of: track.entry.url, id: id, tagText: tagText)
            if !known, let remoteLyrics, !track.entry.url.isFileURL {
                let url = track.entry.url
                Task { [weak self] in
                    guard let text = await remoteLyrics(url), let queue = self?.artQueue else { return }
                    queue.async { [weak self] in self?.publishLyrics(text, id: id, tagText: tagText, fromSidecar: true)
                    }
                }
            }
        }
        var patched = snapshot
        patched.nowPlaying?.lyrics = state.lyrics.lyrics
        return patched
    }

    /// Reads the lyrics of track `id` (its local `.lrc`, else `tagText`) on the art queue and publishes them.
    private func readLyrics(of url: URL, id: TrackID, tagText: String?) {
        artQueue.async { [weak self] in
            let sidecar = LyricsFile.sidecarPath(for: url).flatMap(LyricsFile.read(atPath:))
            self?.publishLyrics(sidecar ?? tagText, id: id, tagText: tagText, fromSidecar: sidecar != nil)
        }
    }

    /// Parses `text` as track `id`'s lyrics and publishes them, unless the track changed
    /// meanwhile, or other tags were read (their own read publishes), or these come from the
    /// tags and a `.lrc` file already answered. Runs on the art queue.
    private func publishLyrics(_ text: String?, id: TrackID, tagText: String?, fromSidecar: Bool) {
        let lyrics = text.map(Lyrics.parse).flatMap { $0.isEmpty ? nil : $0 }
        let changed = published.withLock { state -> Bool in
            guard state.lyrics.id == id, fromSidecar || (state.lyrics.tagText == tagText && !state.lyrics.fromSidecar)
            else { return false }
            state.lyrics.lyrics = lyrics
            state.lyrics.fromSidecar = fromSidecar
            guard state.snapshot.nowPlaying?.entry.id == id, state.snapshot.nowPlaying?.lyrics != lyrics else {
                return false
            }
            state.snapshot.nowPlaying?.lyrics = lyrics
            defer { state.flushScheduled = true }
            return !state.flushScheduled
        }
        if let lyrics {
            log.debug(
                "lyrics of \(id): \(lyrics.lines.count) timed lines\(fromSidecar ? " from a .lrc file" : " from the tags")"
            )
        }
        if changed { scheduleFlush() }
        followLyrics()
    }

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
        let next = lyrics!.nextChange(after: position)
        let wait =
            next.map { min(Self.lyricsRecheck, ($0 - position) / rate + Self.lyricsMargin) } ?? Self.lyricsRecheck
        let nanoseconds =
            Int(wait.components.seconds) * 1_000_000_000 + Int(wait.components.attoseconds / 1_000_000_000)
        lyricsQueue.asyncAfter(deadline: .now() + .nanoseconds(max(1_000_000, nanoseconds))) { [weak self] in
            self?.updateLyricsLine(generation: generation)
        }
    }

    /// `Lyrics` of `org.spool.Spool1`: the current track's timed lines (microseconds, text).
    static func lyricsValue(_ lyrics: Lyrics?) -> DBusValue {
        .array(
            elementSignature: "(xs)",
            (lyrics?.lines ?? []).map { .structure([.int64(Int64($0.time.microseconds)), .string($0.text)]) })
    }
}
