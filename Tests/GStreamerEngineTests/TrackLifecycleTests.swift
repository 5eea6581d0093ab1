import EngineAPI
import FoundationEssentials
import Testing

@testable import GStreamerEngine

/// The machine's transitions, one table row each, without GStreamer.
@Suite("The tracks' lifecycle in the pipeline")
struct TrackLifecycleTests {
    static func track(_ number: UInt64) -> EngineTrack {
        EngineTrack(id: TrackID(number), url: URL(fileURLWithPath: "/music/\(number).flac"))
    }

    static func uri(_ ticket: LoadTicket) -> String { "appsrc://spool/\(ticket.track.rawValue)-\(ticket.generation)" }

    /// A lifecycle with `number` loaded and started (prerolling from 0).
    static func started(_ number: UInt64) -> (TrackLifecycle, LoadTicket) {
        var machine = TrackLifecycle()
        let ticket = machine.load(track(number)).ticket
        let changed20 = machine.start(
            ticket, track: track(number), uri: uri(ticket), phase: .loading(start: nil), seekable: true)
        #expect(changed20)
        return (machine, ticket)
    }

    /// `machine` with `number` prepared to follow, its source open.
    static func prepare(_ number: UInt64, in machine: inout TrackLifecycle, mayBeMedia: Bool = true)
        -> TrackLifecycle
        .Following
    {
        let following = try! #require(machine.prepareNext(track(number), uri: uri).opening)
        let changed29 = machine.nextOpened(following.ticket, seekable: true, mayBeMedia: mayBeMedia)
        #expect(changed29)
        return following
    }

    @Test func aLoadIsCurrentOnceItsSourceOpensAndIsReportedStartedOnce() {
        var machine = TrackLifecycle()
        let ticket = machine.load(Self.track(1)).ticket
        #expect(machine.current == nil, "opening: nothing is current yet")
        #expect(machine.isOpening(ticket))
        let uri = Self.uri(ticket)
        let changed39 = machine.start(
            ticket, track: Self.track(1), uri: uri, phase: .loading(start: nil), seekable: true)
        #expect(changed39)
        #expect(machine.isCurrent(ticket))
        #expect(machine.streamStarted(uri: uri, positionAtSwitch: nil, rate: 1) == .first(TrackID(1)))
        #expect(machine.streamStarted(uri: uri, positionAtSwitch: nil, rate: 1) == .none, "reported once per load")
    }

    @Test func anOlderLoadsOpenResultIsDropped() {
        var machine = TrackLifecycle()
        let first = machine.load(Self.track(1)).ticket
        let second = machine.load(Self.track(2)).ticket
        let changed49 = machine.start(first, track: Self.track(1), uri: Self.uri(first), phase: .ready, seekable: true)
        #expect(!changed49)
        let changed50 = machine.openFailed(first)
        #expect(!changed50, "an older load's failure is nobody's")
        let changed51 = machine.start(
            second, track: Self.track(2), uri: Self.uri(second), phase: .ready, seekable: true)
        #expect(changed51)
        #expect(machine.current?.track.id == TrackID(2))
    }

    @Test func twoLoadsOfOneTrackHaveTwoTickets() {
        var machine = TrackLifecycle()
        let first = machine.load(Self.track(1)).ticket
        let second = machine.load(Self.track(1)).ticket
        #expect(first != second)
        #expect(!machine.isOpening(first))
    }

    @Test func aStopDropsALoadStillOpening() {
        var machine = TrackLifecycle()
        let ticket = machine.load(Self.track(1)).ticket
        machine.cancelOpening()
        let changed67 = machine.start(
            ticket, track: Self.track(1), uri: Self.uri(ticket), phase: .ready, seekable: true)
        #expect(!changed67)
    }

    @Test func aLoadTearsDownTheLoadedTrackAndItsNext() {
        var (machine, ticket) = Self.started(1)
        let next = Self.prepare(2, in: &machine)
        let plan = machine.load(Self.track(3))
        #expect(plan.teardown == .init(uris: [Self.uri(ticket), next.uri], stopsPipeline: true))
        #expect(plan.promoted == nil)
        #expect(machine.current == nil && machine.next == nil)
    }

    @Test func aLoadOfThePreparedTrackPromotesItsOpenSource() {
        var (machine, ticket) = Self.started(1)
        let next = Self.prepare(2, in: &machine)
        let plan = machine.load(Self.track(2))
        #expect(plan.promoted == next.uri)
        #expect(plan.teardown.uris == [Self.uri(ticket)], "the promoted feeder is not let go of")
        #expect(plan.ticket != next.ticket, "a promotion is a new load")
    }

    @Test(arguments: [false, true])
    func onlyAnOpenPlayableNextIsPromoted(mayBeMedia: Bool) {
        var (machine, _) = Self.started(1)
        if mayBeMedia {
            _ = machine.prepareNext(Self.track(2), uri: Self.uri)  // still opening
        } else {
            _ = Self.prepare(2, in: &machine, mayBeMedia: false)
        }
        #expect(machine.load(Self.track(2)).promoted == nil)
    }

    @Test func theSameNextTrackChangesNothingAndAnotherReplacesIt() {
        var (machine, _) = Self.started(1)
        let two = Self.prepare(2, in: &machine)
        #expect(machine.prepareNext(Self.track(2), uri: Self.uri) == .init())
        let plan = machine.prepareNext(Self.track(3), uri: Self.uri)
        #expect(plan.dropped == two.uri)
        #expect(plan.opening?.track == Self.track(3))
        let changed106 = machine.nextOpened(two.ticket, seekable: true, mayBeMedia: true)
        #expect(!changed106, "the replaced one's source closes")
        #expect(machine.prepareNext(nil, uri: Self.uri).dropped == plan.opening?.uri)
        #expect(machine.next == nil)
    }

    @Test func aNextTrackThatFailedToOpenIsForgotten() {
        var (machine, _) = Self.started(1)
        let opening = try! #require(machine.prepareNext(Self.track(2), uri: Self.uri).opening)
        machine.nextFailed(opening.ticket)
        #expect(machine.next == nil)
        #expect(machine.aboutToFinish() == nil)
    }

    @Test func aboutToFinishHandsOverOnlyAnOpenPlayableNextOnce() {
        var (machine, _) = Self.started(1)
        #expect(machine.aboutToFinish() == nil, "nothing prepared")
        let opening = try! #require(machine.prepareNext(Self.track(2), uri: Self.uri).opening)
        #expect(machine.aboutToFinish() == nil, "still opening")
        let changed124 = machine.nextOpened(opening.ticket, seekable: false, mayBeMedia: false)
        #expect(changed124)
        #expect(machine.aboutToFinish() == nil, "not media: the current track ends normally")
        _ = machine.prepareNext(nil, uri: Self.uri)
        let next = Self.prepare(3, in: &machine)
        #expect(machine.aboutToFinish()?.uri == next.uri)
        #expect(machine.isHandedOver)
        #expect(machine.aboutToFinish() == nil, "handed over once")
        #expect(machine.prepareNext(Self.track(4), uri: Self.uri) == .init(), "playbin already holds it")
    }

    @Test func aLengthKnownBeforeTheTagsGoesOutWithThemAndATitleNeverWithoutIt() {
        var (machine, first) = Self.started(1)
        var tags = TrackTags()
        tags.title = "Tone"
        // A FLAC: its length is in the first header block, its tags in the next.
        #expect(machine.durationKnown(.seconds(30), for: first) == nil)
        #expect(
            machine.tagsRead(tags, from: .stream(Self.uri(first)))
                == .described(TrackID(1), tags, duration: .seconds(30)))
        #expect(machine.settled(first) == nil, "sent once")
        // An Ogg: its tags come first, and wait for the length.
        var (other, second) = Self.started(2)
        #expect(other.tagsRead(tags, from: .stream(Self.uri(second))) == nil)
        #expect(other.durationKnown(.seconds(12), for: second) == .described(TrackID(2), tags, duration: .seconds(12)))
    }

    @Test func aRebuildMakesPlaybinForgetTheHandedOverURI() {
        var (machine, _) = Self.started(1)
        _ = Self.prepare(2, in: &machine)
        _ = machine.aboutToFinish()
        machine.rebuilt()
        #expect(!machine.isHandedOver)
        #expect(machine.aboutToFinish() != nil, "handed over again near the end")
    }

    @Test func theHandedOverTrackTakesOverAndIsAnnouncedWhenHeard() {
        var (machine, first) = Self.started(1)
        #expect(machine.durationKnown(.seconds(30), for: first) == nil, "a length awaits the tags until it settles")
        #expect(machine.settled(first) == .described(TrackID(1), TrackTags(), duration: .seconds(30)))
        let next = Self.prepare(2, in: &machine)
        _ = machine.aboutToFinish()
        let start = machine.streamStarted(uri: next.uri, positionAtSwitch: .milliseconds(29_600), rate: 1)
        guard case .handedOver(let started, let previous, let audibleIn) = start else {
            Issue.record("no hand-over: \(start)")
            return
        }
        #expect(started.track == Self.track(2) && started.ticket == next.ticket)
        #expect(previous == Self.uri(first))
        #expect(audibleIn == .milliseconds(400))
        #expect(machine.current?.ticket == next.ticket && machine.next == nil)
        #expect(machine.unannounced?.previousEnd == .seconds(30), "the previous track's end is still heard")
        #expect(machine.heard(TrackID(1)) == [], "not the track that started")
        #expect(machine.heard(TrackID(2)) == [.seekable(TrackID(2), true), .trackStarted(TrackID(2))])
        #expect(machine.heard(TrackID(2)) == [], "once")
        #expect(machine.streamStarted(uri: next.uri, positionAtSwitch: nil, rate: 1) == .none)
    }

    @Test func aTrackShorterThanThePreviousTailIsAnnouncedBeforeItsEnd() {
        var (machine, _) = Self.started(1)
        let next = Self.prepare(2, in: &machine)
        _ = machine.aboutToFinish()
        _ = machine.streamStarted(uri: next.uri, positionAtSwitch: nil, rate: 1)
        #expect(
            machine.endOfStream() == [
                .seekable(TrackID(2), true), .trackStarted(TrackID(2)), .endOfTrack(TrackID(2)),
            ])
        #expect(machine.endOfStream() == [.endOfTrack(TrackID(2))])
    }

    /// A lifecycle where 2 was handed over after 1 and its stream started.
    static func handedOver() -> (TrackLifecycle, TrackLifecycle.Following) {
        var (machine, first) = started(1)
        _ = machine.durationKnown(.seconds(30), for: first)
        let next = prepare(2, in: &machine)
        _ = machine.aboutToFinish()
        _ = machine.streamStarted(uri: next.uri, positionAtSwitch: .milliseconds(29_600), rate: 1)
        return (machine, next)
    }

    @Test func aHandedOverTrackIsHeardOnceTheTailHasPlayedAndItsAudioFlows() {
        let started: [EngineEvent] = [.seekable(TrackID(2), true), .trackStarted(TrackID(2))]
        var (machine, _) = Self.handedOver()
        #expect(machine.audioFlowing() == [], "its audio came while the previous tail plays")
        #expect(machine.tailPlayed(TrackID(2), audioFlowing: true) == started)
        #expect(machine.audioFlowing() == [], "once")

        (machine, _) = Self.handedOver()
        #expect(machine.tailPlayed(TrackID(1), audioFlowing: true) == [], "not the track that started")
        #expect(machine.tailPlayed(TrackID(2), audioFlowing: false) == [], "the tail played, no audio of it yet")
        #expect(machine.unannounced?.previousEnd == .seconds(30), "the previous track's end is what is heard")
        #expect(machine.audioFlowing() == started)
        #expect(machine.tailPlayed(TrackID(2), audioFlowing: true) == [], "once")
    }

    @Test(arguments: [false, true])
    func aHandedOverTrackThatBreaksBeforeItIsHeardEndsThePreviousOneInstead(tailPlayedFirst: Bool) {
        var (machine, next) = Self.handedOver()
        if tailPlayedFirst { #expect(machine.tailPlayed(TrackID(2), audioFlowing: false) == []) }
        #expect(machine.route(errorFrom: .stream(next.uri)) == .startBroke(next.ticket))
        let atTheError = machine.startBroke(next.ticket)
        let atTheTail = tailPlayedFirst ? [] : machine.tailPlayed(TrackID(2), audioFlowing: false)
        #expect(atTheError + atTheTail == [.endOfTrack(TrackID(1))], "the previous track ends when its tail has played")
        #expect(machine.audioFlowing() == [], "never heard")
        #expect(machine.endOfStream() == [], "the broken stream's own end is no track's")
        #expect(
            machine.route(errorFrom: .stream(next.uri)) == .next(uri: next.uri, track: nil),
            "its later errors are a dropped stream's")
    }

    @Test func aBrokenStartsOwnEndEndsThePreviousTrackOnce() {
        var (machine, next) = Self.handedOver()
        #expect(machine.startBroke(next.ticket) == [], "the previous tail still plays")
        #expect(machine.endOfStream() == [.endOfTrack(TrackID(1))])
        #expect(machine.tailPlayed(TrackID(2), audioFlowing: false) == [], "reported once")
    }

    @Test func anErrorAfterTheHandedOverTrackIsHeardIsItsOwn() {
        var (machine, next) = Self.handedOver()
        _ = machine.tailPlayed(TrackID(2), audioFlowing: true)
        #expect(machine.route(errorFrom: .stream(next.uri)) == .current(next.ticket))
        #expect(machine.startBroke(next.ticket) == [], "not a start that broke")
    }

    @Test func anotherStreamsStartIsNoTracksStart() {
        var (machine, ticket) = Self.started(1)
        #expect(machine.streamStarted(uri: "appsrc://spool/9-9", positionAtSwitch: nil, rate: 1) == .none)
        machine.withPhase { $0.rebuild(at: .seconds(3), marker: 1, rateIsOne: false) }
        #expect(machine.streamStarted(uri: Self.uri(ticket), positionAtSwitch: nil, rate: 1) == .none, "a rebuild")
    }

    @Test func errorsGoToTheStreamTheyCameFrom() {
        var (machine, ticket) = Self.started(1)
        let next = Self.prepare(2, in: &machine)
        #expect(machine.route(errorFrom: .stream(next.uri)) == .next(uri: next.uri, track: TrackID(2)))
        #expect(machine.route(errorFrom: .stream(Self.uri(ticket))) == .current(ticket))
        #expect(machine.route(errorFrom: .pipeline) == .current(ticket), "an element of no stream: the loaded track")
        #expect(machine.route(errorFrom: .detached) == .none, "a stream torn down, posting late: no track's")
        #expect(machine.nextBroke(uri: next.uri)?.track == Self.track(1))
        _ = machine.prepareNext(nil, uri: Self.uri)
        #expect(
            machine.route(errorFrom: .stream(next.uri)) == .next(uri: next.uri, track: nil), "a dropped stream's own")
        #expect(
            machine.route(errorFrom: .stream("appsrc://spool/9-9.mp4")) == .none,
            "a stream of no track now: not the loaded one's")
        _ = machine.teardown()
        #expect(machine.route(errorFrom: .pipeline) == .none)
    }

    @Test func aFailureReportsAPendingStartFirstAndStaleOnesNothing() {
        var (machine, first) = Self.started(1)
        let next = Self.prepare(2, in: &machine)
        _ = machine.aboutToFinish()
        _ = machine.streamStarted(uri: next.uri, positionAtSwitch: nil, rate: 1)
        let error = EngineError("broken")
        #expect(machine.failed(first, error) == [], "the track before the hand-over")
        #expect(
            machine.failed(next.ticket, error) == [
                .seekable(TrackID(2), true), .trackStarted(TrackID(2)), .failed(TrackID(2), error),
            ])
    }

    static func titled(_ title: String) -> TrackTags {
        var tags = TrackTags()
        tags.title = title
        return tags
    }

    @Test func tagsWaitForTheLengthAndThenGoTogetherWithIt() {
        var (machine, ticket) = Self.started(1)
        let early = machine.tagsRead(Self.titled("One"), from: .stream(Self.uri(ticket)))
        #expect(early == nil, "no title without its length")
        var album = TrackTags()
        album.album = "Album"
        let more = machine.tagsRead(album, from: .pipeline)
        #expect(more == nil)
        var both = Self.titled("One")
        both.album = "Album"
        let described = machine.durationKnown(.seconds(5), for: ticket)
        #expect(described == .described(TrackID(1), both, duration: .seconds(5)), "every tag so far, with the length")
        let same = machine.durationKnown(.seconds(5), for: ticket)
        #expect(same == nil, "the same length is no news")
        let changed = machine.durationKnown(.seconds(6), for: ticket)
        #expect(changed == .described(TrackID(1), both, duration: .seconds(6)))
        let stale = machine.durationKnown(.seconds(7), for: LoadTicket(track: TrackID(1), generation: 99))
        #expect(stale == nil)
        let later = machine.tagsRead(Self.titled("Uno"), from: .pipeline)
        both.title = "Uno"
        #expect(later == .described(TrackID(1), both, duration: .seconds(6)), "once sent, changes go at once")
    }

    @Test func aTrackWithoutALengthSendsItsTagsOnceSettled() {
        var (machine, ticket) = Self.started(1)
        let settledEmpty = machine.settled(ticket)
        #expect(settledEmpty == nil, "nothing to say")
        let held = machine.tagsRead(Self.titled("Live"), from: .pipeline)
        #expect(held == nil)
        let settled = machine.settled(ticket)
        #expect(settled == .described(TrackID(1), Self.titled("Live"), duration: nil))
        let again = machine.settled(ticket)
        #expect(again == nil, "sent once")
        let song = machine.tagsRead(Self.titled("Next song"), from: .pipeline)
        #expect(song == .described(TrackID(1), Self.titled("Next song"), duration: nil), "a new title goes at once")
    }

    @Test func tagsBelongToTheStreamTheyCameFrom() {
        var (machine, ticket) = Self.started(1)
        let next = Self.prepare(2, in: &machine)
        _ = machine.durationKnown(.seconds(30), for: ticket)
        let own = machine.tagsRead(Self.titled("One"), from: .pipeline)
        #expect(own == .described(TrackID(1), Self.titled("One"), duration: .seconds(30)))
        let nexts = machine.tagsRead(Self.titled("Two"), from: .stream(next.uri))
        #expect(nexts == nil, "the next track's are held for it")
        _ = machine.aboutToFinish()
        let sinks = machine.tagsRead(Self.titled("Two"), from: .pipeline)
        #expect(sinks == nil, "the sink's tags after the hand-over are the next's, held too")
        let stale = machine.tagsRead(Self.titled("Gone"), from: .stream("appsrc://spool/7-7"))
        #expect(stale == nil, "a torn-down stream's go nowhere")
        let start = machine.streamStarted(uri: next.uri, positionAtSwitch: nil, rate: 1)
        guard case .handedOver(let started, _, _) = start else {
            Issue.record("no hand-over: \(start)")
            return
        }
        let described = machine.durationKnown(.seconds(20), for: started.ticket)
        #expect(described == .described(TrackID(2), Self.titled("Two"), duration: .seconds(20)))
        #expect(machine.current?.description.tags.title == "Two")
        _ = ticket
    }

    @Test func transportEventsComeFromTheTracksOwnStateChanges() {
        var (machine, ticket) = Self.started(1)
        #expect(machine.pipelineChanged(to: .paused, pending: .ready) == nil, "the previous track's teardown")
        #expect(machine.current?.reachedPaused == false, "which is not this track's start")
        #expect(machine.pipelineChanged(to: .paused, pending: .playing) == nil, "on its way to PLAYING")
        #expect(machine.current?.reachedPaused == true)
        #expect(machine.pipelineChanged(to: .playing, pending: nil) == .stateChanged(.playing))
        #expect(machine.pipelineChanged(to: .paused, pending: nil) == .stateChanged(.paused))
        machine.withPhase { $0.rebuild(at: .seconds(1), marker: 1, rateIsOne: false) }
        #expect(machine.pipelineChanged(to: .paused, pending: nil) == nil, "a rebuild's")
        _ = machine.load(Self.track(2))
        #expect(machine.pipelineChanged(to: .playing, pending: nil) == nil, "nothing loaded")
        #expect(!machine.isCurrent(ticket))
    }
}
