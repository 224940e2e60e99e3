#ifndef SIDECAR_CSQLITE_SHIM_H
#define SIDECAR_CSQLITE_SHIM_H
#include <sqlite3.h>

// SQLITE_TRANSIENT is a cast macro Swift cannot import; binding text and blobs
// needs it so SQLite copies the Swift buffer before the call returns.
static inline int sidecar_sqlite_bind_text(sqlite3_stmt *stmt, int index, const char *text, int length) {
    return sqlite3_bind_text(stmt, index, text, length, SQLITE_TRANSIENT);
}
static inline int sidecar_sqlite_bind_blob(sqlite3_stmt *stmt, int index, const void *bytes, int length) {
    return sqlite3_bind_blob(stmt, index, bytes, length, SQLITE_TRANSIENT);
}

// sqlite3_config is variadic, which Swift cannot call. Memory statistics (on
// by default) take a process-wide mutex around every allocation SQLite makes;
// nothing here reads them. Must run before SQLite initialises; afterwards it
// returns SQLITE_MISUSE and changes nothing.
static inline int sidecar_sqlite_disable_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
#endif
