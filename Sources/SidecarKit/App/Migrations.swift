import Database

/// Every schema migration, from every feature, in version order. A feature
/// adds its migrations with the next free version numbers.
enum Migrations {
    static var all: [Migration] {
        PushRegistrationStore.migrations + AlarmStore.migrations + AlertStore.migrations + GhostBusStore.migrations + SurveyStore.migrations
            + LiveActivityStore.migrations + CoordinationStore.migrations + RegionExchange.migrations + ConsoleStore.migrations + RelayBinder.migrations
    }
}

/// The migrations `sidecar migrate` applies (the same list `serve` applies).
public enum SidecarMigrations {
    public static var all: [Migration] { Migrations.all }
}
