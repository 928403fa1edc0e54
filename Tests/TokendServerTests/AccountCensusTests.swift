import Foundation
import Testing
@testable import TokendCore
@testable import TokendServer

/// The kept count of states agrees with asking every machine, whatever the clock says, as
/// machines are added, changed and removed.
@Suite
struct AccountCensusTests {
    private let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    private func machine(expiringIn seconds: Double?, _ change: (inout AccountMachine) -> Void = { _ in }) -> AccountMachine {
        var machine = AccountMachine(tokens: seconds.map { TokenSet(refreshToken: "rt", idToken: "id", idTokenExpiresAt: t0.addingTimeInterval($0), issuedAt: t0) })
        change(&machine)
        return machine
    }

    private func recount(_ machines: [AccountMachine], at now: Date) -> [String: Int] {
        machines.reduce(into: [:]) { $0[$1.stateName(at: now), default: 0] += 1 }
    }

    @Test func countsAgreeWithEveryMachinesOwnStateAtAnyInstant() {
        var machines: [AccountMachine] = [
            machine(expiringIn: 10), machine(expiringIn: 10), machine(expiringIn: 20), machine(expiringIn: -5),
            machine(expiringIn: nil), machine(expiringIn: 30) { $0.holdBackoff(until: self.t0.addingTimeInterval(5)) },
            machine(expiringIn: 15) { _ = $0.startRefresh(at: self.t0, force: true) },
            machine(expiringIn: 40) { $0.markKeyringUnreadable(TokendError(.keyringUnavailable, "frozen")) },
        ]
        var census = AccountCensus()
        for machine in machines { census.add(machine.stateNames) }
        for offset in [-10.0, 0, 9.999, 10, 10.001, 19, 20, 29, 30, 31, 100] {
            let now = t0.addingTimeInterval(offset)
            #expect(census.counts(at: now) == recount(machines, at: now), "at t0 + \(offset) s")
        }
        // Equal instants: removing one of two leaves the other.
        census.remove(machines.remove(at: 1).stateNames)
        census.remove(machines.remove(at: 3).stateNames)
        for offset in [0.0, 10, 10.5, 35] {
            let now = t0.addingTimeInterval(offset)
            #expect(census.counts(at: now) == recount(machines, at: now), "after removals, at t0 + \(offset) s")
        }
        for machine in machines { census.remove(machine.stateNames) }
        #expect(census.counts(at: t0).isEmpty)
    }
}
