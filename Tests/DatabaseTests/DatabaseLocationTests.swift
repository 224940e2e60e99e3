import Testing

@testable import Database

/// Every form a database location is given in, as logs and errors show it:
/// never the password.
@Suite("Database: locations as people see them")
struct DatabaseLocationTests {
    @Test(arguments: [
        ("postgres://sidecar:S3CRET@db.example.org:5433/sidecar", "postgres://sidecar@db.example.org:5433/sidecar"),
        ("postgresql://sidecar:S3CRET@db.example.org/sidecar?sslmode=require", "postgres://sidecar@db.example.org:5432/sidecar"),
        ("postgres://sidecar@db/sidecar?password=S3CRET&sslmode=require", "postgres://sidecar@db:5432/sidecar"),
        ("postgres://sidecar:S3CRET@db/sidecar?sslmode=bogus", "postgres://sidecar@db/sidecar"),
        ("postgres://sidecar:S3CRET@[::1]:5432/x?application_name=a", "postgres://sidecar@::1:5432/x"),
        ("/var/lib/sidecar/sidecar.sqlite3", "/var/lib/sidecar/sidecar.sqlite3"),
        ("host=db password=S3CRET dbname=x", "host=db password=[hidden] dbname=x"),
        ("host=db PASSWORD = 'S3 CRET' user=u", "host=db PASSWORD=[hidden] user=u"),
    ])
    func noPasswordIsShown(raw: String, shown: String) {
        #expect(DatabaseLocation.forHumans(raw) == shown)
        #expect(!DatabaseLocation.forHumans(raw).contains("S3"))
    }
}
