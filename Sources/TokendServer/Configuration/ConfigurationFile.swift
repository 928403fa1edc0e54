#if canImport(Glibc)
import Glibc
#endif

/// Reading `config.toml` only when nobody but its user could have written it. The config names
/// programs tokend runs (`[hooks]`) and endpoints that receive refresh tokens, so a file another
/// user can change is another user's way in (docs/security.md, "The configuration file"). The
/// rules are ssh's `StrictModes`, on the file as resolved through symbolic links:
/// - the file and every directory above it belong to the user or to root;
/// - the file and its directory are writable by nobody else (no group or other write bit);
/// - a directory further up is not writable by others unless it is sticky (`/tmp`): a sticky
///   directory lets nobody replace an entry they do not own;
/// - nor by its group (as ssh's StrictModes), unless sticky or the group is the user's private
///   group (Debian's user-private groups, which Debian's ssh accepts likewise): a group-writable
///   directory lets any member rename the directories below it and put their own config there.
enum ConfigurationFile {
    /// What was read, and whether others may read it (a `client_secret` there deserves a word).
    struct Contents {
        var text: String
        var othersCanRead: Bool
    }

    /// The file's text, or nil when there is no file (an empty configuration).
    static func read(_ path: String, user: uid_t = geteuid()) throws(ConfigurationError) -> Contents? {
        func refuse(_ message: String) -> ConfigurationError { ConfigurationError(path: path, line: nil, key: nil, message: message) }
        guard let resolved = realpath(path, nil) else {
            if errno == ENOENT { return nil }
            throw refuse("cannot be read: \(String(cString: strerror(errno)))")
        }
        let real = String(cString: resolved)
        free(resolved)
        // Opened once and checked through the descriptor: the file read is the file checked.
        let fd = open(real, O_RDONLY | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else { throw refuse("cannot be read: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var file = stat()
        guard fstat(fd, &file) == 0 else { throw refuse("cannot be read: \(String(cString: strerror(errno)))") }
        guard (file.st_mode & S_IFMT) == S_IFREG else { throw refuse("is not a regular file") }
        if let problem = problem(with: file, what: "it", path: real, user: user, strict: true) { throw refuse(problem) }
        var directory = real
        var first = true
        while let slash = directory.lastIndex(of: "/") {
            directory = slash == directory.startIndex ? "/" : String(directory[..<slash])
            var info = stat()
            guard stat(directory, &info) == 0 else { throw refuse("its directory \(directory) cannot be examined") }
            if let problem = problem(with: info, what: "its directory \(directory)", path: directory, user: user, strict: first) {
                throw refuse(problem)
            }
            first = false
            if directory == "/" { break }
        }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw refuse("cannot be read: \(String(cString: strerror(errno)))") }
            if count == 0 { break }
            guard bytes.count + count <= maximumSize else { throw refuse("is larger than \(maximumSize / 1024) KiB; is it the right file?") }
            bytes += buffer[0..<count]
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw refuse("is not UTF-8 text") }
        return Contents(text: text, othersCanRead: file.st_mode & (S_IRGRP | S_IROTH) != 0)
    }

    /// A config of thousands of accounts is a few hundred KiB; more is not a config.
    static let maximumSize = 4 * 1024 * 1024

    /// Why `info` makes the file untrustworthy, with the command that fixes it; nil when it is fine.
    static func problem(with info: stat, what: String, path: String, user: uid_t, strict: Bool) -> String? {
        if info.st_uid != user && info.st_uid != 0 {
            return "\(what) belongs to another user (uid \(info.st_uid)), who could change the programs and endpoints tokend uses; "
                + "refusing it. Fix: keep the config in a directory of your own (chown \(user) \(path))"
        }
        let sticky = info.st_mode & S_ISVTX != 0
        let othersWrite = info.st_mode & S_IWOTH != 0
        let groupWrite = info.st_mode & S_IWGRP != 0 && (strict || !isPrivateGroup(info.st_gid, of: user))
        if (othersWrite || groupWrite) && !(sticky && !strict) {
            return "\(what) is writable by \(othersWrite ? "other users" : "its group"), who could change the programs and endpoints tokend uses; "
                + "refusing it. Fix: chmod go-w \(path)"
        }
        return nil
    }

    /// Whether `gid` is `user`'s private group: the user's primary group, named as the user,
    /// listing no other member (what adduser makes). Another account given the same primary
    /// group would pass unseen: that takes the administrator, who is trusted anyway.
    static func isPrivateGroup(_ gid: gid_t, of user: uid_t) -> Bool {
        // Large enough for any passwd entry and a group of a few thousand members; a larger
        // group (ERANGE) is not a private one.
        var account = passwd(), group = Glibc.group()
        var accountFound: UnsafeMutablePointer<passwd>?, groupFound: UnsafeMutablePointer<Glibc.group>?
        var accountBuffer = [CChar](repeating: 0, count: 16 * 1024), groupBuffer = [CChar](repeating: 0, count: 64 * 1024)
        return accountBuffer.withUnsafeMutableBufferPointer { accountBytes in
            groupBuffer.withUnsafeMutableBufferPointer { groupBytes in
                guard let accountStorage = accountBytes.baseAddress, let groupStorage = groupBytes.baseAddress,
                    getpwuid_r(user, &account, accountStorage, accountBytes.count, &accountFound) == 0, accountFound != nil,
                    account.pw_gid == gid, let userName = account.pw_name.map({ String(cString: $0) }),
                    getgrgid_r(gid, &group, groupStorage, groupBytes.count, &groupFound) == 0, groupFound != nil,
                    group.gr_name.map({ String(cString: $0) }) == userName
                else { return false }
                var member = group.gr_mem
                while let name = member?.pointee ?? nil {
                    guard String(cString: name) == userName else { return false }
                    member = member?.advanced(by: 1)
                }
                return true
            }
        }
    }
}
