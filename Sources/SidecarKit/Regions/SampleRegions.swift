/// The regions directory `sidecar serve` uses when `--regions` is not given,
/// so a first run answers at once. Two regions from the public directory,
/// pointing at a sidecar on this machine.
enum SampleRegions {
    static let json = """
        {
          "version": 3,
          "code": 200,
          "text": "OK",
          "data": {
            "list": [
              {
                "id": 0,
                "regionName": "Tampa Bay",
                "obaBaseUrl": "https://api.tampa.onebusaway.org/api/",
                "sidecarBaseUrl": "http://localhost:8080",
                "bounds": [
                  {"lat": 27.9769105, "lon": -82.445851, "latSpan": 0.542461, "lonSpan": 0.576358},
                  {"lat": 27.91925, "lon": -82.652145, "latSpan": 0.47208, "lonSpan": 0.39677}
                ]
              },
              {
                "id": 1,
                "regionName": "Puget Sound",
                "obaBaseUrl": "https://api.pugetsound.onebusaway.org/",
                "sidecarBaseUrl": "http://localhost:8080",
                "bounds": [
                  {"lat": 47.221315, "lon": -122.4051325, "latSpan": 0.33704, "lonSpan": 0.440483},
                  {"lat": 47.5607395, "lon": -122.1462785, "latSpan": 0.743251, "lonSpan": 0.720901}
                ]
              }
            ]
          }
        }
        """
}
