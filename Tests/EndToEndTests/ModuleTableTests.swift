import Foundation
import Testing

/// docs/architecture.md's "Modules" says what Package.swift says: its table names every target
/// (test targets aside) and its dependency list gives each target's dependencies, both ways.
/// Package.swift is read as text, not through `swift package dump-package`: a SwiftPM run inside
/// `swift test` would wait for the build directory's lock the test run holds.
@Suite struct ModuleTableTests {
    /// A target of Package.swift: its dependencies, targets and products alike, by name.
    struct Target: Equatable {
        var name: String
        var isTest: Bool
        var dependencies: Set<String>
    }

    /// Every `.target`, `.executableTarget`, `.testTarget` and `.systemLibrary` of the manifest.
    static func packageTargets(_ manifest: String) throws -> [Target] {
        // Comments out (a `//` after a space or at a line's start: not the one in "https://").
        let text = manifest.split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.replacing(/(^|\s)\/\/.*$/, with: "") }.joined(separator: "\n")
        guard let list = text.range(of: "targets: [") else { throw HarnessError("Package.swift has no `targets: [`") }
        var targets: [Target] = []
        var rest = text[list.upperBound...]
        while let call = rest.firstMatch(of: /\.(target|executableTarget|testTarget|systemLibrary)\(/) {
            let body = try balanced(text[...], from: call.range.upperBound, open: "(", close: ")")
            guard let name = body.firstMatch(of: /name: "([^"]+)"/) else { throw HarnessError("a target without a name: \(body.prefix(80))") }
            var dependencies: Set<String> = []
            if let start = body.range(of: "dependencies: [") {
                var list = String(try balanced(body, from: start.upperBound, open: "[", close: "]"))
                for product in list.matches(of: /\.product\(name: "([^"]+)"[^)]*\)/) { dependencies.insert(String(product.1)) }
                list.replace(/\.product\([^)]*\)/, with: "")
                for target in list.matches(of: /"([^"]+)"/) { dependencies.insert(String(target.1)) }
            }
            targets.append(Target(name: String(name.1), isTest: call.1 == "testTarget", dependencies: dependencies))
            rest = text[body.endIndex...]
        }
        return targets
    }

    /// The text between an opening bracket (just before `start`) and its closing one.
    static func balanced(_ text: Substring, from start: String.Index, open: Character, close: Character) throws -> Substring {
        var depth = 1
        var index = start
        while index < text.endIndex {
            if text[index] == open { depth += 1 }
            if text[index] == close {
                depth -= 1
                if depth == 0 { return text[start..<index] }
            }
            index = text.index(after: index)
        }
        throw HarnessError("Package.swift: no closing \(close) after \(text[start...].prefix(80))")
    }

    /// The "Modules" section of docs/architecture.md: the targets its table names (first column)
    /// and its dependency list (the lines after the `module-dependencies` marker).
    static func documented(_ architecture: String) throws -> (table: Set<String>, dependencies: [String: Set<String>]) {
        guard let section = architecture.components(separatedBy: "\n## Modules\n").dropFirst().first?.components(separatedBy: "\n## ").first else {
            throw HarnessError("docs/architecture.md has no section \"## Modules\"")
        }
        let lines = section.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var table: Set<String> = []
        for line in lines where line.hasPrefix("| `") {
            let first = line.dropFirst(2).prefix { $0 != "|" }
            for name in first.matches(of: /`([^`]+)`/) { table.insert(String(name.1)) }
        }
        guard let marker = lines.firstIndex(where: { $0.hasPrefix("<!-- module-dependencies") }) else {
            throw HarnessError("docs/architecture.md's \"Modules\" has no <!-- module-dependencies --> list")
        }
        var dependencies: [String: Set<String>] = [:]
        for line in lines[(marker + 1)...] {
            guard line.hasPrefix("- `"), let colon = line.range(of: "`: ") else { break }
            let name = String(line[line.index(line.startIndex, offsetBy: 3)..<colon.lowerBound])
            let named = line[colon.upperBound...].matches(of: /`([^`]+)`/).map { String($0.1) }
            if dependencies.updateValue(Set(named), forKey: name) != nil { throw HarnessError("\(name) is listed twice") }
        }
        return (table, dependencies)
    }

    /// What differs between the two, one sentence each; empty when they agree.
    static func differences(package targets: [Target], table: Set<String>, dependencies: [String: Set<String>]) -> [String] {
        var found: [String] = []
        let modules = targets.filter { !$0.isTest }
        let names = Set(modules.map(\.name))
        for missing in names.subtracting(table).sorted() { found.append("the table has no row for target \(missing)") }
        for extra in table.subtracting(names).sorted() { found.append("the table names \(extra), which Package.swift has no (non-test) target of") }
        for extra in Set(dependencies.keys).subtracting(names).sorted() { found.append("the dependency list names \(extra), which Package.swift has no (non-test) target of") }
        for target in modules.sorted(by: { $0.name < $1.name }) {
            guard let listed = dependencies[target.name] else {
                found.append("the dependency list has no line for \(target.name) (Package.swift: \(target.dependencies.sorted().joined(separator: ", ")))")
                continue
            }
            let undocumented = target.dependencies.subtracting(listed).sorted()
            let stale = listed.subtracting(target.dependencies).sorted()
            if !undocumented.isEmpty { found.append("\(target.name) depends on \(undocumented.joined(separator: ", ")) in Package.swift, not in the docs") }
            if !stale.isEmpty { found.append("\(target.name) depends on \(stale.joined(separator: ", ")) in the docs, not in Package.swift") }
        }
        return found
    }

    @Test func theModuleTableIsPackageSwift() throws {
        let targets = try Self.packageTargets(try String(contentsOf: Repository.root.appendingPathComponent("Package.swift"), encoding: .utf8))
        // The parse found the manifest's targets: a parse that found none would agree with nothing.
        #expect(targets.contains(Target(name: "TokendCore", isTest: false, dependencies: [])))
        #expect(targets.contains { $0.name == "TokendCoreTests" && $0.isTest })
        let (table, dependencies) = try Self.documented(
            try String(contentsOf: Repository.root.appendingPathComponent("docs/architecture.md"), encoding: .utf8))
        let found = Self.differences(package: targets, table: table, dependencies: dependencies)
        #expect(found.isEmpty, "docs/architecture.md (\"Modules\") and Package.swift differ:\n\(found.joined(separator: "\n"))")
    }

    /// The check itself, on a small manifest and a doc that disagree in every way it looks for.
    @Test func theCheckNamesEachDifference() throws {
        let manifest = """
            let package = Package(
                dependencies: [.package(url: "https://example.com/x.git", from: "1.0.0")],  // a comment with "Quoted"
                targets: [
                    .target(name: "A"),
                    .target(name: "B", dependencies: ["A", .product(name: "P", package: "x")], cSettings: [.define("D")]),
                    .target(name: "C", dependencies: ["B"]),
                    .testTarget(name: "ATests", dependencies: ["A"]),
                ]
            )
            """
        let targets = try Self.packageTargets(manifest)
        #expect(targets == [
            Target(name: "A", isTest: false, dependencies: []), Target(name: "B", isTest: false, dependencies: ["A", "P"]),
            Target(name: "C", isTest: false, dependencies: ["B"]), Target(name: "ATests", isTest: true, dependencies: ["A"]),
        ])
        let doc = """
            # A document

            ## Modules

            | target | owns |
            | --- | --- |
            | `A`, `B` | things |
            | `Z` | nothing real |

            <!-- module-dependencies -->
            - `A`: nothing
            - `B`: `A`, `Q`
            - `Z`: `A`

            ## Next
            """
        let (table, dependencies) = try Self.documented(doc)
        #expect(table == ["A", "B", "Z"])
        let found = Self.differences(package: targets, table: table, dependencies: dependencies)
        #expect(found == [
            "the table has no row for target C",
            "the table names Z, which Package.swift has no (non-test) target of",
            "the dependency list names Z, which Package.swift has no (non-test) target of",
            "B depends on P in Package.swift, not in the docs",
            "B depends on Q in the docs, not in Package.swift",
            "the dependency list has no line for C (Package.swift: B)",
        ])
    }
}
