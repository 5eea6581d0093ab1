import Basics
internal import CGStreamer
import FoundationEssentials

/// Writes embedded cover art to disk once, named by the SHA-256 of its bytes,
/// so every track of an album shares one file and clients get a `file://` URL.
struct CoverArtStore: Sendable {
    /// Where images go (`$XDG_CACHE_HOME/spool/art`).
    let directory: URL
    private let log = Logger(label: "cover-art")

    /// The largest picture stored: a bigger one (a tag that is all picture, or a hostile one)
    /// is not copied, hashed and written, and the track shows no art.
    static let largest = 16 << 20

    init(directory: URL) {
        self.directory = directory
    }

    /// A picture read from a tag list, in memory, with the file it is stored as.
    struct Picture: Sendable {
        /// The image's bytes.
        let data: Data
        /// Its file: named by the SHA-256 of the bytes.
        let url: URL
    }

    /// Copies the first `image` (else `preview-image`) of a tag list; nil when there is none.
    /// No disk access: the bus thread reads it, and ``write(_:)`` stores it elsewhere.
    func picture(in list: UnsafeMutablePointer<GstTagList>) -> Picture? {
        var sample: OpaquePointer?
        guard
            gst_tag_list_get_sample(list, "image", &sample) != 0
                || gst_tag_list_get_sample(list, "preview-image", &sample) != 0,
            let sample
        else { return nil }
        defer { gst_sample_unref(sample) }
        guard let buffer = gst_sample_get_buffer(sample) else { return nil }
        let size = gst_buffer_get_size(buffer)
        guard size <= Self.largest else {
            log.info("cover art of \(size) bytes left out (over \(Self.largest >> 20) MiB)")
            return nil
        }
        var map = GstMapInfo()
        guard gst_buffer_map(buffer, &map, GST_MAP_READ) != 0 else { return nil }
        defer { gst_buffer_unmap(buffer, &map) }
        guard let bytes = map.data, map.size > 0 else { return nil }
        guard let hash = takeGString(g_compute_checksum_for_data(G_CHECKSUM_SHA256, bytes, gsize(map.size))) else {
            return nil
        }
        return Picture(
            data: Data(bytes: bytes, count: Int(map.size)),
            url: directory.appendingPathComponent("\(hash).\(fileExtension(of: sample))"))
    }

    /// Stores `picture` unless its file is there already; false when it cannot be written.
    @discardableResult
    func write(_ picture: Picture) -> Bool {
        if FileManager.default.fileExists(atPath: picture.url.path) { return true }
        do {
            try FileManager.default.createDirectory(
                at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try picture.data.write(to: picture.url, options: .atomic)
            log.debug("stored cover art \(picture.url.lastPathComponent) (\(picture.data.count) bytes)")
            return true
        } catch {
            log.warning("cannot store cover art: \(error)")
            return false
        }
    }

    private func fileExtension(of sample: OpaquePointer) -> String {
        guard let caps = gst_sample_get_caps(sample), let structure = gst_caps_get_structure(caps, 0),
            let name = gst_structure_get_name(structure)
        else { return "img" }
        switch String(cString: name) {
        case "image/jpeg": return "jpg"
        case "image/png": return "png"
        case "image/gif": return "gif"
        case "image/webp": return "webp"
        case "image/bmp": return "bmp"
        default: return "img"
        }
    }
}
