import Foundation
import TokendTestSupport

/// The mappings of process `pid` (/proc/PID/maps), each line split into its fields: address
/// range, permissions, offset, device, inode and, for a file or a named area, its path.
func processMappings(_ pid: Int32) throws -> [[Substring]] {
    // Read to its end: /proc files say size 0, and a read that trusts the size stops early.
    guard let file = FileHandle(forReadingAtPath: "/proc/\(pid)/maps") else { throw HarnessError("no /proc/\(pid)/maps") }
    defer { try? file.close() }
    let maps = String(decoding: try file.readToEnd() ?? Data(), as: UTF8.self)
    // The stack lies above every mmap'ed file (the mmap area grows down from below it): a
    // list without it was cut short.
    guard maps.contains("[stack]") else { throw HarnessError("/proc/\(pid)/maps read short") }
    return maps.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true) }
}
