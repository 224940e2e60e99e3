#ifndef SIDECAR_CPOSTGRES_SHIM_H
#define SIDECAR_CPOSTGRES_SHIM_H
// libpq from Debian's libpq-dev. The enums libpq returns are plain C enums,
// which Swift imports awkwardly; these helpers answer the questions the
// Database module asks of them with ints.
#include <libpq-fe.h>
#include <postgres_ext.h>

/// 1 when the connection is usable.
static inline int sidecar_pq_connected(const PGconn *conn) {
    return conn != NULL && PQstatus(conn) == CONNECTION_OK;
}

/// 0: a command succeeded; 1: a query returned rows; 2: the end of a
/// pipeline (its Sync); -1: it failed; -2: skipped, because an earlier
/// command in the same pipeline failed.
static inline int sidecar_pq_result_kind(const PGresult *result) {
    if (result == NULL) return -1;
    switch (PQresultStatus(result)) {
    case PGRES_COMMAND_OK: return 0;
    case PGRES_TUPLES_OK: return 1;
    case PGRES_PIPELINE_SYNC: return 2;
    case PGRES_PIPELINE_ABORTED: return -2;
    default: return -1;
    }
}

/// 1 while the session is inside a transaction block (open, or failed and
/// waiting for ROLLBACK); 0 when idle.
static inline int sidecar_pq_in_transaction(const PGconn *conn) {
    PGTransactionStatusType status = PQtransactionStatus(conn);
    return status == PQTRANS_INTRANS || status == PQTRANS_INERROR;
}

/// The five-character SQLSTATE of a failed result, or "" when unknown
/// (a broken connection reports none).
static inline const char *sidecar_pq_sqlstate(const PGresult *result) {
    const char *state = result == NULL ? NULL : PQresultErrorField(result, PG_DIAG_SQLSTATE);
    return state == NULL ? "" : state;
}

/// The primary error message of a failed result, or "".
static inline const char *sidecar_pq_message(const PGresult *result) {
    const char *message = result == NULL ? NULL : PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY);
    return message == NULL ? "" : message;
}

/// 1 when the server answered a ping on this conninfo (reachable at all).
static inline int sidecar_pq_ping(const char *conninfo) {
    return PQping(conninfo) == PQPING_OK;
}
#endif
