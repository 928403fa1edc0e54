import FoundationEssentials
import TokendCore

extension FleetMember {
    /// Watches every account's session key, from the last revision seen, for as long as the
    /// member runs; between watches, a second's pause while etcd cannot be reached.
    func watchSessions() async {
        let start = prefix + Array("session/".utf8)
        while !Task.isCancelled {
            let request = EtcdWatchRequest(create_request: EtcdWatchCreate(
                key: start.base64, range_end: etcdPrefixEnd(start).base64, start_revision: watchRevision > 0 ? EtcdNumber(watchRevision + 1) : nil))
            do throws(FleetError) {
                // A watch lasts a lease at most: a member that went silent is left that soon.
                try await client.watch(request, for: settings.lease) { result in await self.watched(result, under: start.count) }
            } catch {
                // Not a verdict on reachability (a watch also ends when a member restarts): the
                // lease's keep-alives and the reads say that.
                guard await timers.sleep(seconds: Self.watchRetry, from: clock) else { return }
            }
        }
    }

    /// A second between watches while etcd fails: a failover is seconds, and a second of delay
    /// is far below any token's lifetime margin.
    static let watchRetry: Double = 1

    /// One watch answer: each session another member wrote or deleted goes to the engine.
    func watched(_ result: EtcdWatchResult, under prefixLength: Int) async {
        if result.canceled == true, (result.compact_revision?.value ?? 0) > 0 {
            // The revision after ours was compacted away: start from now; refreshes read etcd anyway.
            watchRevision = 0
            return
        }
        if watchRevision == 0, let revision = result.header?.revision?.value { watchRevision = revision }
        for event in result.events ?? [] {
            guard let kv = event.kv else { continue }
            let revision = kv.mod_revision?.value ?? result.header?.revision?.value ?? 0
            watchRevision = max(watchRevision, revision)
            let account = String(decoding: kv.keyBytes.dropFirst(prefixLength), as: UTF8.self)
            guard endpoints[account] != nil else { continue }
            if event.type == "DELETE" {
                guard known.removeValue(forKey: account) != nil else { continue }
                wakeWaiters(of: account)
                await onChange?(account, .deleted)
                continue
            }
            if let held = known[account], held.revision >= revision { continue }
            let tokens: TokenSet
            do throws(FleetError) {
                tokens = try sealer.open(kv.valueBytes, account: account, endpoint: endpoint(of: account))
            } catch {
                if unreadable.insert(account).inserted { logger.error("\(error.message)", metadata: ["account": "\(account)"]) }
                continue
            }
            saw(tokens.refreshToken, account: account)
            if known[account]?.matches(tokens) == true {
                known[account]?.revision = revision
                continue
            }
            let held = Self.skewed(tokens)
            known[account] = KnownSession(held, revision: revision)
            wakeWaiters(of: account)
            await onChange?(account, .put(held))
        }
    }
}
