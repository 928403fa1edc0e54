import CLibsecret
import TokendCore

/// The libsecret calls behind `LibsecretStore`, one method per operation.
///
/// Never unlocks and never prompts: searches go without `SECRET_SEARCH_UNLOCK`, secrets are read
/// through a search with `SECRET_SEARCH_LOAD_SECRETS` (libsecret loads them for unlocked items
/// only) rather than `secret_password_lookup`, which would try to unlock a locked item, and
/// writes check the collection first because a store into a locked one asks for an unlock.
final class LibsecretClient: @unchecked Sendable {  // confined to the keyring thread: only its jobs call it
    /// Items carry it as `xdg:schema`; matching ignores it, so `secret-tool` searches by attribute
    /// (and items written by hand with `secret-tool store`) are found too.
    static let schemaName = "org.tokend.Session"
    static let applicationAttribute = "application"
    static let applicationName = "tokend"
    static let accountAttribute = "account"

    private var schema: UnsafeMutablePointer<SecretSchema>?
    /// The unique bus name of the Secret Service that libsecret's cached service (and its
    /// encryption session) was opened with.
    private var serviceOwner: String?

    init() {
        // GLib's pool worker (GDBus and libsecret run parts of a call on it) otherwise waits 15 s
        // unused before it ends; ending after tokend's idle release (4-8 s after the last work)
        // faulted ~500 KB of GLib and libc code back in. Now it ends 0.5 s after its last task.
        g_thread_pool_set_max_unused_threads(0)
    }

    /// Frees what the client holds; on the keyring thread, as it ends.
    func close() {
        if let schema { secret_schema_unref(schema) }
        schema = nil
    }

    // MARK: operations

    func load(account: String, cancellable: UnsafeMutablePointer<GCancellable>) -> Result<TokenSet?, KeyringError> {
        retryingOnFreshSessions { () throws(KeyringError) -> TokenSet? in
            let service = try self.service(cancellable)
            let home = try self.defaultCollection(service, cancellable)
            try self.refuseLocked(home)
            let items = try self.search(service, account: account, in: home, cancellable)
            guard !items.isEmpty else { return nil }
            // Should the collection hold a second copy, an unlocked one is readable now.
            guard let item = items.first(where: { !$0.locked }) else {
                throw home?.locked == false ? KeyringError.itemNeedsConfirmation : KeyringError(.locked, "the item is locked")
            }
            guard let secret = try Self.loadSecrets(of: [item], cancellable)[0] else { throw KeyringError.secretNotDecrypted }
            return try TokenSet.decodingStored(secret)
        }
    }

    func save(_ json: String, account: String, cancellable: UnsafeMutablePointer<GCancellable>) -> Result<Void, KeyringError> {
        retryingOnFreshSessions { () throws(KeyringError) in
            let service = try self.service(cancellable)
            let home = try self.requireUnlockedDefaultCollection(service, cancellable)
            // An existing item gets its secret replaced in place (Item.SetSecret): one write, so
            // refresh and ID tokens can never be torn apart. Not CreateItem with replace: KeePassXC
            // (before 2.7.6, its #9255) asks the user to confirm that for an item another client
            // made, and a tokend restarted is another client; SetSecret it allows. Only tokend's
            // own items (`search`): never another application's, nor one in a synced or shared collection.
            let existing = try self.search(service, account: account, in: home, cancellable)
            let writable = existing.filter { !$0.locked }
            if !writable.isEmpty {
                guard let value = secret_value_new(json, -1, "text/plain") else {
                    throw KeyringError(.failed, "libsecret could not hold the secret")
                }
                defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
                // Every unlocked copy: a read takes whichever it finds first.
                for item in writable {
                    var error: UnsafeMutablePointer<GError>?
                    _ = secret_item_set_secret_sync(item.object.pointer, value, cancellable, &error)
                    if let error { throw KeyringError(consuming: error) }
                }
                return
            }
            // The collection was just seen unlocked: a locked item of ours is one to confirm.
            if !existing.isEmpty { throw KeyringError.itemNeedsConfirmation }
            let attributes = Self.attributes(account: account)
            defer { g_hash_table_unref(attributes) }
            var error: UnsafeMutablePointer<GError>?
            // None exists: create it (no other client's item to replace, so nothing to confirm).
            let stored = secret_password_storev_sync(
                try self.sessionSchema(), attributes, nil, "tokend session: \(account)", json, cancellable, &error)
            if let error { throw KeyringError(consuming: error) }
            guard stored != 0 else { throw KeyringError(.failed, "the Secret Service did not store the item") }
        }
    }

    func delete(account: String, ifRefreshToken: String?, cancellable: UnsafeMutablePointer<GCancellable>) -> Result<Bool, KeyringError> {
        retryingOnFreshSessions { () throws(KeyringError) -> Bool in
            let service = try self.service(cancellable)
            let home = try self.requireUnlockedDefaultCollection(service, cancellable)
            let items = try self.search(service, account: account, in: home, cancellable)
            // The collection was just seen unlocked: a locked item of ours is one to confirm.
            if items.contains(where: \.locked) { throw KeyringError.itemNeedsConfirmation }
            let secrets = ifRefreshToken == nil ? [] : try Self.loadSecrets(of: items, cancellable)
            let doomed = items.indices.filter { index in
                guard let ifRefreshToken else { return true }
                // An unreadable item is not the token the caller meant: keep it.
                guard let secret = secrets[index], let tokens = try? TokenSet.decodingStored(secret) else { return false }
                return tokens.refreshToken == ifRefreshToken
            }.map { items[$0] }
            for item in doomed {
                var error: UnsafeMutablePointer<GError>?
                _ = secret_item_delete_sync(item.object.pointer, cancellable, &error)
                if let error { throw KeyringError(consuming: error) }
            }
            return !doomed.isEmpty
        }
    }

    func accounts(cancellable: UnsafeMutablePointer<GCancellable>) -> Result<[String], KeyringError> {
        retryingOnFreshSessions { () throws(KeyringError) -> [String] in
            let service = try self.service(cancellable)
            let home = try self.defaultCollection(service, cancellable)
            try self.refuseLocked(home)
            let items = try self.search(service, account: nil, in: home, cancellable)
            return Set(items.compactMap(\.account)).sorted()
        }
    }

    /// The object paths of every item of ours, and how many of them are locked: one SearchItems
    /// call, which gnome-keyring answers without loading each item (0.15 s at 6,000 items).
    func itemPaths(cancellable: UnsafeMutablePointer<GCancellable>) -> Result<ItemPaths, KeyringError> {
        retryingOnFreshSessions { () throws(KeyringError) -> ItemPaths in
            let service = try self.service(cancellable)
            let home = try self.defaultCollection(service, cancellable)
            try self.refuseLocked(home)
            let attributes = Self.attributes(account: nil)
            defer { g_hash_table_unref(attributes) }
            var unlocked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
            var locked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
            var error: UnsafeMutablePointer<GError>?
            _ = secret_service_search_for_dbus_paths_sync(
                service.pointer, try self.sessionSchema(), attributes, cancellable, &unlocked, &locked, &error)
            defer {
                g_strfreev(unlocked)
                g_strfreev(locked)
            }
            if let error { throw KeyringError(consuming: error) }
            // Those of the default collection only (of any, with none), as `search` finds them.
            let inHome = { (path: String) in Self.path(path, isIn: home) }
            return ItemPaths(unlocked: Self.strings(unlocked).filter(inHome), locked: Self.strings(locked).filter(inHome).count)
        }
    }

    /// The secrets of the unlocked items at `paths`, by path: one GetSecrets call. A path whose
    /// item went (or was locked) since it was found is left out.
    func secrets(at paths: [String], cancellable: UnsafeMutablePointer<GCancellable>) -> Result<[String: String], KeyringError> {
        retryingOnFreshSessions { () throws(KeyringError) -> [String: String] in
            let service = try self.service(cancellable)
            var copies: [UnsafeMutablePointer<CChar>?] = paths.map { strdup($0) }
            copies.append(nil)
            defer { for copy in copies { free(copy) } }
            var error: UnsafeMutablePointer<GError>?
            let table = copies.withUnsafeMutableBufferPointer { buffer in
                buffer.baseAddress!.withMemoryRebound(to: UnsafePointer<gchar>?.self, capacity: buffer.count) { list in
                    secret_service_get_secrets_for_dbus_paths_sync(service.pointer, list, cancellable, &error)
                }
            }
            if let error {
                if let table { g_hash_table_unref(table) }
                throw KeyringError(consuming: error)
            }
            guard let table else { return [:] }
            defer { g_hash_table_unref(table) }
            var found: [String: String] = [:]
            var iterator = GHashTableIter()
            g_hash_table_iter_init(&iterator, table)
            var key: gpointer?
            var value: gpointer?
            while g_hash_table_iter_next(&iterator, &key, &value) != 0 {
                guard let key, let value else { continue }
                let path = String(cString: key.assumingMemoryBound(to: CChar.self))
                found[path] = Self.text(of: OpaquePointer(value))
            }
            return found
        }
    }

    func state(cancellable: UnsafeMutablePointer<GCancellable>) -> Result<KeyringState, KeyringError> {
        retryingOnFreshSessions { () throws(KeyringError) -> KeyringState in
            let service = try self.service(cancellable)
            return try self.defaultCollection(service, cancellable)?.locked == false ? .available : .locked
        }
    }

    // MARK: building blocks

    /// Runs `body`; if it failed in a way a new connection cures, drops libsecret's cached service
    /// (and the session negotiated with it) and runs it again: the Secret Service went away (a
    /// restarted gnome-keyring: libsecret keeps a proxy and a session bound to the old one), or
    /// the session's key is not the service's (`mayMeanAMismatchedSession`).
    private func retryingOnFreshSessions<T>(_ body: () throws(KeyringError) -> T) -> Result<T, KeyringError> {
        var retries = 0
        while true {
            do {
                return .success(try body())
            } catch where retries < Self.freshSessionRetries && (error.meansServiceWentAway || error.mayMeanAMismatchedSession) {
                secret_service_disconnect()
                retries += 1
            } catch {
                return .failure(error)
            }
        }
    }

    /// Two: kwalletd5 keys about one session in 130 wrongly (below), so a read fails on two in a
    /// row once in ~17,000 and on three once in ~2 million; a service that went away fails fast.
    private static let freshSessionRetries = 2

    private func service(_ cancellable: UnsafeMutablePointer<GCancellable>) throws(KeyringError) -> GObjectRef<SecretService> {
        var error: UnsafeMutablePointer<GError>?
        let pointer = secret_service_get_sync(SECRET_SERVICE_NONE, cancellable, &error)
        if let error {
            if let pointer { g_object_unref(pointer) }
            throw KeyringError(unreachable: error)
        }
        guard let pointer else { throw KeyringError(.unavailable, "libsecret returned no Secret Service") }
        // GDBus exits the process when a shared bus connection closes, if anyone runs the default
        // main context: a daemon must outlive its session bus's hiccups and report them instead.
        let connection = pointer.withMemoryRebound(to: GDBusProxy.self, capacity: 1) { proxy in
            let connection = g_dbus_proxy_get_connection(proxy)
            g_dbus_connection_set_exit_on_close(connection, 0)
            return connection
        }
        // A replaced gnome-keyring (every unlock by a login starts a new one) knows nothing of the
        // session libsecret negotiated with the old one, and a secret sent under it was refused
        // ("transferred or encrypted in an invalid way") or stored as ciphertext (the chaos run,
        // seed 20261126): a service opened with another owner is dropped before anything is sent.
        var ownerError: UnsafeMutablePointer<GError>?
        guard let ownerName = clibsecret_name_owner(connection, "org.freedesktop.secrets", cancellable, &ownerError) else {
            g_object_unref(pointer)
            guard let ownerError else { throw KeyringError(.unavailable, "the bus named no owner of the Secret Service") }
            throw KeyringError(unreachable: ownerError)
        }
        let owner = String(cString: ownerName)
        g_free(ownerName)
        if let serviceOwner, serviceOwner != owner {
            g_object_unref(pointer)
            secret_service_disconnect()
            self.serviceOwner = nil
            return try service(cancellable)
        }
        if serviceOwner == nil {
            // A new owner: which program it is decides what messages advise.
            SecretServiceProvider.note(pid: Int32(bitPattern: clibsecret_name_owner_pid(connection, "org.freedesktop.secrets", cancellable)))
        }
        serviceOwner = owner
        return GObjectRef(pointer)
    }

    /// The default collection (the login keyring): where tokend's items are, the only one it
    /// writes to or reads from, and whether it is locked; nil if there is none.
    private func defaultCollection(
        _ service: GObjectRef<SecretService>, _ cancellable: UnsafeMutablePointer<GCancellable>
    ) throws(KeyringError) -> (path: String, locked: Bool)? {
        var error: UnsafeMutablePointer<GError>?
        let collection = secret_collection_for_alias_sync(
            service.pointer, SECRET_COLLECTION_DEFAULT, SECRET_COLLECTION_NONE, cancellable, &error)
        if let error {
            if let collection { g_object_unref(collection) }
            throw KeyringError(consuming: error)
        }
        guard let collection else { return nil }
        defer { g_object_unref(collection) }
        return (Self.objectPath(of: collection), secret_collection_get_locked(collection) != 0)
    }

    /// The default collection, unlocked: what a write needs.
    private func requireUnlockedDefaultCollection(
        _ service: GObjectRef<SecretService>, _ cancellable: UnsafeMutablePointer<GCancellable>
    ) throws(KeyringError) -> (path: String, locked: Bool) {
        switch try defaultCollection(service, cancellable) {
        case let home? where !home.locked: return home
        case .some: throw KeyringError(.locked, "the default collection (login keyring) is locked")
        case nil:
            // Writing would make the Secret Service prompt for a new keyring's password.
            throw KeyringError(.locked, "the Secret Service has no default collection (login keyring)")
        }
    }

    /// Before a search: a locked default collection is `.locked` without asking the service.
    /// KeePassXC answers a search of a locked database with its unlock dialog
    /// (`UnlockBeforeSearch`), and tokend never makes a service prompt. gnome-keyring searches a
    /// locked collection without one and shows the attributes, so it is searched as before (an
    /// account with no item is then known absent).
    private func refuseLocked(_ home: (path: String, locked: Bool)?) throws(KeyringError) {
        guard SecretServiceProvider.current.kind != .gnomeKeyring else { return }
        if home?.locked == true { throw KeyringError(.locked, "the default collection is locked") }
    }

    /// Whether the item at `item` (an object path) is one of `home`, the default collection;
    /// with none, every item is (`search`).
    static func path(_ item: String, isIn home: (path: String, locked: Bool)?) -> Bool {
        home.map { item.hasPrefix($0.path + "/") } ?? true
    }

    /// The D-Bus object path of a collection or an item (both are GDBusProxy subclasses).
    private static func objectPath<Proxy>(of proxy: UnsafeMutablePointer<Proxy>) -> String {
        proxy.withMemoryRebound(to: GDBusProxy.self, capacity: 1) { String(cString: g_dbus_proxy_get_object_path($0)) }
    }

    private struct FoundItem {
        let object: GObjectRef<SecretItem>
        let locked: Bool
        let account: String?
    }

    /// Every item of ours (of one account, or all), locked ones included: in `home`, the default
    /// collection, and of tokend's schema (or made by hand: `isOurs`). An
    /// item of the same attributes in another collection (another application's, a synced or
    /// shared collection's, a stale copy) or of another schema is never read, written, deleted or
    /// waited for (docs/security.md). With no default collection (a keyring just activated by
    /// the bus, before its login collection loads) those of every collection: nothing can be
    /// written then, and a locked one is a keyring still locked, not an absent session. Never unlocks.
    private func search(
        _ service: GObjectRef<SecretService>, account: String?, in home: (path: String, locked: Bool)?,
        _ cancellable: UnsafeMutablePointer<GCancellable>
    ) throws(KeyringError) -> [FoundItem] {
        let attributes = Self.attributes(account: account)
        defer { g_hash_table_unref(attributes) }
        var error: UnsafeMutablePointer<GError>?
        let list = secret_service_search_sync(
            service.pointer, try sessionSchema(), attributes, SECRET_SEARCH_ALL, cancellable, &error)
        defer { g_list_free_full(list, g_object_unref) }
        if let error { throw KeyringError(consuming: error) }

        var found: [FoundItem] = []
        var node = list
        while let current = node {
            if let data = current.pointee.data {
                let item = data.assumingMemoryBound(to: SecretItem.self)
                let locked = secret_item_get_locked(item) != 0
                if Self.path(Self.objectPath(of: item), isIn: home), locked || Self.isOurs(schema: secret_item_get_schema_name(item)) {
                    g_object_ref(item)
                    found.append(FoundItem(object: GObjectRef(item), locked: locked, account: Self.attribute(Self.accountAttribute, of: item)))
                }
            }
            node = current.pointee.next
        }
        return found
    }

    /// Whether an unlocked item's `xdg:schema` (taken over, freed here) is tokend's: its own,
    /// none, or `secret-tool store`'s generic one (an item made by hand). A locked item's is not
    /// known (gnome-keyring shows a locked collection's attributes hashed): such an item is
    /// taken as ours, which only ever makes tokend wait, never write.
    private static func isOurs(schema: UnsafeMutablePointer<gchar>?) -> Bool {
        guard let schema else { return true }
        defer { g_free(schema) }
        return [schemaName, "org.freedesktop.Secret.Generic"].contains(String(cString: schema))
    }

    private func sessionSchema() throws(KeyringError) -> UnsafeMutablePointer<SecretSchema> {
        if let schema { return schema }
        let types = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, nil)
        defer { g_hash_table_unref(types) }
        for name in [Self.applicationAttribute, Self.accountAttribute] {
            // SECRET_SCHEMA_ATTRIBUTE_STRING is 0, which GINT_TO_POINTER makes a null value.
            g_hash_table_insert(types, g_strdup(name), UnsafeMutableRawPointer(bitPattern: Int(SECRET_SCHEMA_ATTRIBUTE_STRING.rawValue)))  // conversion: a C enum constant
        }
        guard let made = secret_schema_newv(Self.schemaName, SECRET_SCHEMA_DONT_MATCH_NAME, types) else {
            throw KeyringError(.failed, "libsecret refused the item schema")
        }
        schema = made
        return made
    }

    /// The attributes of one account's item, or of all of ours; the caller unrefs the table.
    private static func attributes(account: String?) -> OpaquePointer {
        let table = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free)!
        g_hash_table_insert(table, g_strdup(applicationAttribute), g_strdup(applicationName))
        if let account { g_hash_table_insert(table, g_strdup(accountAttribute), g_strdup(account)) }
        return table
    }

    private static func attribute(_ name: String, of item: UnsafeMutablePointer<SecretItem>) -> String? {
        guard let table = secret_item_get_attributes(item) else { return nil }
        defer { g_hash_table_unref(table) }
        guard let value = g_hash_table_lookup(table, name) else { return nil }
        return String(cString: value.assumingMemoryBound(to: CChar.self))
    }

    /// The secrets of `items` (one GetSecrets call), in order; nil for a locked or unreadable one.
    private static func loadSecrets(of items: [FoundItem], _ cancellable: UnsafeMutablePointer<GCancellable>) throws(KeyringError) -> [String?] {
        let unlocked = items.filter { !$0.locked }
        if !unlocked.isEmpty {
            var list: UnsafeMutablePointer<GList>?
            for item in unlocked.reversed() { list = g_list_prepend(list, item.object.pointer) }
            defer { g_list_free(list) }
            var error: UnsafeMutablePointer<GError>?
            _ = secret_item_load_secrets_sync(list, cancellable, &error)
            if let error { throw KeyringError(consuming: error) }
        }
        return items.map { $0.locked ? nil : secretText(of: $0.object.pointer) }
    }

    private static func secretText(of item: UnsafeMutablePointer<SecretItem>) -> String? {
        guard let value = secret_item_get_secret(item) else { return nil }
        defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
        return text(of: value)
    }

    private static func text(of value: OpaquePointer) -> String? {
        var length = 0
        guard let bytes = secret_value_get(value, &length) else { return nil }
        // Read as bytes, not secret_value_get_text: that is nil unless the content type is
        // text/plain, and other tools may have written the item.
        return bytes.withMemoryRebound(to: UInt8.self, capacity: length) { base in
            String(decoding: UnsafeBufferPointer(start: base, count: length), as: UTF8.self)
        }
    }

    private static func strings(_ list: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?) -> [String] {
        guard let list else { return [] }
        var strings: [String] = []
        var index = 0
        while let string = list[index] {
            strings.append(String(cString: string))
            index += 1
        }
        return strings
    }
}

extension TokenSet {
    /// A stored secret read back: every store (the tests' in-memory one too) decodes through here.
    public static func decodingStored(_ secret: String) throws(KeyringError) -> TokenSet {
        do {
            return try TokenSet(keyringJSON: secret)
        } catch {
            // Not the decoder's message: it can quote pieces of the secret.
            throw KeyringError(.corrupt, "the item's secret is not a tokend token set (JSON with a refresh_token)")
        }
    }
}

extension KeyringError {
    /// An unlocked item whose secret libsecret could not decrypt under its session.
    static let secretNotDecrypted = KeyringError(.failed, "the Secret Service returned no secret for an unlocked item")

    /// What a read under a session whose key the service derived differently from libsecret
    /// gets: no secret (the padding check fails), or, once in ~256, bytes that are no token set.
    /// kwalletd5 does that to every secret of about one fresh session in 130 (measured: 7 of 900
    /// fresh `secret-tool lookup` processes read nothing; gnome-keyring 0 of 300), so the
    /// account would wait for the keyring, or need a login, until the daemon restarted.
    var mayMeanAMismatchedSession: Bool { self == .secretNotDecrypted || code == .corrupt }

    /// A locked item found after the default collection was seen unlocked: with gnome-keyring
    /// and KWallet items lock with their collection, so this is a service that locks items per
    /// client (KeePassXC asking to confirm access).
    static let itemNeedsConfirmation = KeyringError(
        .needsConfirmation, "the item is locked for tokend although its collection is unlocked: the Secret Service wants its access confirmed")
}

/// Where the items of ours are (`LibsecretClient.itemPaths`).
struct ItemPaths: Sendable {
    var unlocked: [String]
    var locked: Int
}

/// An owned reference to a GObject, released when the Swift value goes (on the keyring thread:
/// these never leave it).
final class GObjectRef<Object> {
    let pointer: UnsafeMutablePointer<Object>

    init(_ pointer: UnsafeMutablePointer<Object>) { self.pointer = pointer }

    deinit { g_object_unref(pointer) }
}
