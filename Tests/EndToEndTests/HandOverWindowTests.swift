import DBusKit
import Foundation
import TestSupport
import Testing

/// Which of a few tones sounds in each 10 ms of a recording (nil: silence or a mixture).
func tonesPer10ms(_ pcm: Data, frequencies: [Int]) -> [Int?] {
    let samples = leftChannel(pcm)
    let window = 441
    return stride(from: 0, to: samples.count - window, by: window).map { start in
        let slice = samples[start..<(start + window)]
        let energy = slice.reduce(0.0) { $0 + Double($1) * Double($1) }
        guard energy > Double(window) * 1e5 else { return nil }  // quieter than about -50 dBFS
        // Goertzel power of each frequency; the tone is the one holding most of the energy.
        let powers = frequencies.map { frequency -> Double in
            let coefficient = 2 * cos(2 * Double.pi * Double(frequency) / 44_100)
            var (previous, beforePrevious) = (0.0, 0.0)
            for sample in slice {
                let current = Double(sample) + coefficient * previous - beforePrevious
                beforePrevious = previous
                previous = current
            }
            return previous * previous + beforePrevious * beforePrevious - coefficient * previous * beforePrevious
        }
        let best = powers.indices.max { powers[$0] < powers[$1] }!
        return powers[best] > powers.reduce(0, +) * 0.9 ? frequencies[best] : nil
    }
}

/// Runs of the same value: (value, count), in order.
func runs<T: Equatable>(_ values: [T]) -> [(T, Int)] {
    var result: [(T, Int)] = []
    for value in values {
        if let last = result.last, last.0 == value {
            result[result.count - 1].1 += 1
        } else {
            result.append((value, 1))
        }
    }
    return result
}

/// Queue edits in the last second of a track, after GStreamer took the next one: what is heard,
/// `Metadata` and the `TrackList` must agree.
@Suite("Queue edits in the hand-over window", .serialized)
struct HandOverWindowTests {
    enum Edit: String, CaseIterable, Sendable {
        /// TrackList.AddTrack(the 4th tone, after the current one): "play next".
        case playNext
        /// TrackList.RemoveTrack(the committed second track).
        case removeTheNext
        /// Player.Next.
        case next
        /// Player.Previous (past 3 s: the track starts again).
        case previous
        /// Player.OpenUri(the 4th tone): the queue is replaced.
        case openUri
    }

    /// How long the first tone plays, and each of the others: heard in real time, they are kept
    /// short (the engine commits to the next track about a second before the first one's end).
    static let firstSeconds = 2.0
    static let otherSeconds = 1.5

    /// Plays tones of 300 Hz (``firstSeconds``), 500 Hz and 700 Hz (``otherSeconds`` each), makes
    /// `edit` once the engine committed to the second, and returns the tones heard in order (with
    /// how long each sounded, in 10 ms) and the URLs `Metadata` named.
    func play(_ edit: Edit) async throws -> (heard: [(Int, Int)], named: [String], tones: [Int: URL], summary: String) {
        let media = try TemporaryDirectory()
        var tones: [Int: URL] = [:]
        let lengths = [
            (300, Self.firstSeconds), (500, Self.otherSeconds), (700, Self.otherSeconds), (900, Self.otherSeconds),
        ]
        for (frequency, seconds) in lengths {
            tones[frequency] = try steadyTone(frequency: frequency, seconds: seconds, amplitude: 0.5, in: media)
        }
        let pulse = try PulseServer()
        let recording = try pulse.recordOutput()
        let daemon = try RunningDaemon(
            standardOptions: false, extraEnvironment: ["SPOOL_LOG": "debug", "PULSE_SERVER": pulse.server])
        try await daemon.waitUntilReady()
        let signals = try await daemon.client.subscribe(
            matching:
                "type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',arg0='org.mpris.MediaPlayer2.Player'"
        )
        let named = Task {
            var urls: [String] = []
            for await message in signals {
                let changed = changedProperties(message)
                if let url = changed["Metadata"]?.stringVariantDictValue?["xesam:url"]?.stringValue, urls.last != url {
                    urls.append(url)
                }
                if changed["PlaybackStatus"]?.stringValue == "Stopped" { break }
            }
            return urls
        }
        let queue = [tones[300]!, tones[500]!, tones[700]!]
        try await daemon.mpris("org.spool.Spool1", "Play", [.stringArray(queue.map(\.absoluteString))])
        guard
            await eventually(
                timeout: 15, interval: 0.01, { daemon.process.standardError.contains("committed track 2 as the next") })
        else {
            throw RigError("the engine never committed the second track; log:\n\(daemon.process.standardError)")
        }
        let tracks = try await daemon.property("org.mpris.MediaPlayer2.TrackList", "Tracks")?.arrayValues ?? []
        let paths = tracks.compactMap(\.objectPathValue)
        switch edit {
        case .playNext:
            try await daemon.mpris(
                "org.mpris.MediaPlayer2.TrackList", "AddTrack",
                [.string(tones[900]!.absoluteString), .objectPath(paths[0]), .boolean(false)])
        case .removeTheNext:
            try await daemon.mpris("org.mpris.MediaPlayer2.TrackList", "RemoveTrack", [.objectPath(paths[1])])
        case .next:
            try await daemon.mpris("org.mpris.MediaPlayer2.Player", "Next")
        case .previous:
            try await daemon.mpris("org.mpris.MediaPlayer2.Player", "Previous")
        case .openUri:
            try await daemon.mpris("org.mpris.MediaPlayer2.Player", "OpenUri", [.string(tones[900]!.absoluteString)])
        }
        let deadline = Task {
            try await Task.sleep(for: .seconds(30))
            named.cancel()
        }
        let urls = await named.value
        deadline.cancel()
        try await recording.waitToGrow(byMilliseconds: 300)  // the tail the server still held
        let pcm = try recording.stop()
        let heard = runs(tonesPer10ms(pcm, frequencies: [300, 500, 700, 900])).compactMap { run in
            run.0.map { ($0, run.1) }
        }
        let summary = runs(tonesPer10ms(pcm, frequencies: [300, 500, 700, 900]))
            .map { "\($0.0.map(String.init) ?? "-")×\($0.1)" }.joined(separator: " ")
        print("\(edit) in the hand-over window, heard per 10 ms: \(summary)")
        return (heard, urls, tones, summary)
    }

    /// Across a gapless hand-over, Position never reads the new track's while Metadata still
    /// names the old one (the old one's last samples still play for ~120 ms after the switch).
    @Test func positionFollowsWhatIsHeardAcrossTheHandOver() async throws {
        let media = try TemporaryDirectory()
        let first = try steadyTone(frequency: 300, seconds: 4, amplitude: 0.5, in: media)
        let second = try steadyTone(frequency: 500, seconds: 3, amplitude: 0.5, in: media)
        let pulse = try PulseServer()
        let daemon = try RunningDaemon(
            standardOptions: false, extraEnvironment: ["SPOOL_LOG": "debug", "PULSE_SERVER": pulse.server])
        try await daemon.waitUntilReady()
        try await daemon.mpris("org.spool.Spool1", "Play", [.stringArray([first, second].map(\.absoluteString))])
        var reads: [String] = []
        let started = ContinuousClock.now
        var nearTheEnd = false
        while !nearTheEnd, ContinuousClock.now - started < .seconds(15) {
            let position = try await daemon.property("org.mpris.MediaPlayer2.Player", "Position")?.int64Value ?? -1
            let url =
                try await daemon.property("org.mpris.MediaPlayer2.Player", "Metadata")?
                .stringVariantDictValue?["xesam:url"]?.stringValue ?? ""
            let read =
                "\(URL(string: url)?.lastPathComponent ?? "-")@\(position / 1000) ms at \(ContinuousClock.now - started)"
            if reads.last?.split(separator: " ").first != read.split(separator: " ").first { reads.append(read) }
            nearTheEnd = url == first.absoluteString && position > 3_000_000
            if !nearTheEnd { try await Task.sleep(for: .milliseconds(10)) }
        }
        #expect(
            nearTheEnd,
            "reads: \(reads.suffix(20))\n\(daemon.process.standardError.components(separatedBy: "\n").suffix(30).joined(separator: "\n"))"
        )
        var samples: [(position: Int64, url: String)] = []
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            // Position first, then Metadata: Metadata only moves forward, so one that still names
            // the first track was current when the position was read.
            let position = try await daemon.property("org.mpris.MediaPlayer2.Player", "Position")?.int64Value ?? -1
            let url =
                try await daemon.property("org.mpris.MediaPlayer2.Player", "Metadata")?
                .stringVariantDictValue?["xesam:url"]?.stringValue ?? ""
            samples.append((position, url))
            if url == second.absoluteString { break }
        }
        let whileFirst = samples.filter { $0.url == first.absoluteString }
        #expect(samples.last?.url == second.absoluteString, "the second track never started")
        #expect(whileFirst.count > 10, "sampled \(whileFirst.count) times before the switch")
        let early = whileFirst.filter { $0.position < 3_000_000 }
        #expect(early.isEmpty, "Position read \(early.map(\.position)) µs while Metadata still named the first track")
    }

    @Test func aNextTrackThatBreaksInTheWindowLetsTheCurrentOneEnd() async throws {
        let media = try TemporaryDirectory()
        // Long enough that the break is found in the first track's last second: found earlier, the
        // reload without it skips what the stall let the clock run past (a known limit).
        let first = try steadyTone(frequency: 300, seconds: 4, amplitude: 0.5, in: media)
        let last = try steadyTone(frequency: 700, seconds: 3, amplitude: 0.5, in: media)
        let broken = media.file("broken.m4a")
        let whole = try Data(contentsOf: try Fixtures.shared().fixture(.m4aMoovAtEnd).url)
        try whole.prefix(whole.count / 3).write(to: broken)  // its header is fine, its index missing
        let pulse = try PulseServer()
        let recording = try pulse.recordOutput()
        let daemon = try RunningDaemon(
            standardOptions: false, extraEnvironment: ["SPOOL_LOG": "debug", "PULSE_SERVER": pulse.server])
        try await daemon.waitUntilReady()
        try await daemon.mpris("org.spool.Spool1", "Play", [.stringArray([first, broken, last].map(\.absoluteString))])
        var lastLoaded = try await daemon.waitForProperty("org.mpris.MediaPlayer2.Player", "Metadata") {
            $0?.stringVariantDictValue?["xesam:url"]?.stringValue == last.absoluteString
        }
        if !lastLoaded {
            lastLoaded = await eventually(timeout: 10) { daemon.process.standardError.contains("loading track 3") }
        }
        #expect(lastLoaded)
        let stopped = try await daemon.waitForProperty("org.mpris.MediaPlayer2.Player", "PlaybackStatus") {
            $0?.stringValue == "Stopped"
        }
        #expect(
            stopped,
            "\(daemon.process.standardError.components(separatedBy: "\n").filter { !$0.contains("DEBUG mpris") }.suffix(60).joined(separator: "\n"))"
        )
        try await recording.waitToGrow(byMilliseconds: 300)
        let pcm = try recording.stop()
        let all = runs(tonesPer10ms(pcm, frequencies: [300, 700]))
        let summary = all.map { "\($0.0.map(String.init) ?? "-")×\($0.1)" }.joined(separator: " ")
        print("a broken next track, heard per 10 ms: \(summary)")
        let heard = all.compactMap { run in run.0.map { ($0, run.1) } }
        let firstHeard = heard.filter { $0.0 == 300 }.reduce(0) { $0 + $1.1 } * 10
        #expect(firstHeard >= 3900, "the playing track sounded \(firstHeard) ms of 3994: \(summary)")
        #expect(runs(heard.filter { $0.1 >= 10 }.map(\.0)).map(\.0) == [300, 700], "\(summary)")
        let log = daemon.process.standardError
        // Either the demuxer's error reaches the bus and is routed to the next track, or decodebin
        // swallows it (a race in GStreamer) and the stand-still at the boundary is noticed.
        #expect(log.contains("engine: track 2 (next): ") || log.contains("the next track never started"))
        #expect(!log.contains("engine: track 1: "), "never to the playing one")
    }

    @Test(arguments: Edit.allCases)
    func anEditInTheWindowIsWhatIsHeardAndNamed(edit: Edit) async throws {
        let (heard, named, tones, summary) = try await play(edit)
        let expected: [Int] =
            switch edit {
            case .playNext: [300, 900, 500, 700]
            case .removeTheNext: [300, 700]
            case .next: [300, 500, 700]
            case .previous: [300, 500, 700]  // the restart is the same tone: one run
            case .openUri: [300, 900]
            }
        // Heard and named agree within 100 ms: a tone that sounds for less (the committed track
        // while the engine reloads at the boundary) does not count as played, but is bounded.
        let played = runs(heard.filter { $0.1 >= 10 }.map(\.0)).map(\.0)
        #expect(played == expected, "heard \(summary)")
        let stray = heard.filter { $0.1 < 10 }.reduce(0) { $0 + $1.1 } * 10
        #expect(stray <= 50, "\(stray) ms of stray audio: \(summary)")
        #expect(
            named == expected.map { tones[$0]!.absoluteString },
            "Metadata named \(named.map { URL(string: $0)!.lastPathComponent })")
        let firstMilliseconds = Int(Self.firstSeconds * 1000)
        if edit == .previous {
            // Restarted from 0 within its last second: more than one play of it was heard.
            let first = heard.filter { $0.0 == 300 }.reduce(0) { $0 + $1.1 } * 10
            #expect(first >= 2 * firstMilliseconds - 1500, "the first track sounded \(first) ms in all: \(summary)")
        }
        if edit == .playNext || edit == .removeTheNext {
            // The first track plays to its end (its last 10 ms may share a window with silence).
            #expect(
                (heard.first?.1 ?? 0) * 10 >= firstMilliseconds - 100,
                "the first track sounded \((heard.first?.1 ?? 0) * 10) ms of \(firstMilliseconds)")
        }
    }
}
