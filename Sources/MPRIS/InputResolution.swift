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
    /// Entries a list may not name (see `ListTrust`) are logged one by one and summed up in
    /// `LastError` as a warning, while the list's other entries play.
    func queueInputs(
        _ texts: [String], replacing: Bool = false, _ apply: @escaping @Sendable ([TrackItem]) async -> Void
    ) async throws(DBusError) {
        var parts: [Part] = []
        var warnings: [String] = []
        for text in texts {
            switch TrackInput.parse(text) {
            case .failure(let problem):
                throw DBusError.invalidArgs(problem.description)
            case .success(let input) where input.isRemotePlaylist:
                parts.append(.fetch(text))
            case .success:
                let entries = try await Self.tracks(text, resolver)
                if let warning = report(entries, of: text) { warnings.append(warning) }
                parts.append(.ready(entries.items))
            }
        }
        setInputError(warnings.isEmpty ? nil : warnings.joined(separator: "; "))
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
        let localWarnings = warnings
        Task { [weak self] in
            var warnings = localWarnings
            var items: [TrackItem] = []
            for part in parts {
                switch part {
                case .ready(let ready):
                    items += ready
                case .fetch(let text):
                    do throws(TrackSourceError) {
                        let entries = try await resolver.entries(text)
                        if let warning = self?.report(entries, of: text) { warnings.append(warning) }
                        items += entries.items
                    } catch {
                        self?.setInputError("\(Self.listName(text)): \(error.description)")
                        return
                    }
                }
            }
            guard let self else { return }
            guard self.published.withLock({ $0.replacements }) == generation else {
                self.log.info(
                    "dropping the playlist \(texts.count == 1 ? Self.listName(texts[0]) : ""): the queue was replaced since"
                )
                return
            }
            if !warnings.isEmpty { self.setInputError(warnings.joined(separator: "; ")) }
            await apply(items)
        }
    }

    /// Logs each entry of `text`'s list that is left out; the warning for `LastError`, if any.
    private func report(_ entries: PlaylistEntries, of text: String) -> String? {
        let name = Self.listName(text)
        for dropped in entries.dropped { log.warning("\(name): dropped \(dropped)") }
        return entries.warning(name: name)
    }

    /// The file name of the list `text` names, for messages.
    private static func listName(_ text: String) -> String {
        let name = (URL(string: text) ?? URL(fileURLWithPath: text)).lastPathComponent
        return name.isEmpty ? text : name
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
