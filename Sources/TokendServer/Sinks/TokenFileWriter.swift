import TokendCore
#if canImport(Glibc)
import Glibc
#endif

/// The token files' only file-system calls: a file is replaced atomically (a temporary file in
/// the same directory, then `rename`), created 0600 and never through a symbolic link, in a
/// directory that is ours and writable by no one else. Called under `TokenFiles`' lock, which
/// keeps the operations on one path in the order asked.
enum TokenFileWriter {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Replaces the file `name` in `directory` with exactly `token` (no newline: clients send the
    /// file's bytes as they are).
    static func write(_ token: String, named name: String, in directory: String) throws(Failure) {
        let dir = try open(directory)
        defer { close(dir) }
        // Names of token files never start with "." (TokenFile.resolve), so this one is ours.
        let temporary = ".\(name).tmp"
        _ = unlinkat(dir, temporary, 0)  // left over by a daemon killed mid-write
        let fd = openat(dir, temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw failure("cannot create a file in \(directory)") }
        // Held until close: another daemon's clean-up (`removeFiles`) leaves a write in flight alone.
        _ = flock(fd, LOCK_EX)
        // The errno of the step that failed, 0 while all is well.
        var error: Int32 = fchmod(fd, 0o600) == 0 ? 0 : errno  // exact whatever the umask
        var bytes = Array(token.utf8)
        var offset = 0
        while error == 0, offset < bytes.count {
            let count = bytes[offset...].withUnsafeMutableBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if count > 0 {
                offset += count
            } else if count < 0, errno == EINTR {
                continue
            } else {
                error = count < 0 ? errno : EIO
            }
        }
        for index in bytes.indices { bytes[index] = 0 }  // one copy of the token fewer in memory
        close(fd)
        guard error == 0 else {
            _ = unlinkat(dir, temporary, 0)
            throw Failure(description: "cannot write a file in \(directory): \(String(cString: strerror(error)))")
        }
        guard renameat(dir, temporary, dir, name) == 0 else {
            let failed = failure("cannot replace \(directory)/\(name)")
            _ = unlinkat(dir, temporary, 0)
            throw failed
        }
    }

    /// Removes the file `name` in `directory`; one already gone is fine.
    static func remove(named name: String, in directory: String) throws(Failure) {
        var info = stat()
        // No directory, no file: nothing to make just to find it empty.
        guard lstat(directory, &info) == 0 else { return }
        let dir = try open(directory)
        defer { close(dir) }
        guard unlinkat(dir, name, 0) == 0 || errno == ENOENT else { throw failure("cannot remove \(directory)/\(name)") }
    }

    /// Removes every regular file in `directory` whose name is not in `keeping`; returns the
    /// names removed and those that could not be. Never anything but a regular file (a link is
    /// removed neither through nor as itself), never outside the directory: names come from the
    /// directory's own listing and every call is relative to its descriptor. No directory: nothing.
    static func removeFiles(in directory: String, except keeping: Set<String>) throws(Failure) -> (removed: [String], failed: [String]) {
        var info = stat()
        guard lstat(directory, &info) == 0 else { return ([], []) }
        let dir = try open(directory)
        defer { close(dir) }
        // A descriptor of its own for the listing: closedir closes it.
        guard let listing = fdopendir(dup(dir)) else { throw failure("cannot list \(directory)") }
        defer { closedir(listing) }
        var names: [String] = []
        while let entry = readdir(listing) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) { String(cString: UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self)) }
            if name != ".", name != "..", !keeping.contains(name) { names.append(name) }
        }
        var removed: [String] = [], failed: [String] = []
        for name in names.sorted() {
            guard fstatat(dir, name, &info, AT_SYMLINK_NOFOLLOW) == 0, info.st_mode & S_IFMT == S_IFREG, !inFlight(name, in: dir) else { continue }
            if unlinkat(dir, name, 0) == 0 {
                removed.append(name)
            } else if errno != ENOENT {
                failed.append(name)
            }
        }
        return (removed, failed)
    }

    /// Whether `name` is the temporary of a write some process has in flight: `write` holds a
    /// lock on it until it is renamed into place.
    private static func inFlight(_ name: String, in dir: Int32) -> Bool {
        guard name.hasPrefix("."), name.hasSuffix(".tmp") else { return false }
        let fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK
    }

    /// The directory, opened: made 0700 (and its parent, tokend's runtime directory) when
    /// missing; refused when it is a link, not ours, or writable by others, who could then
    /// replace a token file or read one through a link of theirs.
    static func open(_ directory: String) throws(Failure) -> Int32 {
        let parent = TokenFile.split(directory).directory
        for path in [parent, directory] where !path.isEmpty {
            if mkdir(path, 0o700) == 0 { chmod(path, 0o700) }  // exact whatever the umask
        }
        let fd = Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { throw failure("cannot open \(directory)") }
        for (path, descriptor) in [(parent, Glibc.open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)), (directory, fd)] {
            var info = stat()
            let fine = descriptor >= 0 && fstat(descriptor, &info) == 0 && info.st_uid == geteuid() && info.st_mode & 0o022 == 0
            if descriptor != fd, descriptor >= 0 { close(descriptor) }
            guard fine else {
                close(fd)
                throw Failure(description: "\(path) must be a directory of this user that no one else can write to (chmod 700 \(path))")
            }
        }
        return fd
    }

    private static func failure(_ what: String) -> Failure {
        Failure(description: "\(what): \(String(cString: strerror(errno)))")
    }
}
