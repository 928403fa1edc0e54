import TokendProtocol
#if canImport(Glibc)
import Glibc
#endif

// The one place tokenctl exits: commands throw `TokenctlError`, `Tokenctl.run` maps it to a
// status (sysexits, README, "Exit codes"), and the status is handed to the shell here.
let status = Tokenctl.run(
    Array(CommandLine.arguments.dropFirst()), environment: SocketPath.processEnvironment(), console: SystemConsole())
exit(status)
