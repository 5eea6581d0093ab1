import Foundation
import PlayerCore
import TestSupport
import Testing

@Suite("Cover art next to a local file")
struct SidecarArtTests {
    static let cases: [(files: [String], chosen: String?)] = [
        (["01 song.mp3", "cover.jpg"], "cover.jpg"),
        (["Folder.JPG", "song.flac"], "Folder.JPG"),
        (["front.png", "album.jpeg"], "front.png"),
        (["album.jpeg", "folder.png", "COVER.PNG"], "COVER.PNG"),
        (["cover.png", "cover.jpeg", "cover.jpg"], "cover.jpg"),
        (["Cover.jpg", "cover.jpg"], "Cover.jpg"),
        (["cover.gif", "cover.bmp", "covers.jpg", "my cover.jpg", "cover", ".jpg", "cover.jpg.txt"], nil),
        (["back.jpg", "scan.png"], nil),
        ([], nil),
    ]

    @Test(arguments: cases.indices)
    func theArtFileIsChosenByNameThenExtension(_ index: Int) {
        let (files, chosen) = Self.cases[index]
        #expect(SidecarArt.choose(among: files) == chosen, "\(files)")
        #expect(SidecarArt.choose(among: files.reversed()) == chosen, "order of \(files.reversed())")
    }

    @Test func aFolderIsReadForItsArtFile() throws {
        let folder = try TemporaryDirectory(prefix: "spool-sidecar")
        #expect(SidecarArt.find(in: folder.url.path) == nil)
        try Data([0xFF, 0xD8]).write(to: folder.url.appendingPathComponent("Folder.JPEG"))
        #expect(SidecarArt.find(in: folder.url.path)?.lastPathComponent == "Folder.JPEG")
        #expect(SidecarArt.find(in: folder.url.path + "/missing") == nil)
    }
}
