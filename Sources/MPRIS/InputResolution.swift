import DBusKit
import FoundationEssentials
import PlayerCore

extension MPRISService {
    /// What one URI of a call stands for: tracks known now, or a remote playlist to fetch.
    private enum Part {
        case ready([TrackItem])
        case fetch(String)
    }

    /// Checks the URIs of a call (OpenUri, AddTrack, Play, Add), turns them into tracks and hands
    /// them to `apply`. A malformed URI or a missing file is the call's InvalidArgs error. A remote
    /// playlist needs the network, which no call waits for: the call is answered at once, the
    /// playlist is fetched afterwards and `apply` runs when it has arrived (calls answered in the
    /// meantime take effect first); a failure to fetch it shows in `LastError`. With `replacing`
    /// (the calls that replace the queue) a later such call wins over a playlist still arriving.
    func queueInputs(
        _ texts: [String], replacing: Bool = false, _ apply: @escaping @Sendable ([TrackItem]) async -> Void
    ) async throws(DBusError) {
        var parts: [Part] = []
        for text in texts {
            switch TrackInput.parse(text) {
            case .failure(let problem):
                throw DBusError.invalidArgs(problem.description)
            case .success(let input) where input.isRemotePlaylist:
                parts.append(.fetch(text))
            case .success:
                parts.append(.ready(try await Self.tracks(text, resolver)))
            }
        }
        setInputError(nil)
        let (generation, playlistLeft) = published.withLock { state -> (UInt64, Bool) in
            let active = state.activePlaylist?.replacement == state.replacements
            if replacing { state.replacements &+= 1 }
            return (state.replacements, replacing && active)
        }
        if playlistLeft, playlists != nil {
            // The queue the playlist made is gone: it is no longer the active one.
            connection.emitPropertiesChanged(
                path: Self.objectPath, interface: Self.playlistsInterface,
                changed: [("ActivePlaylist", activePlaylistValue())])
        }
        guard parts.contains(where: { if case .fetch = $0 { true } else { false } }) else {
            await apply(
                parts.flatMap { part -> [TrackItem] in
                    if case .ready(let items) = part { return items }
                    return []
                })
            return
        }
        let resolver = self.resolver
        Task { [weak self] in
            var items: [TrackItem] = []
            for part in parts {
                switch part {
                case .ready(let ready):
                    items += ready
                case .fetch(let text):
                    do throws(TrackSourceError) {
                        items += try await resolver.resolve(text)
                    } catch {
                        let name = URL(string: text)?.lastPathComponent ?? text
                        self?.setInputError("\(name): \(error.description)")
                        return
                    }
                }
            }
            guard let self else { return }
            guard self.published.withLock({ $0.replacements }) == generation else {
                self.log.info(
                    "dropping the playlist \(texts.count == 1 ? URL(string: texts[0])?.lastPathComponent ?? "" : ""): the queue was replaced since"
                )
                return
            }
            await apply(items)
        }
    }

    /// Shows `message` as `LastError` until the player reports an error of its own or another
    /// input arrives (nil clears it).
    func setInputError(_ message: String?) {
        let schedule = published.withLock { state -> Bool in
            guard state.inputError != message else { return false }
            state.inputError = message
            defer { state.flushScheduled = true }
            return !state.flushScheduled && state.signalled != nil
        }
        if let message { log.warning("\(message)") }
        if schedule { scheduleFlush() }
    }
}

extension TrackInput {
    /// Whether this is a playlist on a server (fetched only after the call is answered).
    public var isRemotePlaylist: Bool {
        if case .remote(let url) = self { return PlaylistParser.isPlaylist(url) }
        return false
    }
}
