import FoundationEssentials

/// Builds a ``MasterPlaylist`` line by line: each `EXT-X-STREAM-INF` waits for the URI line
/// after it; `EXT-X-MEDIA` stands alone.
struct MasterPlaylistBuilder {
    private var playlist: MasterPlaylist
    private let resolver: URIResolver
    /// The `EXT-X-STREAM-INF` waiting for its URI line, as a variant without its URI yet.
    private var pendingVariant: (variant: Variant, line: Int)?

    init(url: URL) {
        playlist = MasterPlaylist(url: url, variants: [])
        resolver = URIResolver(base: url)
    }

    mutating func consume(_ line: PlaylistLine) throws(HLSParseError) {
        switch line.content {
        case .uri(let text):
            // A URI line after anything but EXT-X-STREAM-INF belongs to nothing: ignored.
            guard var pending = pendingVariant else { return }
            pendingVariant = nil
            guard let uri = try admitted(text, line: line.number) else { return }  // the others still play
            pending.variant.uri = uri
            playlist.variants.append(pending.variant)
        case .tag(let tag, let value):
            try apply(tag, value: (value ?? "")[...], line: line.number)
        }
    }

    private mutating func apply(_ tag: Tag, value: Substring, line: Int) throws(HLSParseError) {
        switch tag {
        case .streamInf:
            if let pending = pendingVariant { throw .variantWithoutURI(line: pending.line) }
            pendingVariant = (try variant(AttributeList(parsing: value), line: line), line)
        case .media:
            if let rendition = try rendition(AttributeList(parsing: value), line: line) {
                playlist.renditions.append(rendition)
            }
        case .independentSegments: playlist.independentSegments = true
        case .version: playlist.version = decimalInteger(value)
        case .start: playlist.start = startPoint(AttributeList(parsing: value))
        default: break
        }
    }

    private func variant(_ attributes: AttributeList, line: Int) throws(HLSParseError) -> Variant {
        guard let bandwidth = attributes.decimalInteger("BANDWIDTH") else { throw .variantWithoutBandwidth(line: line) }
        let codecs = (attributes.string("CODECS") ?? "").split(separator: ",").map { $0.trimmingASCIIWhitespace() }
        return Variant(
            uri: playlist.url, bandwidth: bandwidth, averageBandwidth: attributes.decimalInteger("AVERAGE-BANDWIDTH"),
            codecs: codecs.filter { !$0.isEmpty }.map(String.init), resolution: attributes.resolution("RESOLUTION"),
            frameRate: attributes.decimalFloatingPoint("FRAME-RATE"), audioGroup: attributes.string("AUDIO"),
            videoGroup: attributes.string("VIDEO"))
    }

    /// The rendition, or nil for a `TYPE` this client does not know.
    private mutating func rendition(_ attributes: AttributeList, line: Int) throws(HLSParseError) -> Rendition? {
        let tag = "EXT-X-MEDIA"
        guard let typeText = attributes.string("TYPE") else {
            throw .missingAttribute(line: line, tag: tag, attribute: "TYPE")
        }
        guard let groupID = attributes.string("GROUP-ID") else {
            throw .missingAttribute(line: line, tag: tag, attribute: "GROUP-ID")
        }
        guard let name = attributes.string("NAME") else {
            throw .missingAttribute(line: line, tag: tag, attribute: "NAME")
        }
        guard let type = Rendition.MediaType(rawValue: typeText) else { return nil }
        var uri: URL?
        if let uriText = attributes.string("URI") {
            guard let admitted = try admitted(uriText, line: line) else { return nil }
            uri = admitted
        }
        return Rendition(
            type: type, groupID: groupID, name: name, language: attributes.string("LANGUAGE"),
            isDefault: attributes.isYes("DEFAULT"), autoselect: attributes.isYes("AUTOSELECT"),
            channels: attributes.string("CHANNELS"), uri: uri)
    }

    /// The URL `reference` names, or nil when the playlist may not name it (kept in `refused`).
    private mutating func admitted(_ reference: String, line: Int) throws(HLSParseError) -> URL? {
        do throws(HLSParseError) {
            return try resolver.resolveAdmitted(reference, line: line)
        } catch {
            guard case .refusedURI = error else { throw error }
            playlist.refused.append(error)
            return nil
        }
    }

    /// The playlist, once every line is consumed.
    func finish() throws(HLSParseError) -> MasterPlaylist {
        if let pending = pendingVariant { throw .variantWithoutURI(line: pending.line) }
        guard !playlist.variants.isEmpty else { throw playlist.refused.first ?? .noVariants }
        return playlist
    }
}
