import TokenctlKit
#if canImport(Glibc)
import Glibc
#endif

// Container tools run `docker-credential-tokend get|store|erase|list` (README, "Container
// registries"); the helper's status and output follow their protocol (DockerCredentialHelper).
exit(DockerCredentialHelper.runAsProcess(Array(CommandLine.arguments.dropFirst())))
