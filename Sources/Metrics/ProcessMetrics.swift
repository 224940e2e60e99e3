#if canImport(Glibc)
import Glibc
#endif

/// The process's own memory, CPU time, threads and file descriptors, read
/// from Linux's /proc when scraped (the `process_*` metrics Prometheus's
/// client libraries expose, here under the service's prefix).
public enum ProcessMetrics {
    /// The families, named `<prefix>process_...`.
    public static func collect(prefix: String) -> [CollectedFamily] {
        var families: [CollectedFamily] = []
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let pageSize = Double(sysconf(Int32(_SC_PAGESIZE)))
        if let stat = readFile("/proc/self/stat"), let fields = statFields(stat), fields.count > 21, ticks > 0 {
            // Fields after the command name, from field 3 (state) on: utime
            // is field 14, stime 15, num_threads 20, starttime 22, vsize 23, rss 24.
            func field(_ number: Int) -> Double { Double(fields[number - 3]) ?? 0 }
            families.append(
                CollectedFamily(
                    name: prefix + "process_cpu_seconds_total", help: "User and system CPU time spent, in seconds.",
                    kind: .counter, value: (field(14) + field(15)) / ticks))
            families.append(
                CollectedFamily(
                    name: prefix + "process_threads", help: "Operating system threads in the process.",
                    kind: .gauge, value: field(20)))
            families.append(
                CollectedFamily(
                    name: prefix + "process_virtual_memory_bytes", help: "Virtual memory size, in bytes.",
                    kind: .gauge, value: field(23)))
            families.append(
                CollectedFamily(
                    name: prefix + "process_resident_memory_bytes", help: "Resident memory size, in bytes.",
                    kind: .gauge, value: field(24) * pageSize))
            if let boot = bootTime() {
                families.append(
                    CollectedFamily(
                        name: prefix + "process_start_time_seconds", help: "Start time of the process since the Unix epoch, in seconds.",
                        kind: .gauge, value: boot + field(22) / ticks))
            }
        }
        if let open = openFileDescriptors() {
            families.append(CollectedFamily(name: prefix + "process_open_fds", help: "Open file descriptors.", kind: .gauge, value: Double(open)))
        }
        var limit = rlimit()
        if getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 {
            families.append(
                CollectedFamily(
                    name: prefix + "process_max_fds", help: "The most file descriptors the process may open.",
                    kind: .gauge, value: Double(limit.rlim_cur)))
        }
        return families
    }

    /// `/proc/self/stat` after the parenthesised command name (which may
    /// itself contain spaces and parentheses), split on spaces.
    static func statFields(_ stat: String) -> [Substring]? {
        guard let close = stat.lastIndex(of: ")") else { return nil }
        return stat[stat.index(after: close)...].split(separator: " ")
    }

    static func bootTime() -> Double? {
        guard let stat = readFile("/proc/stat") else { return nil }
        for line in stat.split(separator: "\n") where line.hasPrefix("btime ") {
            return Double(line.dropFirst(6).filter { $0 != " " })
        }
        return nil
    }

    static func openFileDescriptors() -> Int? {
        guard let directory = opendir("/proc/self/fd") else { return nil }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            let isDot = withUnsafeBytes(of: entry.pointee.d_name) { $0.first == UInt8(ascii: ".") }
            if !isDot { count += 1 }
        }
        // Less the descriptor opendir itself holds.
        return max(count - 1, 0)
    }

    static func readFile(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 1 << 20 {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            bytes.append(contentsOf: buffer[0..<count])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
