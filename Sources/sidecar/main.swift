import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import SidecarKit

// Everything lives in SidecarKit (`SidecarProgram`), so tests can run the
// same code; this file only hands over the arguments and exits.
exit(await SidecarProgram.run(Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment))
