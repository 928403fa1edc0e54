/// A `precondition` that keeps its message in optimised builds: the fuzzer is built with -O,
/// where a failed `precondition` traps silently, and a finding must say which invariant broke.
func invariant(
    _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line
) {
    if !condition() { fatalError("invariant broken: \(message())", file: file, line: line) }
}

func invariantBroken(_ message: String, file: StaticString = #fileID, line: UInt = #line) -> Never {
    fatalError("invariant broken: \(message)", file: file, line: line)
}
