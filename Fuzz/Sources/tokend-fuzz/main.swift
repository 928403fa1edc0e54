#if canImport(Glibc)
import Glibc
#endif
import TokendFuzzing

/// libFuzzer's entry point: one input, one connection's worth of bytes. Findings are crashes
/// (a failed precondition names the broken invariant); the return value must be 0.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    RequestFuzzer.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

/// libFuzzer's driver (compiler-rt, linked by -sanitize=fuzzer). SwiftPM gives every executable
/// a `main` of its own, which keeps libFuzzer's out, so this one hands over to it explicitly.
@_silgen_name("LLVMFuzzerRunDriver")
func runDriver(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

var argc = CommandLine.argc
var argv = CommandLine.unsafeArgv
exit(runDriver(&argc, &argv, fuzz))
