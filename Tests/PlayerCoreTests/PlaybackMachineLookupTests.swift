import EngineAPI
import Foundation
import PlayerCore
import Testing

/// The current track complete at the source: what the machine asks its shell to look up, and how
/// the answers join what the engine reports in the one `NowPlaying` every client reads.
@Suite("PlaybackMachine: folder art, estimated lengths and lyrics in the track")
struct PlaybackMachineLookupTests {
    static let folder = "/music/album"
    static let mp3 = URL(fileURLWithPath: "/music/album/1.mp3")
    static let art = URL(fileURLWithPath: "/music/album/cover.jpg")

    static func lyrics(_ text: String) -> Lyrics { Lyrics.parse(text) }

    @Test func aLoadedLocalTrackAsksForItsFolderItsLengthAndItsLyrics() {
        var rig = MachineRig(looksUp: true)
        let step = rig.apply(.open([TrackItem(url: Self.mp3)]))
        let id = rig.id(0)
        #expect(step.effects.contains(.readFolders([Self.folder])))
        #expect(step.effects.contains(.estimateLength(id, Self.mp3)))
        #expect(step.effects.contains(.readLyrics(id, Self.mp3, tagText: nil, remote: false)))
        let again = rig.apply(.engine(.buffering(id, true)))
        #expect(
            !again.effects.contains { if case .readFolders = $0 { true } else { false } }, "each folder read once")
        #expect(!again.effects.contains(.estimateLength(id, Self.mp3)), "one estimate per track")
    }

    @Test func answersJoinTheTrackAndTheEnginesOwnReportsWin() {
        var rig = MachineRig(looksUp: true)
        rig.apply(.open([TrackItem(url: Self.mp3)]))
        let id = rig.id(0)
        rig.apply(.foldersRead([Self.folder: Self.art]))
        rig.apply(.lengthEstimated(.seconds(200), of: id))
        #expect(rig.machine.snapshot.nowPlaying?.tags.artURL == Self.art)
        #expect(rig.machine.snapshot.nowPlaying?.duration == .seconds(200))
        var embedded = TrackTags()
        embedded.artURL = URL(fileURLWithPath: "/cache/art/abc.jpg")
        rig.apply(.engine(.described(id, embedded, duration: .seconds(201))))
        #expect(rig.machine.snapshot.nowPlaying?.tags.artURL == embedded.artURL, "an embedded picture wins")
        #expect(rig.machine.snapshot.nowPlaying?.duration == .seconds(201), "the decoder's length wins")
    }

    @Test func lyricsOfAnotherTrackOrFromTagsAfterTheSidecarAreDropped() {
        var rig = MachineRig(looksUp: true)
        rig.apply(.open(MachineRig.urls.map { TrackItem(url: $0) }))
        let first = rig.id(0)
        let sidecar = Self.lyrics("[00:01.00]from the file")
        rig.apply(.lyricsRead(sidecar, of: first, tagText: nil, fromSidecar: true))
        #expect(rig.machine.snapshot.nowPlaying?.lyrics == sidecar)
        rig.apply(.lyricsRead(Self.lyrics("[00:01.00]from the tag"), of: first, tagText: nil, fromSidecar: false))
        #expect(rig.machine.snapshot.nowPlaying?.lyrics == sidecar, "a .lrc file wins over the tag")
        rig.apply(.next)
        rig.apply(.lyricsRead(Self.lyrics("[00:02.00]late"), of: first, tagText: nil, fromSidecar: true))
        #expect(rig.machine.snapshot.nowPlaying?.lyrics == nil, "the previous track's answer shows nowhere")
    }

    @Test func anHTTPTrackAsksForItsRemoteLyricsOnceAndNewTagLyricsAreReadAgain() {
        var rig = MachineRig(looksUp: true)
        let url = URL(string: "http://127.0.0.1:1/song.mp3")!
        let step = rig.apply(.open([TrackItem(url: url)]))
        let id = rig.id(0)
        #expect(step.effects.contains(.readLyrics(id, url, tagText: nil, remote: true)))
        #expect(!step.effects.contains { if case .estimateLength = $0 { true } else { false } })
        var tags = TrackTags()
        tags.lyrics = "[00:01.00]in the tag"
        let described = rig.apply(.engine(.described(id, tags, duration: .seconds(30))))
        #expect(described.effects.contains(.readLyrics(id, url, tagText: tags.lyrics, remote: false)))
    }

    @Test func withoutLookupsNothingIsAsked() {
        var rig = MachineRig()
        let step = rig.apply(.open([TrackItem(url: Self.mp3)]))
        #expect(
            !step.effects.contains {
                switch $0 {
                case .readFolders, .estimateLength, .readLyrics: true
                default: false
                }
            })
    }
}
