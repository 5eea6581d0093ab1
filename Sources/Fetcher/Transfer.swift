import Basics
internal import CCurlShim
import FoundationEssentials

/// Signature of the re-resolve hook: the request's original URL in, a URL to try next out
/// (nil: give up).
public typealias URLResolver = @Sendable (URL) -> URL?

/// What the fetcher thread needs from its owner while a transfer runs.
struct TransferEnvironment {
    let multi: MultiHandle
    let share: ShareHandle
    let configuration: FetcherConfiguration
    let log: Logger
    /// Runs the re-resolve hook off the fetcher thread and posts its answer back.
    let resolve: (TransferID, URL, URLResolver?) -> Void
}

/// One request on the wire: its easy handle and what its response has said so far.
final class Attempt {
    let easy: EasyHandle
    let plan: AttemptPlan
    /// The verdict on the response head, once read.
    var verdict: HeadVerdict?
    /// The resource offset of this response's next body byte.
    var offset: Int64 = 0
    /// Bytes this attempt delivered to the caller.
    var delivered: Int64 = 0
    /// Bytes of an error response swallowed so the connection can be reused.
    var discarded = 0
    /// Where this response's body ends in the resource, as its head declared, when known.
    var declaredEnd: Int64?
    /// When the request left (wall clock), for the response's age.
    let requestedAt = Date()
    /// The write callback stopped the body at the end asked.
    var reachedEnd = false
    /// The write callback stopped a body running past its declared end (before the end asked).
    var overran = false
    /// Takes the ICY metadata blocks out of this connection's body, when it has them
    /// (`icy-metaint`); each connection counts its own intervals from its first body byte.
    var stripper: ICYStripper?

    init(easy: EasyHandle, plan: AttemptPlan) {
        self.easy = easy
        self.plan = plan
    }
}

/// A transfer and its retries; lives on the fetcher thread only. Owns at most one attempt
/// (one easy handle in the multi handle) at a time.
final class Transfer {
    enum Phase {
        case running(Attempt)
        case waiting(until: Double)
        case resolving(status: Int)
        case done
    }

    let id: TransferID
    let request: RangeRequest
    private(set) var priority: FetchPriority
    private let sink: @Sendable (TransferID, TransferEvent) -> Void
    private let resolver: URLResolver?
    private let env: TransferEnvironment

    private var url: URL
    private(set) var phase: Phase = .done
    private(set) var paused = false
    /// Held by its caller (see ``Fetcher/hold(_:_:)``): paused whatever its priority.
    var held = false
    /// The first byte not yet delivered.
    private var next: Int64
    /// The last bytes asked for, until a response says where they start (``RangeRequest/suffix``).
    private var suffix: Int64?
    /// One past the last byte to deliver, when known (the request's end within the total).
    private var end: Int64?
    private var total: Int64?
    /// The condition of the next attempt: the caller's at first, then `If-Range` with the
    /// version this transfer's first response named (also when only a weak ETag names it: no
    /// header is sent then, but the policy compares the answer's validators with it).
    private var condition: RequestCondition?
    private var reported = false
    private var failures = 0
    private var failingSince: Double?
    private var reresolves = 0
    private var lastProgress = 0.0
    /// The rate of the attempt on the wire, judged window by window.
    private var speed: SpeedCheck
    /// Too-slow windows in a row; a window fast enough clears it, a trickled byte does not.
    private var slowWindows = 0
    /// The resource is a live stream (``ResponseHead/isLive``): it has no byte offsets of its
    /// own, so a new connection's body continues at the next byte; a clean end of a body is a
    /// dropped connection, not the end of the stream.
    private(set) var live = false

    /// No byte for this long drops the connection (shorter for a live stream).
    private var stallTimeout: Double {
        live ? env.configuration.liveStallTimeout : env.configuration.stallTimeout
    }

    init(
        id: TransferID, request: RangeRequest, resolver: URLResolver?, environment: TransferEnvironment,
        events: @escaping @Sendable (TransferID, TransferEvent) -> Void
    ) {
        self.id = id
        self.request = request
        self.priority = request.priority
        self.resolver = resolver
        self.env = environment
        self.sink = events
        url = request.url
        next = request.start
        end = request.end
        suffix = request.suffix
        total = request.knownLength
        if let total { end = min(end ?? total, total) }
        condition = request.condition
        live = request.continuesLiveStream
        speed = SpeedCheck(
            minimumRate: environment.configuration.minimumRate, window: environment.configuration.slowWindow, now: 0)
    }

    var isFinished: Bool { if case .done = phase { true } else { false } }

    /// Whether an attempt is on the wire (paused or not).
    var isReceiving: Bool { if case .running = phase { true } else { false } }

    /// Whether `easy` is the handle of the attempt on the wire.
    func owns(_ easy: UnsafeMutableRawPointer) -> Bool {
        if case .running(let attempt) = phase { attempt.easy.raw == easy } else { false }
    }

    /// When this transfer next needs the fetcher thread: a retry due, or a stall deadline.
    var deadline: Double? {
        switch phase {
        case .running: paused ? nil : min(lastProgress + stallTimeout, speed.deadline ?? .infinity)
        case .waiting(let until): until
        case .resolving, .done: nil
        }
    }

    // MARK: driving

    /// Starts the first attempt.
    func begin(now: Double) { startAttempt(now: now) }

    /// Handles timers: a due retry starts; a transfer silent past the stall timeout reconnects.
    func tick(now: Double) {
        switch phase {
        case .waiting(let until) where until <= now:
            startAttempt(now: now)
        case .running(let attempt) where !paused && now - lastProgress >= stallTimeout:
            emit(.status(.stalled(seconds: now - lastProgress)))
            stopAttempt(attempt)
            interrupted(
                attempt, reason: .transport(code: 28, message: "no data for \(Int(now - lastProgress)) s"), now: now)
        case .running(let attempt) where !paused:
            switch speed.judge(now: now) {
            case .pending: break
            case .fastEnough: slowWindows = 0
            case .tooSlow(let rate): tooSlow(attempt, rate: rate, now: now)
            }
        default:
            break
        }
    }

    /// A window ended below the minimum rate: a new connection (another server behind the
    /// name, a less loaded route) while the budget lasts, else the transfer fails. Bytes
    /// trickling in do not refill the budget, or a trickle would reconnect forever.
    private func tooSlow(_ attempt: Attempt, rate: Double, now: Double) {
        slowWindows += 1
        emit(.status(.tooSlow(bytesPerSecond: rate)))
        stopAttempt(attempt)
        let configuration = env.configuration
        guard slowWindows < configuration.maxSlowAttempts else {
            env.log.warning(
                "transfer \(id): \(Int(rate.rounded())) bytes/s on \(slowWindows) connections in a row; giving up")
            return fail(.tooSlow(bytesPerSecond: rate, minimum: configuration.minimumRate))
        }
        env.log.info(
            "transfer \(id): \(Int(rate.rounded())) bytes/s, below \(Int(configuration.minimumRate)); reconnecting at \(next)"
        )
        emit(.status(.reconnecting(from: next)))
        startAttempt(now: now)
    }

    /// Pauses or resumes the attempt on the wire; an attempt whose response head was not read
    /// and judged yet is not paused (the fetcher asks again on each step). libcurl 7.88 holds back
    /// the head's lines that arrive while a transfer is paused and, on resuming, can hand body
    /// bytes to the write callback before them: the head then seemed to lack Content-Range.
    func setPaused(_ paused: Bool, now: Double) {
        guard case .running(let attempt) = phase, paused != self.paused else { return }
        if paused, attempt.verdict == nil { return }
        self.paused = paused
        attempt.easy.setPaused(paused)
        env.log.debug("transfer \(id) \(paused ? "paused" : "resumed") (\(held ? "held" : "\(priority)"))")
        if !paused {
            lastProgress = now
            speed.restart(now: now)
        }
        emit(.status(paused ? .paused : .resumed))
    }

    /// Changes the priority; the fetcher re-evaluates pauses.
    func setPriority(_ priority: FetchPriority) { self.priority = priority }

    /// Stops the attempt on the wire; no event follows.
    func cancel() {
        if case .running(let attempt) = phase { stopAttempt(attempt) }
        phase = .done
    }

    /// Ends the transfer with `error` (used when superseded).
    func abort(_ error: FetchError) {
        cancel()
        emit(.failed(error))
    }

    /// The re-resolve hook answered.
    func resolved(_ newURL: URL?, now: Double) {
        guard case .resolving(let status) = phase else { return }
        guard let newURL else { return fail(.unresolvable(status: status)) }
        url = newURL
        emit(.status(.reconnecting(from: next)))
        startAttempt(now: now)
    }

    // MARK: attempts

    private func startAttempt(now: Double) {
        let plan = AttemptPlan(start: next, end: end, knownLength: total, condition: condition, suffix: suffix)
        var headers: [String] = []
        switch condition {
        case .ifRange(let validator):
            if let value = validator.ifRangeValue { headers.append("If-Range: \(value)") }
        case .ifNoneMatch(let validator):
            if let etag = validator.etag { headers.append("If-None-Match: \(etag)") }
            if let date = validator.lastModified { headers.append("If-Modified-Since: \(date)") }
        case nil:
            break
        }
        if request.asksStreamMetadata, live || (next == 0 && suffix == nil) { headers.append("Icy-MetaData: 1") }
        // At or past a known end the open range draws the 416 that confirms the end. A live
        // stream is asked for as it is: it has no ranges, and a station may refuse one.
        let range =
            live
            ? nil
            : suffix.map { "-\($0)" } ?? end.flatMap { $0 > next ? "\(next)-\($0 - 1)" : nil } ?? "\(next)-"
        let easy = EasyHandle(
            url: url, range: range, headers: headers, configuration: env.configuration, share: env.share,
            context: Unmanaged.passUnretained(self).toOpaque(), onBody: Transfer.onBody)
        let attempt = Attempt(easy: easy, plan: plan)
        phase = .running(attempt)
        paused = false
        lastProgress = now
        speed.restart(now: now)
        env.multi.add(easy)
        env.log.debug(
            "transfer \(id) GET \(loggable(url)) bytes=\(range ?? "(live)") \(headers.joined(separator: "; "))")
    }

    private func stopAttempt(_ attempt: Attempt) {
        env.multi.remove(attempt.easy)
        phase = .done
        paused = false
    }

    /// libcurl's write callback: the first call judges the response head, every call forwards bytes.
    static let onBody: spool_curl_data_cb = { data, size, count, context in
        guard let context, let data else { return 0 }
        let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
        let length = size * count
        return transfer.receive(UnsafeRawBufferPointer(start: data, count: length)) ? length : 0
    }

    /// Takes body bytes of the attempt on the wire; false stops the response.
    private func receive(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard case .running(let attempt) = phase else { return false }
        lastProgress = monotonicSeconds()
        speed.received(bytes.count)
        if attempt.verdict == nil { judgeHead(of: attempt) }
        switch attempt.verdict {
        case .accept?, .changed?:
            return deliver(bytes, of: attempt)
        default:
            // An error page: swallowed (so the connection can be reused) unless it is large.
            attempt.discarded += bytes.count
            return attempt.discarded <= 65_536
        }
    }

    /// Delivers the body's bytes, with its ICY metadata blocks (if any) taken out and
    /// reported where they stood in the audio; false once the end is reached.
    private func deliver(_ bytes: UnsafeRawBufferPointer, of attempt: Attempt) -> Bool {
        guard var stripper = attempt.stripper else { return deliverAudio(bytes, of: attempt) }
        attempt.stripper = nil  // held here while it feeds: no copy of its buffer
        var goesOn = true
        stripper.feed(bytes) { piece in
            guard goesOn else { return }
            switch piece {
            case .audio(let audio):
                goesOn = deliverAudio(audio, of: attempt)
            case .metadata(let metadata):
                emit(.streamMetadata(metadata, at: max(attempt.offset, next)))
            }
        }
        attempt.stripper = stripper
        return goesOn
    }

    /// Delivers the part of `bytes` (at `attempt.offset`) that is at or after the next byte
    /// and before the end; false once the end is reached.
    private func deliverAudio(_ bytes: UnsafeRawBufferPointer, of attempt: Attempt) -> Bool {
        let chunkStart = attempt.offset
        attempt.offset += Int64(bytes.count)
        let limit = min(end ?? .max, attempt.declaredEnd ?? .max)
        let from = max(chunkStart, next)
        let to = min(attempt.offset, limit)
        if from < to {
            let slice = UnsafeRawBufferPointer(rebasing: bytes[Int(from - chunkStart)..<Int(to - chunkStart)])
            emit(.data(Data(slice), offset: from))
            next = to
            attempt.delivered += to - from
            failures = 0
            failingSince = nil
            reresolves = 0
        }
        // Past the end (a server ignoring Range, or sending more than declared): stop here.
        // Exactly at the end the response finishes by itself and its connection is kept.
        if attempt.offset > limit {
            if limit == end { attempt.reachedEnd = true } else { attempt.overran = true }
            return false
        }
        return true
    }

    /// Reads and judges the head; reports the first head (or a change) to the caller.
    private func judgeHead(of attempt: Attempt) {
        let fields = attempt.easy.head
        var verdict = ResponsePolicy.judge(fields, plan: attempt.plan)
        let icy = ICYHeaders(header: fields.header)
        let contentLength = fields.header("Content-Length").flatMap { Int64($0) }
        let isLive =
            fields.status == 200
            && (live || icy.metaInterval != nil
                || LiveStreamDetection.isLive(
                    status: fields.status, totalLength: contentLength, contentType: fields.header("Content-Type"),
                    hasValidator: fields.header("ETag") != nil || fields.header("Last-Modified") != nil,
                    acceptsRanges: fields.header("Accept-Ranges")?.lowercased().contains("bytes") == true, icy: icy))
        if isLive, case .accept = verdict {
            // A live stream's body continues where the last one stopped: it has no offsets of its
            // own to skip to, no length and no end. Metadata blocks make a body longer than its
            // audio, so even a declared length is not the stream's.
            live = true
            total = nil
            end = nil
            condition = nil
            verdict = .accept(bodyStart: next, total: nil, declaredEnd: nil)
            if let interval = icy.metaInterval { attempt.stripper = ICYStripper(metaInterval: interval) }
        }
        attempt.verdict = verdict
        var head = ResponseHead(
            status: fields.status, bodyStart: next, totalLength: nil,
            contentLength: fields.header("Content-Length").flatMap { Int64($0) },
            etag: fields.header("ETag"), lastModified: fields.header("Last-Modified"),
            contentType: fields.header("Content-Type"),
            caching: CachingHeaders(
                cacheControl: fields.header("Cache-Control"), expires: fields.header("Expires"),
                date: fields.header("Date"), age: fields.header("Age"), vary: fields.header("Vary"),
                lastModified: fields.header("Last-Modified")),
            requestedAt: attempt.requestedAt)
        head.icy = icy
        head.isLive = live
        switch verdict {
        case .accept(let bodyStart, let total, let declaredEnd):
            attempt.offset = bodyStart
            attempt.declaredEnd = declaredEnd
            if suffix != nil {
                // The last bytes start where the origin says; a whole body (200) is not read.
                suffix = nil
                next = fields.status == 206 ? bodyStart : 0
                end = fields.status == 206 ? nil : 0
                head.bodyStart = next
            }
            learn(total: total, version: head.validator)
            if live { condition = nil }  // every connection of a live stream is a new body
            keepEndOnlyIfRanged(status: fields.status, total: total)
            head.totalLength = self.total
            if !reported { emit(.response(head)) }
        case .changed(let total, let declaredEnd):
            attempt.offset = 0
            attempt.declaredEnd = declaredEnd
            next = 0
            self.total = nil
            end = request.end
            learn(total: total, version: head.validator, replacing: true)
            keepEndOnlyIfRanged(status: fields.status, total: total)
            head.bodyStart = 0
            head.totalLength = self.total
            env.log.info("transfer \(id): \(loggable(url)) changed (now \(head.validator?.description ?? "-"))")
            emit(.changed(head))
        case .notModified:
            emit(.notModified(head))
        case .endOfResource(let total):
            // Refused at the byte where the last body ended: the origin overstated the length.
            let short = total.flatMap { total in self.total.map { total < $0 } } ?? false
            learn(total: total, version: head.validator)
            head.totalLength = self.total
            if !reported { emit(.response(head)) }
            if short, let total { emit(.status(.endedShort(length: total))) }
        case .retry, .reresolve, .fail:
            break
        }
    }

    /// Reads a body that is not a range of a known total to its end when the request asks so
    /// (``RangeRequest/wholeBodyUnlessRanged``).
    private func keepEndOnlyIfRanged(status: Int, total: Int64?) {
        if request.wholeBodyUnlessRanged, status != 206 || total == nil { end = self.total }
    }

    /// Records the total and the version for later attempts.
    private func learn(total: Int64?, version: ResourceVersion?, replacing: Bool = false) {
        if let total {
            self.total = total
            end = min(end ?? total, total)
        }
        var keepsCallersVersion = false
        if case .ifRange = condition { keepsCallersVersion = !replacing }
        if !keepsCallersVersion {
            condition = version.map { .ifRange($0) }
        }
    }

    // MARK: outcomes

    /// libcurl finished the attempt with `code`.
    func complete(code: Int, now: Double) {
        guard case .running(let attempt) = phase else { return }
        stopAttempt(attempt)
        if attempt.reachedEnd { return finish() }
        // A body that ran past its declared end was cut there: continue like after a short body.
        let code = attempt.overran ? CurlCode.ok : code
        // A body-less response (304, 416, an empty body) or an error page cut short.
        if attempt.verdict == nil, code == CurlCode.ok || attempt.easy.status >= 400 {
            judgeHead(of: attempt)
        }
        let failure = ResponsePolicy.transportFailure(
            code: code, message: attempt.easy.errorMessage(code: code), headRead: attempt.verdict != nil,
            maxRedirects: env.configuration.maxRedirects)
        let transportError = failure.error
        switch attempt.verdict {
        case nil:
            if failure.retryable {
                interrupted(attempt, reason: transportError, now: now)
            } else {
                fail(transportError)
            }
        case .accept? where live:
            // A station closing the connection, a cut or a stall: the stream goes on elsewhere.
            let reason =
                code == CurlCode.ok
                ? FetchError.transport(code: 18, message: "the live stream's connection closed") : transportError
            interrupted(attempt, reason: reason, now: now)
        case .accept?, .changed?:
            if let end, next >= end { return finish() }
            if code == CurlCode.ok, end == nil {
                total = next  // no length was declared: a clean end is the end of the resource
                return finish()
            }
            if let declared = end,
                ResponsePolicy.shortBodyEndsResource(
                    status: attempt.easy.status, acceptRanges: attempt.easy.header("Accept-Ranges"), code: code,
                    bodyEnd: attempt.offset, next: next)
            {
                env.log.info(
                    "transfer \(id): body ended at byte \(next) of the \(declared) declared, and the origin offers no ranges: that is its end"
                )
                total = next
                self.end = next
                emit(.status(.endedShort(length: next)))
                return finish()
            }
            if code != CurlCode.ok, !CurlCode.retryable.contains(code) { return fail(transportError) }
            let reason =
                code == CurlCode.ok
                ? FetchError.transport(
                    code: 18, message: "body ended at byte \(next) of \(end.map(String.init) ?? "?")")
                : transportError
            interrupted(attempt, reason: reason, now: now)
        case .notModified?, .endOfResource?:
            finish()
        case .retry(let error, let retryAfter)?:
            retryOrFail(error, retryAfter: retryAfter, now: now)
        case .reresolve(let status)?:
            reresolve(status: status, now: now)
        case .fail(let error)?:
            fail(error)
        }
    }

    /// An attempt ended early: reconnect at once if it made progress, else back off.
    private func interrupted(_ attempt: Attempt, reason: FetchError, now: Double) {
        if attempt.delivered > 0 {
            env.log.info("transfer \(id): \(reason); continuing at \(next)")
            emit(.status(.reconnecting(from: next)))
            startAttempt(now: now)
        } else {
            retryOrFail(reason, retryAfter: nil, now: now)
        }
    }

    private func retryOrFail(_ reason: FetchError, retryAfter: Double?, now: Double) {
        failures += 1
        let since = failingSince ?? now
        failingSince = since
        let configuration = env.configuration
        let budget = live ? configuration.liveRetryDuration : configuration.maxRetryDuration
        guard failures < configuration.maxAttempts || live, now - since < budget else {
            env.log.warning("transfer \(id): giving up after \(failures) attempts: \(reason)")
            return fail(reason)
        }
        let delay = ResponsePolicy.backoff(
            attempt: failures, retryAfter: retryAfter, configuration: configuration, jitter: .random(in: 0...1))
        env.log.info("transfer \(id): \(reason); retry \(failures) in \(HumanTime.seconds(delay))")
        emit(.status(.retrying(in: delay, attempt: failures, reason: reason)))
        phase = .waiting(until: now + delay)
    }

    private func reresolve(status: Int, now: Double) {
        reresolves += 1
        guard reresolves <= env.configuration.maxReresolves else {
            return fail(.httpStatus(status))
        }
        emit(.status(.reresolving(status: status)))
        phase = .resolving(status: status)
        env.resolve(id, request.url, resolver)
    }

    private func finish() {
        phase = .done
        emit(.finished)
    }

    private func fail(_ error: FetchError) {
        phase = .done
        emit(.failed(error))
    }

    private func emit(_ event: TransferEvent) {
        switch event {
        case .response, .changed, .notModified: reported = true
        default: break
        }
        sink(id, event)
    }
}
