import Foundation

/// The checkout the tests run in: its README and docs (whose snippets tests run as written), the
/// client scripts in Tests/Clients and the virtualenv scripts/test makes for them.
enum Repository {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// A file of the checkout, by its path from the root.
    static func path(_ relative: String) -> String { root.appendingPathComponent(relative).path }

    /// The README's text from after the heading line `heading` (such as "### Token files"):
    /// where a test finds the snippet it runs.
    static func readmeSection(_ heading: String) throws -> String {
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        guard let section = readme.components(separatedBy: heading).dropFirst().first else {
            throw HarnessError("README.md has no section \(heading)")
        }
        return section
    }

    /// The python of the clients' virtualenv (scripts/lib/deps.sh, `ensure_cloud_clients`).
    static var clientsPython: String { path(".venv-clients/bin/python") }
}
