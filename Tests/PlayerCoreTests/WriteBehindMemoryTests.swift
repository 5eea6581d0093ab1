import Dispatch
import EngineAPI
import Foundation
import PlayerCore
import Synchronization
import TestDoubles
import Testing

/// A store whose writes wait until the test lets them through, like a disk whose sync hangs.
final class HeldStore: PlaybackMemory {
    let inner = TransientMemory()
    let gate = DispatchSemaphore(value: 0)
    let held = Atomic<Bool>(true)
    let sessionWrites = Atomic<Int>(0)
    let writeStarted = DispatchSemaphore(value: 0)

    func position(forKey key: String) -> SavedPosition? { inner.position(forKey: key) }
    func save(_ position: SavedPosition) {
        wait()
        inner.save(position)
    }
    func forgetPosition(forKey key: String) {
        wait()
        inner.forgetPosition(forKey: key)
    }
    func session() -> SavedSession? { inner.session() }
    func save(_ session: SavedSession) {
        wait()
        sessionWrites.add(1, ordering: .relaxed)
        inner.save(session)
    }
    private func wait() {
        writeStarted.signal()
        if held.load(ordering: .relaxed) { gate.wait() }
    }
    /// Lets every write through, now and later.
    func open() {
        held.store(false, ordering: .relaxed)
        for _ in 0..<1000 { gate.signal() }
    }
}

@Suite("Writes behind the player")
struct WriteBehindMemoryTests {
    static func session(volume: Double) -> SavedSession {
        SavedSession(
            entries: [.init(url: URL(fileURLWithPath: "/a.mp3"), title: nil)], currentIndex: 0, position: .zero,
            loop: .none, shuffle: false, rate: 1, volume: volume)
    }

    @Test func readsSeeWritesNotStoredYetAndABurstOfSessionsIsWrittenOnce() {
        let store = HeldStore()
        let memory = WriteBehindMemory(store)
        memory.save(Self.session(volume: 0.1))
        store.writeStarted.wait()  // the first write holds the queue
        for step in 2...10 { memory.save(Self.session(volume: Double(step) / 10)) }
        let position = SavedPosition(key: "k", position: .seconds(42), duration: nil, rate: 1, finished: false)
        memory.save(position)
        #expect(memory.session()?.volume == 1.0, "the newest session asked for")
        #expect(memory.position(forKey: "k") == position)
        memory.forgetPosition(forKey: "k")
        #expect(memory.position(forKey: "k") == nil, "forgotten, though the store still has nothing")
        store.open()
        memory.flush()
        #expect(store.inner.session()?.volume == 1.0)
        #expect(store.sessionWrites.load(ordering: .relaxed) == 2, "the held one, then only the newest")
        #expect(store.inner.position(forKey: "k") == nil)
    }

    @Test func thePlayerAnswersWhileTheDiskHoldsAWrite() async throws {
        let store = HeldStore()
        let memory = WriteBehindMemory(store)
        let engine = FakeEngine(reacting: true)
        let player = Player(engine: engine, memory: memory, retryDelay: .zero)
        // Every call below saves the session, the first write is held by the disk, and none
        // may wait for it.
        let answered = Task {
            await player.open(URL(fileURLWithPath: "/music/a.flac"))
            await player.setVolume(0.3)
            await player.setVolume(0.4)
            await player.pause()
            return await player.state.volume
        }
        // The answer, or nil after 10 s: a player stuck on the disk fails the test, not the run.
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Double?, Never>) in
            let once = Mutex<CheckedContinuation<Double?, Never>?>(continuation)
            let resume: @Sendable (Double?) -> Void = { value in once.withLock { $0.take() }?.resume(returning: value) }
            Task { resume(await answered.value) }
            DispatchQueue.global().asyncAfter(deadline: .now() + 10) { resume(nil) }
        }
        store.open()
        #expect(outcome == 0.4, "the player waited for the held write")
        _ = await answered.value
        await player.shutdown()
        #expect(store.inner.session()?.volume == 0.4, "stored by the time shutdown returns")
    }

    @Test func aQueueEditReturnsOnceTheEditedSessionIsStored() async throws {
        let store = HeldStore()
        let player = Player(engine: FakeEngine(reacting: true), memory: WriteBehindMemory(store), retryDelay: .zero)
        // The disk holds the edit's write for a moment; what a client is told of must survive a
        // crash, so the edit answers only once it is stored.
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) { store.open() }
        await player.add([URL(fileURLWithPath: "/music/a.flac"), URL(fileURLWithPath: "/music/b.flac")])
        #expect(store.inner.session()?.entries.count == 2, "the edit answered before its session was stored")
        await player.shutdown()
    }
}
