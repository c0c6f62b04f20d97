import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Coordinates tests of different suites (and test targets) that share the one private
/// gnome-keyring daemon: `flock(2)` on `$SD_TEST_KEYRING_CONTROL/daemon.lock`.
///
/// - A test that uses the daemon takes the lock shared (`.usesKeyringDaemon`): such tests
///   may run side by side.
/// - A test that locks, freezes, restarts or stops the daemon takes it exclusive
///   (`.disruptsKeyringDaemon`): it waits until no other test uses the daemon, and no other
///   test starts until it has put the daemon back.
///
/// The wait polls with `LOCK_NB` and sleeps, so it never blocks a thread of Swift's
/// cooperative pool. Outside `scripts/with-private-keyring` (no control directory) it does
/// nothing.
struct DaemonLock: TestTrait, TestScoping {
    let exclusive: Bool

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        guard let control = ProcessInfo.processInfo.environment["SD_TEST_KEYRING_CONTROL"], !control.isEmpty else {
            try await function()
            return
        }
        // O_CLOEXEC: a program the test starts (a restarted daemon!) must not inherit the lock.
        let descriptor = open("\(control)/daemon.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            Issue.record("cannot open \(control)/daemon.lock: errno \(errno)")
            return
        }
        defer { close(descriptor) }  // closing releases the lock
        let operation = (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB
        let deadline = ContinuousClock.now + .seconds(300)
        while flock(descriptor, operation) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR, ContinuousClock.now < deadline else {
                Issue.record("cannot take daemon.lock: errno \(errno)")
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        try await function()
    }
}

extension Trait where Self == DaemonLock {
    /// The test uses the shared keyring daemon (a shared lock).
    static var usesKeyringDaemon: Self { DaemonLock(exclusive: false) }
    /// The test locks, freezes, restarts or stops the daemon (an exclusive lock).
    static var disruptsKeyringDaemon: Self { DaemonLock(exclusive: true) }
}
