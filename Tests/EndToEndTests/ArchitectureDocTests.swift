import Foundation
import Testing

/// docs/architecture.md's "Where to make a change" names files that exist: its table (and the
/// walks under it) list every file a change of each kind touches, so a file moved or renamed
/// without the table is caught here, not by the next newcomer.
@Suite struct ArchitectureDocTests {
    /// The repository paths the section names: each backquoted text under a top-level folder
    /// (`Sources/…`, `Tests/…`, `docs/…`, …) or a top-level file (`README.md`).
    static func namedPaths(_ architecture: String) throws -> [String] {
        guard let section = architecture.components(separatedBy: "\n## Where to make a change\n").dropFirst().first?.components(separatedBy: "\n## ").first
        else {
            throw HarnessError("docs/architecture.md has no section \"## Where to make a change\"")
        }
        return section.matches(of: /`([^`\s]+)`/).map { String($0.1) }.filter { text in
            text == "README.md" || text.firstMatch(of: /^(Sources|Tests|docs|scripts|systemd|packaging|Benchmarks)\//) != nil
        }
    }

    /// The paths of `named` that are not in the tree under `root`. A path with a placeholder
    /// (`Sources/TokendProtocol/<Name>Args.swift`: the file a change adds) needs its folder.
    static func missing(_ named: [String], under root: URL) -> [String] {
        named.filter { path in
            var existing = path
            if let placeholder = path.firstIndex(of: "<") {
                existing = String(path[..<placeholder])
                existing = String(existing[...(existing.lastIndex(of: "/") ?? existing.startIndex)])
            }
            return !FileManager.default.fileExists(atPath: root.appendingPathComponent(existing).path)
        }
    }

    @Test func everyFileTheChangeTableNamesExists() throws {
        let named = try Self.namedPaths(try String(contentsOf: Repository.root.appendingPathComponent("docs/architecture.md"), encoding: .utf8))
        // The parse found the table: one that found nothing would pass on anything.
        #expect(named.contains("Sources/TokendProtocol/RequestField.swift"))
        #expect(named.count > 40, "\(named.count) paths")
        let missing = Self.missing(named, under: Repository.root)
        #expect(missing.isEmpty, "docs/architecture.md (\"Where to make a change\") names files that do not exist:\n\(missing.joined(separator: "\n"))")
    }

    /// The check itself, on a small doc naming a file that exists, one that does not, a new file
    /// in a folder that exists and one in a folder that does not.
    @Test func theCheckNamesEachMissingFile() throws {
        let doc = """
            # A doc

            ## Where to make a change

            | change | files |
            | --- | --- |
            | a thing | `README.md`, `Sources/TokendProtocol/Command.swift`, `Sources/TokendProtocol/Gone.swift`, `tokenctl token` |
            | a new thing | `Sources/TokendProtocol/<Name>Args.swift`, `Sources/Nowhere/<Name>.swift` |

            ## A request's path

            `Sources/Elsewhere.swift` is not the section's.
            """
        let named = try Self.namedPaths(doc)
        #expect(named == [
            "README.md", "Sources/TokendProtocol/Command.swift", "Sources/TokendProtocol/Gone.swift", "Sources/TokendProtocol/<Name>Args.swift",
            "Sources/Nowhere/<Name>.swift",
        ])
        #expect(Self.missing(named, under: Repository.root) == ["Sources/TokendProtocol/Gone.swift", "Sources/Nowhere/<Name>.swift"])
        #expect(throws: HarnessError.self) { try Self.namedPaths("## Modules\n") }
    }
}
