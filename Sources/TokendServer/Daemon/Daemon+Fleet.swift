import TokendCore
import TokendFleet

#if canImport(Glibc)
import Glibc
#endif

// The fleet (README, "A fleet"): the member is made when `[fleet]` is first read, before any
// account is adopted, so that a fleet account's provider and store go through it from the start.
// A changed `[fleet]` table takes effect at the next start; the sealing key is read again on
// every reload, so a member given the wrong key is fixed by `tokenctl reload`.

extension Daemon {
    /// Makes or updates the fleet member for `configuration`; a file it cannot use is a broken
    /// configuration, located at `[fleet]`.
    func applyFleet(_ configuration: Configuration) async throws(ConfigurationError) {
        guard let settings = configuration.fleet else {
            if fleet.member != nil { logger.warning("[fleet] was removed; it stays in effect until tokend restarts") }
            else { fleet.bind(nil, accounts: []) }
            return
        }
        func broken(_ error: FleetError) -> ConfigurationError {
            ConfigurationError(path: configuration.path, line: nil, key: "fleet", message: error.message)
        }
        let sealer: FleetSealer
        do throws(FleetError) {
            sealer = try FleetSealer.load(settings.sealingKey, environment: options.environment)
        } catch {
            throw broken(error)
        }
        let shared = configuration.accounts.values.filter(\.fleet)
        let endpoints = Dictionary(uniqueKeysWithValues: shared.map { ($0.name, $0.endpoint) })
        if let member = fleet.member {
            if member.settings != settings { logger.warning("[fleet] changed; the change takes effect when tokend restarts") }
            await member.reconfigure(accounts: endpoints, sealer: sealer)
            fleet.bind(member, accounts: Set(endpoints.keys))
            return
        }
        let client: EtcdClient
        do throws(FleetError) {
            client = try EtcdClient(settings: settings, environment: options.environment, clock: engine.clock, timers: engine.timers)
        } catch {
            throw broken(error)
        }
        let member = FleetMember(settings: settings, client: client, sealer: sealer, clock: engine.clock, timers: engine.timers, logger: logger, memberID: Self.memberID())
        fleet.bind(member, accounts: Set(endpoints.keys))
        let engine = engine
        await member.start(accounts: endpoints) { account, change in await engine.followFleet(account, change) }
        logger.info("fleet member started", metadata: ["member": "\(member.memberID)", "endpoints": "\(settings.endpoints.joined(separator: ","))", "accounts": "\(endpoints.count)"])
    }

    /// This daemon in the election keys: host and process, for whoever reads etcd.
    static func memberID() -> String {
        var name = [CChar](repeating: 0, count: 256)
        let host = gethostname(&name, name.count) == 0 ? String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "host"
        return "\(host)/\(getpid())"
    }
}
