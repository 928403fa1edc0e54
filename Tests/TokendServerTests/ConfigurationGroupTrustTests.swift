import Foundation
import Testing
import TokendTestSupport
@testable import TokendServer

/// A directory above the config's own that its group can write to (issue 34): any member of the
/// group could rename the directories below it and put a config of theirs in their place, so it is
/// refused as ssh's StrictModes refuses it, unless the group is the user's private group. Before,
/// only the config's own directory was held to that.
@Suite struct ConfigurationGroupTrustTests {
    /// `TMP/up/tokend/config.toml` with `up` 0775 and owned by group `gid`; the config's path.
    static func config(under directory: TemporaryDirectory, upGroup gid: gid_t) throws -> String {
        let up = directory.path + "/up", own = up + "/tokend", file = own + "/config.toml"
        try FileManager.default.createDirectory(atPath: own, withIntermediateDirectories: true)
        try "".write(toFile: file, atomically: false, encoding: .utf8)
        #expect(chmod(file, 0o600) == 0 && chmod(own, 0o700) == 0 && chmod(up, 0o775) == 0)
        try #require(chown(up, geteuid(), gid) == 0, "chown :\(gid) \(up): \(String(cString: strerror(errno)))")
        return file
    }

    /// A group that is not the user's private one and that the user may give a directory: any
    /// group for root, else one of the user's supplementary groups.
    static func sharedGroup() throws -> gid_t {
        if geteuid() == 0 { return 65534 }
        var groups = [gid_t](repeating: 0, count: 256)
        let count = Int(getgroups(Int32(groups.count), &groups))
        return try #require(groups.prefix(max(count, 0)).first { !ConfigurationFile.isPrivateGroup($0, of: geteuid()) }, "no shared group to test with")
    }

    @Test func aGroupWritableDirectoryAboveIsRefusedWithItsFix() throws {
        let directory = try TemporaryDirectory()
        defer { try? directory.remove() }
        let path = try Self.config(under: directory, upGroup: try Self.sharedGroup())
        #expect(throws: ConfigurationError.self) { try ConfigurationFile.read(path) }
        do {
            _ = try ConfigurationFile.read(path)
        } catch {
            #expect(error.message.contains("writable by its group") && error.message.contains("chmod go-w \(directory.path)/up"), "\(error.message)")
        }
    }

    @Test func theUsersPrivateGroupMayWriteADirectoryAbove() throws {
        let directory = try TemporaryDirectory()
        defer { try? directory.remove() }
        let primary = getpwuid(geteuid()).pointee.pw_gid
        try #require(ConfigurationFile.isPrivateGroup(primary, of: geteuid()), "the user's primary group is not a private one here")
        let path = try Self.config(under: directory, upGroup: primary)
        #expect(try ConfigurationFile.read(path) != nil)
    }
}
