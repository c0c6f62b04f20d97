import Foundation
import SecureDictionaryTestSupport
import Testing

@testable import SecureDictionary

extension KeyringIntegration {
    /// `move` holds the source's writer lock from its first read to the removal, so a
    /// process writing the dictionary meanwhile loses nothing, and the source does not come
    /// back holding what was moved. Before, with one process writing back to back beside a
    /// move, 9 of 25 overlapping rounds lost an acknowledged write (in neither the copy nor
    /// the source), and 16 returned `true` while the source survived with every key.
    @Suite struct MoveRace {
        @Test(.timeLimit(.minutes(5))) func aWriterBesideAMoveLosesNothingAndTheSourceDoesNotSurvive() throws {
            // 4 rounds of 60 writes, the move started at another point of the writer's run each
            // round (8 of 120 took 28 s on KWallet: repetition, where each round is the check).
            let count = 60
            let rounds = 4
            var overlapping = 0
            for round in 0..<rounds {
                let test = TestItem("move-race")
                try test.open(.init(store: SecretServiceStore())).setValue("seed", forKey: "seed")
                let writer = try LiveChild(KeyringHarness.writer, ["fill", test.appID, test.name, "w", "\(count)"])
                usleep(UInt32(20_000 + round * 60_000))  // into the writer's run, at another point each round
                let destination = InMemoryKeyringStore()
                let moved = try SecureDictionary.move(
                    name: test.name, applicationID: test.appID, from: SecretServiceStore(), to: destination,
                    timeout: .seconds(30))
                let said = writer.finish(timeout: .seconds(120)).text
                #expect(said == "ok \(count)\n", "round \(round): the writer said \(said)")

                let copied =
                    try destination.storedBytes(of: test.item).map { try BinaryPropertyListCoding.decode(Data($0)) } ?? [:]
                let left = try test.openFresh().snapshot
                let lost = (0..<count).filter { copied["w-\($0)"] == nil && left["w-\($0)"] == nil }
                #expect(lost.isEmpty, "round \(round): acknowledged writes lost: \(lost)")
                #expect(moved, "round \(round)")
                #expect(copied["seed"] == "seed", "round \(round)")
                let both = Set(copied.keys).intersection(left.keys)
                #expect(both.isEmpty, "round \(round): \(both.count) keys moved and still in the source")
                if copied.count > 1 && !left.isEmpty { overlapping += 1 }
            }
            // The figure: how many rounds had writes on both sides of the move.
            print("move race: \(overlapping) of \(rounds) rounds overlapped the writer")
        }

        /// Two `SecretServiceStore`s are one keyring: a move between them is refused at once
        /// (before, it waited for its own writer lock until the deadline), and nothing changes.
        @Test func aMoveFromTheKeyringToItselfIsRefusedAndChangesNothing() throws {
            let test = TestItem("move-self")
            try test.open(.init(store: SecretServiceStore())).setValue("v", forKey: "k")
            let name = try test.item.name
            #expect(throws: SecureDictionaryError.sameStore(name: name)) {
                try SecureDictionary.move(
                    name: test.name, applicationID: test.appID, from: SecretServiceStore(), to: SecretServiceStore.shared)
            }
            #expect(try test.openFresh().snapshot == ["k": "v"])
        }
    }
}
