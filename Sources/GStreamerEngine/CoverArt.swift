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

    /// Extracts the first `image` (else `preview-image`) of a tag list and stores it; nil when there is none.
    func store(from list: UnsafeMutablePointer<GstTagList>) -> URL? {
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
        let data = Data(bytes: bytes, count: Int(map.size))
        guard let hash = takeGString(g_compute_checksum_for_data(G_CHECKSUM_SHA256, bytes, gsize(map.size))) else {
            return nil
        }
        let url = directory.appendingPathComponent("\(hash).\(fileExtension(of: sample))")
        if FileManager.default.fileExists(atPath: url.path) { return url }
        do {
            try FileManager.default.createDirectory(
                at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try data.write(to: url, options: .atomic)
            log.debug("stored cover art \(url.lastPathComponent) (\(data.count) bytes)")
            return url
        } catch {
            log.warning("cannot store cover art: \(error)")
            return nil
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
