import TokenctlKit
#if canImport(Glibc)
import Glibc
#endif

// The one place tokenctl exits: commands throw `TokenctlError`, `Tokenctl.run` maps it to a
// status (sysexits, README, "Exit codes"), and the status is handed to the shell here.
// `tokenctl token ACCOUNT` is served from argv itself, before `CommandLine.arguments` is built.
exit(Tokenctl.runPlainToken(CommandLine.argc, CommandLine.unsafeArgv) ?? Tokenctl.runAsProcess(Array(CommandLine.arguments.dropFirst())))
