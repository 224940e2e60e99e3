import FoundationEssentials

#if canImport(Glibc)
import Glibc
#endif

/// systemd credentials by name: a unit's `LoadCredential=apns-key:/etc/...`
/// puts the file at `$CREDENTIALS_DIRECTORY/apns-key`, which only the
/// service can read (a `DynamicUser=` service cannot read a root-only
/// file itself). Each credential named after a key flag sets that flag,
/// below `SIDECAR_*` and the command line, which still win.
extension CommandLineInterface {
    /// Credential id → the flag it sets.
    static let credentialFlags: [(credential: String, flag: String)] = [
        ("oba-api-key", "oba-api-key-file"), ("oba-region-api-keys", "oba-region-api-keys-file"),
        ("pirate-weather-key", "pirate-weather-key-file"), ("stripe-secret-key", "stripe-secret-key-file"),
        ("stripe-test-secret-key", "stripe-test-secret-key-file"), ("gorush-webhook-secret", "gorush-webhook-secret-file"),
        ("apns-key", "apns-key-file"), ("fcm-service-account", "fcm-service-account"),
    ]

    /// The flags the credentials present in `$CREDENTIALS_DIRECTORY` set,
    /// with the path each reads.
    static func credentialSettings(environment: [String: String], exists: (String) -> Bool = { access($0, F_OK) == 0 }) -> [(
        flag: String, path: String
    )] {
        guard let directory = environment["CREDENTIALS_DIRECTORY"]?.presence else { return [] }
        return credentialFlags.compactMap { credential, flag in
            let path = directory + "/" + credential
            return exists(path) ? (flag, path) : nil
        }
    }
}
