import Configuration
import SecureDictionary
import SecureDictionaryConfiguration
import Testing

/// Watches start with what is there now, then follow the dictionary's changes; a fetch
/// loads the item again.
@Suite(.timeLimit(.minutes(1))) struct ProviderWatches {
    func string(_ result: Result<LookupResult, any Error>?) throws -> String? {
        guard case .string(let string)? = try result?.get().value?.content else { return nil }
        return string
    }

    @Test func watchValueStartsWithTheValueThenFollowsWritesAndRemovals() async throws {
        let fixture = try ProviderFixture(["api.token": "first", "other": "x"])
        try await fixture.provider.watchValue(forKey: ["api", "token"], type: .string) { updates in
            var iterator = updates.makeAsyncIterator()
            #expect(try string(await iterator.next()) == "first")
            try fixture.dictionary.setValue("second", forKey: "api.token")
            #expect(try string(await iterator.next()) == "second")
            try fixture.dictionary.removeValue(forKey: "api.token")
            let removed = try #require(await iterator.next())
            #expect(try removed.get() == LookupResult(encodedKey: "api.token", value: nil))
        }
    }

    @Test func watchValueFollowsAStoredDictionaryThatHoldsTheKey() async throws {
        let fixture = try ProviderFixture(["database": ["password": "first"]])
        try await fixture.provider.watchValue(forKey: ["database", "password"], type: .string) { updates in
            var iterator = updates.makeAsyncIterator()
            #expect(try string(await iterator.next()) == "first")
            try fixture.dictionary.setValue(["password": "second"], forKey: "database")
            #expect(try string(await iterator.next()) == "second")
        }
    }

    @Test func watchValueGivesAMismatchAsAFailureAndGoesOn() async throws {
        let fixture = try ProviderFixture(["port": 5432])
        try await fixture.provider.watchValue(forKey: ["port"], type: .int) { updates in
            var iterator = updates.makeAsyncIterator()
            #expect(try await iterator.next()?.get().value?.content == .int(5432))
            try fixture.dictionary.setValue("5433", forKey: "port")
            let mismatch = try #require(await iterator.next())
            #expect(throws: SecureDictionaryError.typeMismatch(expected: "int", found: "string")) { try mismatch.get() }
            try fixture.dictionary.setValue(5433, forKey: "port")
            #expect(try await iterator.next()?.get().value?.content == .int(5433))
        }
    }

    @Test func watchSnapshotStartsWithTheEntriesThenFollowsEveryWrite() async throws {
        let fixture = try ProviderFixture(["user": "app"])
        try await fixture.provider.watchSnapshot { snapshots in
            var iterator = snapshots.makeAsyncIterator()
            let first = try #require(await iterator.next())
            #expect(try first.value(forKey: ["user"], type: .string).value?.content == "app")
            #expect(try first.value(forKey: ["password"], type: .string).value == nil)
            try fixture.dictionary.setValue("s3cr3t", forKey: "password")
            let second = try #require(await iterator.next())
            #expect(try second.value(forKey: ["password"], type: .string).value?.content == "s3cr3t")
            #expect(try first.value(forKey: ["password"], type: .string).value == nil)  // a snapshot never changes
        }
    }

    @Test func fetchValueLoadsWhatAnotherWriterStoredWhileValueAnswersFromMemory() async throws {
        let fixture = try ProviderFixture(["api.token": "old"])
        try fixture.writeFromOutside(["api.token": "new"])
        #expect(try fixture.provider.value(forKey: ["api", "token"], type: .string).value?.content == "old")
        #expect(try await fixture.provider.fetchValue(forKey: ["api", "token"], type: .string).value?.content == "new")
        #expect(try fixture.provider.value(forKey: ["api", "token"], type: .string).value?.content == "new")
    }

    @Test func fetchValueThrowsWhatTheLoadThrows() async throws {
        let fixture = try ProviderFixture(["api.token": "old"])
        fixture.store.setLocked(true)
        await #expect(throws: SecureDictionaryError.locked) {
            try await fixture.provider.fetchValue(forKey: ["api", "token"], type: .string)
        }
    }
}
