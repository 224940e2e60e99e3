import FoundationEssentials
import SidecarKit

#if canImport(Glibc)
import Glibc
#endif

// Everything lives in SidecarKit (`SidecarProgram`), so tests can run the
// same code; this file only hands over the arguments and exits.
exit(await SidecarProgram.run(Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment))
