import FoundationEssentials

/// A bit rate in bits per second, as `BANDWIDTH` states it.
public typealias BitsPerSecond = Int

/// A master (multivariant) playlist (RFC 8216 §4.3.4): the variant streams of one presentation
/// and their alternative renditions. I-frame variants (`EXT-X-I-FRAME-STREAM-INF`), session data
/// and session keys are skipped: an audio player has no use for them.
public struct MasterPlaylist: Sendable, Equatable {
    /// The playlist's own URL; every URI in it was resolved against this.
    public var url: URL
    /// `EXT-X-VERSION`, when given and readable.
    public var version: Int?
    /// The variant streams (`EXT-X-STREAM-INF`), in playlist order; never empty once parsed.
    public var variants: [Variant]
    /// The alternative renditions (`EXT-X-MEDIA`) of a type this client knows, in playlist order.
    public var renditions: [Rendition]
    /// `EXT-X-INDEPENDENT-SEGMENTS`: it applies to every media playlist of the presentation.
    public var independentSegments: Bool
    /// `EXT-X-START`: it applies to every media playlist of the presentation.
    public var start: StartPoint?
    /// Variants and renditions left out because the playlist may not name their URIs (each a
    /// ``HLSParseError/refusedURI(line:uri:reason:)``), for the log.
    public var refused: [HLSParseError] = []

    /// Creates a master playlist.
    public init(
        url: URL, version: Int? = nil, variants: [Variant], renditions: [Rendition] = [],
        independentSegments: Bool = false, start: StartPoint? = nil
    ) {
        self.url = url
        self.version = version
        self.variants = variants
        self.renditions = renditions
        self.independentSegments = independentSegments
        self.start = start
    }

    /// The variants an audio player should choose among, in playlist order:
    /// 1. those whose `CODECS` names audio codecs only (``Variant/MediaKind/audioOnly``), when
    ///    there are any;
    /// 2. else those that declare nothing about video (no `CODECS`, no `RESOLUTION`, no `VIDEO`
    ///    group: ``Variant/MediaKind/undeclared``), which is how audio-only streams often
    ///    appear;
    /// 3. else none: every variant carries video or a codec this client does not know.
    ///
    /// Tier 2 applies only without tier 1 because a playlist that marks one variant as audio by
    /// its codecs and leaves the others bare (RFC 8216 §8.4) is describing video in the bare ones.
    public var audioOnlyVariants: [Variant] {
        let declared = variants.filter { $0.mediaKind == .audioOnly }
        if !declared.isEmpty { return declared }
        return variants.filter { $0.mediaKind == .undeclared }
    }

    /// The variant to play for a measured throughput, chosen among ``audioOnlyVariants`` when
    /// there are any, else among all variants. See ``chooseVariant(from:throughput:ceiling:)``
    /// for the rule.
    public func chooseVariant(throughput: BitsPerSecond?, ceiling: BitsPerSecond? = nil) -> Variant? {
        let audio = audioOnlyVariants
        return Self.chooseVariant(from: audio.isEmpty ? variants : audio, throughput: throughput, ceiling: ceiling)
    }

    /// The variant of `candidates` to play:
    /// - variants whose `BANDWIDTH` exceeds `ceiling` (when given) are never chosen, so the
    ///   answer is nil when all do;
    /// - with a measured `throughput`, the highest `BANDWIDTH` not above 80 % of it (the margin
    ///   absorbs throughput swings and the peak-versus-average difference), else the lowest;
    /// - without a measurement, the lowest: it starts fastest, and the first measured segment
    ///   corrects the choice upward.
    ///
    /// Among equal bandwidths the first in playlist order wins.
    public static func chooseVariant(
        from candidates: [Variant], throughput: BitsPerSecond?, ceiling: BitsPerSecond?
    ) -> Variant? {
        let allowed = candidates.filter { variant in ceiling.map { variant.bandwidth <= $0 } ?? true }
        guard let lowest = allowed.min(by: { $0.bandwidth < $1.bandwidth }) else { return nil }
        guard let throughput else { return lowest }
        let budget = throughput.multipliedReportingOverflow(by: 4)
        let affordable = budget.overflow ? Int.max / 5 : budget.partialValue / 5
        let fitting = allowed.filter { $0.bandwidth <= affordable }
        // `max(by:)` and `min(by:)` keep the first of equal elements: the first listed wins.
        return fitting.max(by: { $0.bandwidth < $1.bandwidth }) ?? lowest
    }

    /// The renditions of `type` in group `groupID`, in playlist order.
    public func renditions(ofType type: Rendition.MediaType, inGroup groupID: String) -> [Rendition] {
        renditions.filter { $0.type == type && $0.groupID == groupID }
    }

    /// The audio rendition to play with `variant` when its audio comes from an `AUDIO` group
    /// (RFC 8216 §4.3.4.2.1): the group's `DEFAULT=YES` rendition with a URI, else its first
    /// `AUTOSELECT=YES` one with a URI, else its first with a URI. Nil when the variant has no
    /// audio group or no rendition of it has a URI (the audio is then in the variant itself).
    public func audioRendition(for variant: Variant) -> Rendition? {
        guard let group = variant.audioGroup else { return nil }
        let playable = renditions(ofType: .audio, inGroup: group).filter { $0.uri != nil }
        return playable.first(where: \.isDefault) ?? playable.first(where: \.autoselect) ?? playable.first
    }
}

/// A variant stream (`EXT-X-STREAM-INF` and the URI line after it).
public struct Variant: Sendable, Equatable {
    /// The variant's media playlist URL, resolved against the master playlist's URL.
    public var uri: URL
    /// `BANDWIDTH`: the peak bit rate of any segment.
    public var bandwidth: BitsPerSecond
    /// `AVERAGE-BANDWIDTH`, when given.
    public var averageBandwidth: BitsPerSecond?
    /// `CODECS`, split at the commas (RFC 6381 names such as `mp4a.40.2`); empty when absent.
    public var codecs: [String]
    /// `RESOLUTION`, when given (only video has one).
    public var resolution: Resolution?
    /// `FRAME-RATE`, when given.
    public var frameRate: Double?
    /// `AUDIO`: the group of ``Rendition``s carrying this variant's audio, when given.
    public var audioGroup: String?
    /// `VIDEO`: the group of ``Rendition``s carrying this variant's video, when given.
    public var videoGroup: String?

    /// Creates a variant.
    public init(
        uri: URL, bandwidth: BitsPerSecond, averageBandwidth: BitsPerSecond? = nil, codecs: [String] = [],
        resolution: Resolution? = nil, frameRate: Double? = nil, audioGroup: String? = nil, videoGroup: String? = nil
    ) {
        self.uri = uri
        self.bandwidth = bandwidth
        self.averageBandwidth = averageBandwidth
        self.codecs = codecs
        self.resolution = resolution
        self.frameRate = frameRate
        self.audioGroup = audioGroup
        self.videoGroup = videoGroup
    }

    /// What a variant says about its media.
    public enum MediaKind: Sendable, Equatable {
        /// `CODECS` names audio codecs only (subtitle formats aside).
        case audioOnly
        /// A video codec, a `RESOLUTION` or a `VIDEO` group.
        case video
        /// Nothing about video, and `CODECS` absent or naming a codec this client does not know.
        case undeclared
    }

    /// What the variant's attributes say about its media.
    public var mediaKind: MediaKind {
        let kinds = codecs.map(CodecKind.init(codec:))
        if resolution != nil || videoGroup != nil || kinds.contains(.video) { return .video }
        if kinds.contains(.audio), kinds.allSatisfy({ $0 == .audio || $0 == .text }) { return .audioOnly }
        return .undeclared
    }
}

/// A video resolution (`RESOLUTION=WxH`).
public struct Resolution: Sendable, Equatable, Hashable {
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int

    /// Creates a resolution.
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }
}

/// An alternative rendition (`EXT-X-MEDIA`): another audio language, camera angle or
/// subtitle track, grouped by ``groupID`` and referred to by variants.
public struct Rendition: Sendable, Equatable {
    /// `TYPE`.
    public var type: MediaType
    /// `GROUP-ID`.
    public var groupID: String
    /// `NAME`: a human-readable description, unique within the group.
    public var name: String
    /// `LANGUAGE` (an RFC 5646 tag), when given.
    public var language: String?
    /// `DEFAULT=YES`: play this one when the user has not chosen.
    public var isDefault: Bool
    /// `AUTOSELECT=YES`: may be chosen by the client from the user's preferences.
    public var autoselect: Bool
    /// `CHANNELS` (audio: the channel count first, e.g. "2" or "6"), when given.
    public var channels: String?
    /// `URI`, resolved; nil when the rendition's media is inside the variant streams themselves.
    public var uri: URL?

    /// Creates a rendition.
    public init(
        type: MediaType, groupID: String, name: String, language: String? = nil, isDefault: Bool = false,
        autoselect: Bool = false, channels: String? = nil, uri: URL? = nil
    ) {
        self.type = type
        self.groupID = groupID
        self.name = name
        self.language = language
        self.isDefault = isDefault
        self.autoselect = autoselect
        self.channels = channels
        self.uri = uri
    }

    /// `TYPE`: what a rendition carries. Renditions of an unknown type are skipped.
    public enum MediaType: String, Sendable, Equatable {
        /// Audio.
        case audio = "AUDIO"
        /// Video.
        case video = "VIDEO"
        /// WebVTT subtitles.
        case subtitles = "SUBTITLES"
        /// CEA-608/708 captions inside the video (never has a URI).
        case closedCaptions = "CLOSED-CAPTIONS"
    }
}

/// What an RFC 6381 codec name in `CODECS` carries.
enum CodecKind: Equatable {
    case audio
    case video
    case text
    case unknown

    /// Audio and video sample entries and object types seen in HLS `CODECS`; compared without
    /// case (servers write both `Opus` and `opus`, `fLaC` and `flac`).
    private static let audioPrefixes = [
        "mp4a", "mp3", "ac-3", "ec-3", "ac-4", "opus", "flac", "alac", "vorbis", "dtsc",
    ]
    private static let videoPrefixes = [
        "avc1", "avc3", "hvc1", "hev1", "dvh1", "dvhe", "dva1", "dvav", "vp08", "vp8", "vp09", "vp9", "av01", "mp4v",
    ]
    private static let textPrefixes = ["wvtt", "stpp"]

    init(codec: String) {
        let name = Substring(codec).trimmingASCIIWhitespace().lowercased()
        let family = name.split(separator: ".", maxSplits: 1).first.map(String.init) ?? name
        if Self.audioPrefixes.contains(family) {
            self = .audio
        } else if Self.videoPrefixes.contains(family) {
            self = .video
        } else if Self.textPrefixes.contains(family) {
            self = .text
        } else {
            self = .unknown
        }
    }
}
