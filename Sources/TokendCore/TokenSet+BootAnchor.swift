/// A token set's issue time on the machine's boot clock (CLOCK_BOOTTIME, which counts through a
/// suspend and is never stepped), kept in its keyring item.
///
/// The daemon's own clock never runs backwards while it runs, but a restart starts it afresh
/// from the wall clock. Expiries stored by a daemon whose wall clock was ahead (then set back)
/// would make a dead token look alive after a restart. Within the same boot, the boot clock says
/// how old the tokens really are; across a reboot it cannot, and an item issued "in the future"
/// by our clock is then treated as expired (one early refresh).
public struct BootAnchor: Codable, Sendable, Equatable {
    /// `/proc/sys/kernel/random/boot_id`: boot clock readings compare only within one boot.
    public var id: String
    /// Boot clock seconds when the tokens were issued.
    public var issuedAt: Double

    public init(id: String, issuedAt: Double) {
        self.id = id
        self.issuedAt = issuedAt
    }

    enum CodingKeys: String, CodingKey {
        case id
        case issuedAt = "issued_at"
    }
}

/// The boot clock read now, with the boot it belongs to.
public struct BootReading: Sendable, Equatable {
    public var id: String
    public var seconds: Double

    public init(id: String, seconds: Double) {
        self.id = id
        self.seconds = seconds
    }
}

extension TokenSet {
    /// This set as it is written: anchored to the boot clock at its issue time. The daemon's
    /// clock advances at least as fast as the boot clock, so `now - issuedAt` never understates
    /// the age and the anchor errs towards older, never younger.
    public func anchored(now: Date, boot: BootReading) -> TokenSet {
        var copy = self
        copy.boot = issuedAt.map { BootAnchor(id: boot.id, issuedAt: boot.seconds - max(0, now.timeIntervalSince($0))) }
        return copy
    }

    /// This set as read back, its times moved onto the daemon's clock `now`: never later than
    /// stored, earlier by however much the clock that wrote it was ahead. The anchor is dropped:
    /// in memory, times are the daemon's own.
    public func restored(now: Date, boot current: BootReading) -> TokenSet {
        var copy = self
        copy.boot = nil
        guard let issuedAt else { return copy }
        let trueIssuedAt: Date
        if let anchor = boot, !current.id.isEmpty, anchor.id == current.id {
            trueIssuedAt = now.addingTimeInterval(-max(0, current.seconds - anchor.issuedAt))
        } else if issuedAt > now {
            // Another boot, and issued "later" than now: our clock is behind the one that wrote
            // it, by an unknown amount. Only a refresh tells what is alive.
            trueIssuedAt = .distantPast
        } else {
            return copy
        }
        let shift = trueIssuedAt.timeIntervalSince(issuedAt)
        guard shift < 0 else { return copy }
        copy.issuedAt = max(trueIssuedAt, Date(timeIntervalSince1970: 0))
        copy.idTokenExpiresAt = idTokenExpiresAt.map { max($0.addingTimeInterval(shift), Date(timeIntervalSince1970: 0)) }
        copy.accessTokenExpiresAt = accessTokenExpiresAt.map { max($0.addingTimeInterval(shift), Date(timeIntervalSince1970: 0)) }
        return copy
    }
}
