import Foundation
import Testing
import TokendFuzzing
import TokendProtocol

/// The fuzz target's corpus, replayed in every test run: each input goes through the same
/// framer, dispatcher and invariants as under libFuzzer (docs/fuzzing.md). An invariant that
/// breaks stops the process with a precondition failure naming it, as it does under libFuzzer.
@Suite(.serialized) struct CorpusReplayTests {
    static let corpus = Bundle.module.resourceURL!.appendingPathComponent("Corpus")

    @Test func everyCorpusInputKeepsTheInvariants() async throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.corpus.path).sorted()
        #expect(names.count >= 40, "the seed corpus is there")
        for name in names {
            await RequestFuzzer.run(Array(try Data(contentsOf: Self.corpus.appendingPathComponent(name))))
        }
    }

    /// Lines at the 64 KiB cap are made here rather than committed: a line exactly at the cap,
    /// the same with CRLF, one byte over, and a never-ending one.
    @Test(arguments: [
        ("at the cap", 0, "\n"), ("at the cap, CRLF", 0, "\r\n"), ("at the cap, CR then nothing", 0, "\r"),
        ("one over", 1, "\n"), ("one over, unterminated", 1, ""), ("far over", 100_000, ""),
    ])
    func linesAroundTheCap(_ label: String, over: Int, terminator: String) async {
        let head = Array(#"{"op":"hello","id":"#.utf8)
        let padding = LineFramer.maximumLineLength + over - head.count - 1
        let line = head + Array(repeating: UInt8(ascii: "7"), count: padding) + Array("}".utf8)
        #expect(line.count == LineFramer.maximumLineLength + over, "\(label)")
        // A request after a terminated line shows the framer carrying on (or not, past the cap).
        let after = terminator.hasSuffix("\n") ? Array(#"{"op":"hello"}"#.utf8) + [10] : []
        await RequestFuzzer.run(Array(#"{"op":"list"}"#.utf8) + [10] + line + Array(terminator.utf8) + after)
    }
}
