import Glibc
import Synchronization
import TokendCore

/// Which program serves the Secret Service on the session bus: the owner of
/// `org.freedesktop.secrets` (GetConnectionUnixProcessID, then its `/proc/PID/comm`). Messages
/// give that program's steps: gnome-keyring's advice is no help to a KeePassXC user.
public struct SecretServiceProvider: Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        case gnomeKeyring = "gnome-keyring", kwallet = "KWallet", keepassxc = "KeePassXC", other
    }

    public var kind: Kind
    /// The process's name as the kernel has it (15 bytes at most), nil before one was seen.
    public var command: String?
    public var pid: Int32?

    public init(kind: Kind, command: String?, pid: Int32?) {
        self.kind = kind
        self.command = command
        self.pid = pid
    }

    /// What the program's name says it is; the kernel truncates it to 15 bytes.
    public init(command: String?, pid: Int32?) {
        let name = command ?? ""
        let kind: Kind =
            if name.hasPrefix("gnome-keyring") { .gnomeKeyring }
            else if name.hasPrefix("kwalletd") || name.hasPrefix("ksecretd") { .kwallet }
            else if name.lowercased().hasPrefix("keepassxc") { .keepassxc }
            else { .other }
        self.init(kind: kind, command: command, pid: pid)
    }

    public var description: String {
        let program = command.map { kind == .other ? $0 : "\(kind.rawValue), \($0)" } ?? kind.rawValue
        guard let pid else { return kind == .other && command == nil ? "not identified yet" : program }
        return "\(program), pid \(pid)"
    }

    /// What makes this service answer without a dialog.
    public var confirmationAdvice: String {
        switch kind {
        case .keepassxc:
            "in KeePassXC, untick Settings > Secret Service Integration > \"Confirm when passwords are retrieved by clients\" "
                + "(keepassxc.ini [FdoSecrets] ConfirmAccessItem=false), answer any dialog it shows, or update to 2.7.6 or later "
                + "(see README, \"Secret Service\")"
        case .kwallet:
            "answer KWallet's dialog, or let the wallet open at login (pam_kwallet) with \"Prompt on Open\" off (see README, \"Secret Service\")"
        case .gnomeKeyring, .other:
            "answer the dialog the Secret Service shows, or restart it (for gnome-keyring: `gnome-keyring-daemon --replace`)"
        }
    }

    /// What unlocks this service's collection.
    public var unlockAdvice: String? {
        switch kind {
        case .keepassxc:
            "unlock the KeePassXC database that exposes a group to the Secret Service (see README, \"Secret Service\")"
        case .kwallet:
            "open the KDE wallet (at login through pam_kwallet, or in KWalletManager) (see README, \"Secret Service\")"
        case .gnomeKeyring, .other: nil
        }
    }

    /// The provider last seen on the bus; process-wide because the one libsecret connection is
    /// (`LibsecretStore`: one store per process), and read where messages are made.
    static let seen = Mutex(SecretServiceProvider(kind: .other, command: nil, pid: nil))

    public static var current: SecretServiceProvider { seen.withLock { $0 } }

    /// Looks up `pid`'s name; called when the name's owner changes.
    static func note(pid: Int32) {
        // 0: the bus could not say (no such name, or no credentials).
        let known = pid > 0 ? pid : nil
        seen.withLock { $0 = SecretServiceProvider(command: known.flatMap(command(of:)), pid: known) }
    }

    static func command(of pid: Int32) -> String? {
        let fd = open("/proc/\(pid)/comm", O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = read(fd, &buffer, buffer.count)
        guard count > 0 else { return nil }
        // Any process may name itself anything: control bytes never reach the log (issue 45).
        let name = String(decoding: buffer[..<count], as: UTF8.self).trimmingSuffix("\n").singleLine
        return name.isEmpty ? nil : name
    }
}

extension String {
    fileprivate func trimmingSuffix(_ suffix: Character) -> String {
        var text = self
        while text.last == suffix { text.removeLast() }
        return text
    }
}
