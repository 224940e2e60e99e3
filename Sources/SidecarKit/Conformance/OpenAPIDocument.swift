import HTTPServer

/// This server's own OpenAPI description, served at `GET /openapi.yaml`.
/// CI checks it covers every operation and schema of the shared contract
/// (shared/spec/openapi.yaml) with compatible shapes, and runs schemathesis
/// against the contract. Keep it in step with the routes.
enum OpenAPIDocument {
    static var routes: [Route] {
        let body = Array(yaml.utf8)
        return [Route("GET", "/openapi.yaml", parsesParameters: false, immediate: { _ in
            .bytes(200, contentType: "application/yaml; charset=utf-8", body)
        }) { _ in .bytes(200, contentType: "application/yaml; charset=utf-8", body) }]
    }

    static let yaml = #"""
openapi: 3.1.0
info:
  title: Sidecar (OneBusAway sidecar server)
  version: 0.1.0
  summary: What this Sidecar serves to the OneBusAway apps and to agency operators.
  description: |
    The rider API follows the OneBusAway sidecar services specification; this
    document adds what this implementation serves beyond it (health, this
    document, the alerts feed's debugging rendering, the admin API). Region
    path segments are the directory's integer id, optionally followed by a
    dash and anything (the id-prefixed slug of handed-out URLs).
  license:
    name: Apache 2.0
    identifier: Apache-2.0
security: []
paths:
  /healthz:
    get:
      operationId: health
      summary: Storage check (file still the one open, a fresh read, a committed write, disk room); also HEAD
      responses:
        '200':
          description: Storage works.
          content:
            application/json:
              schema: {type: object, required: [status], properties: {status: {type: string}}}
        '503':
          description: Storage is failing; the reason is given.
          content:
            application/json:
              schema:
                type: object
                required: [status, reason, problems]
                properties:
                  status: {type: string}
                  reason: {type: string}
                  problems: {type: array, items: {type: string}}
  /openapi.yaml:
    get:
      operationId: openAPIDocument
      summary: This document
      responses:
        '200':
          description: OpenAPI 3.1 YAML.
          content:
            application/yaml:
              schema: {type: string}
  /api/v1/regions/{regionId}/alerts:
    get:
      operationId: getAlertsFeed
      summary: Service alerts as a GTFS-realtime FeedMessage (also at alerts.pb)
      parameters:
        - $ref: '#/components/parameters/RegionId'
        - name: test
          in: query
          required: false
          schema: {type: string}
          description: Any non-blank value adds alerts marked as tests.
        - $ref: '#/components/parameters/IfNoneMatch'
        - $ref: '#/components/parameters/IfModifiedSince'
      responses:
        '200':
          description: |
            Binary protobuf FeedMessage; never an empty body. The header's
            timestamp is the response's time rounded down to the minute. Each
            alert carries active_period and communication_period (the shown
            period) and, when set, impact_period.
          headers:
            ETag: {$ref: '#/components/headers/ETag'}
            Last-Modified: {$ref: '#/components/headers/LastModified'}
            Cache-Control: {$ref: '#/components/headers/FeedCacheControl'}
          content:
            application/octet-stream:
              schema: {type: string, format: binary}
        '304':
          $ref: '#/components/responses/FeedNotModified'
        '404':
          $ref: '#/components/responses/RegionNotFound'
  /api/v1/regions/{regionId}/alerts.pbtext:
    get:
      operationId: getAlertsFeedJSON
      summary: The same feed as protobuf JSON, for debugging
      parameters:
        - $ref: '#/components/parameters/RegionId'
        - name: test
          in: query
          required: false
          schema: {type: string}
        - $ref: '#/components/parameters/IfNoneMatch'
        - $ref: '#/components/parameters/IfModifiedSince'
      responses:
        '200':
          description: Protobuf JSON (its own ETag, distinct from the binary form's).
          headers:
            ETag: {$ref: '#/components/headers/ETag'}
            Last-Modified: {$ref: '#/components/headers/LastModified'}
            Cache-Control: {$ref: '#/components/headers/FeedCacheControl'}
          content:
            text/plain:
              schema: {type: string}
        '304':
          $ref: '#/components/responses/FeedNotModified'
        '404':
          $ref: '#/components/responses/RegionNotFound'
  /api/v1/regions/{regionId}/surveys:
    get:
      operationId: listSurveys
      summary: Surveys available now (also at surveys.json)
      parameters:
        - $ref: '#/components/parameters/RegionId'
        - name: user_id
          in: query
          required: true
          schema: {type: string}
          description: The device's anonymous id; a blank value is refused like a missing one.
      responses:
        '200':
          description: Active surveys of the region.
          content:
            application/json:
              schema: {$ref: '#/components/schemas/SurveyList'}
        '404':
          $ref: '#/components/responses/RegionNotFound'
        '422':
          description: user_id missing or blank.
          content:
            application/json:
              schema: {$ref: '#/components/schemas/LegacyErrors'}
  /api/v1/survey_responses:
    post:
      operationId: createSurveyResponse
      summary: Record a survey response (also with a trailing slash)
      requestBody:
        required: true
        content:
          application/x-www-form-urlencoded:
            schema: {$ref: '#/components/schemas/SurveyResponseCreateRequest'}
          application/json:
            schema: {$ref: '#/components/schemas/SurveyResponseCreateRequest'}
      responses:
        '201':
          description: Recorded.
          content:
            application/json:
              schema: {$ref: '#/components/schemas/SurveyResponseCreated'}
        '404':
          description: No such survey.
          content:
            application/json:
              schema: {$ref: '#/components/schemas/SimpleError'}
        '422':
          description: Invalid input.
          content:
            application/json:
              schema: {$ref: '#/components/schemas/LegacyErrors'}
        '429':
          description: Too many writes from this address.
  /api/v1/survey_responses/{responseId}:
    parameters:
      - name: responseId
        in: path
        required: true
        schema: {type: string}
    post:
      operationId: amendSurveyResponsePost
      summary: Merge answers into a response by question_id
      requestBody: {$ref: '#/components/requestBodies/SurveyResponseAmend'}
      responses:
        '200': {$ref: '#/components/responses/SurveyResponseAmended'}
        '404': {$ref: '#/components/responses/SurveyResponseNotFound'}
        '422': {$ref: '#/components/responses/SurveyResponseInvalid'}
        '429': {description: Too many writes from this address.}
    patch:
      operationId: amendSurveyResponse
      summary: Merge answers into a response by question_id
      requestBody: {$ref: '#/components/requestBodies/SurveyResponseAmend'}
      responses:
        '200': {$ref: '#/components/responses/SurveyResponseAmended'}
        '404': {$ref: '#/components/responses/SurveyResponseNotFound'}
        '422': {$ref: '#/components/responses/SurveyResponseInvalid'}
        '429': {description: Too many writes from this address.}
    put:
      operationId: amendSurveyResponsePut
      summary: Merge answers into a response by question_id
      requestBody: {$ref: '#/components/requestBodies/SurveyResponseAmend'}
      responses:
        '200': {$ref: '#/components/responses/SurveyResponseAmended'}
        '404': {$ref: '#/components/responses/SurveyResponseNotFound'}
        '422': {$ref: '#/components/responses/SurveyResponseInvalid'}
        '429': {description: Too many writes from this address.}
  /api/v1/regions/{regionId}/weather:
    get:
      operationId: getWeather
      summary: Forecast for the region's centre (also at weather.json)
      parameters:
        - $ref: '#/components/parameters/RegionId'
      responses:
        '200':
          description: Forecast.
          content:
            application/json:
              schema: {$ref: '#/components/schemas/WeatherForecast'}
        '403':
          description: No provider key, or the provider failed.
        '404':
          $ref: '#/components/responses/RegionNotFound'
  /api/v1/regions/{regionId}/vehicles:
    get:
      operationId: searchVehicles
      summary: Vehicle-id substring search over the region's fleet
      parameters:
        - $ref: '#/components/parameters/RegionId'
        - name: query
          in: query
          required: false
          schema: {type: string}
      responses:
        '200':
          description: Matches, at most 250; [] for queries under 3 or over 64 characters.
          content:
            application/json:
              schema: {type: array, items: {$ref: '#/components/schemas/VehicleMatch'}}
        '404':
          $ref: '#/components/responses/RegionNotFound'
        '502':
          description: The region's OneBusAway server failed.
          content:
            application/json:
              schema: {$ref: '#/components/schemas/SimpleError'}
        '429': {description: Too many fleet lookups caused by this client address; see Retry-After.}
  /api/v1/regions/{regionId}/alarms:
    post:
      operationId: createAlarmV1
      summary: Legacy alarm registration, idempotent per (user_push_id, trip_id, stop_id, service_date)
      deprecated: true
      parameters:
        - $ref: '#/components/parameters/RegionId'
      requestBody:
        required: true
        content:
          application/x-www-form-urlencoded:
            schema: {$ref: '#/components/schemas/AlarmCreateRequestV1'}
          application/json:
            schema: {$ref: '#/components/schemas/AlarmCreateRequestV1'}
      responses:
        '201': {$ref: '#/components/responses/ResourceUrlCreated'}
        '404': {$ref: '#/components/responses/RegionNotFound'}
        '422':
          description: Invalid input.
          content:
            application/json:
              schema: {$ref: '#/components/schemas/ErrorWithMessages'}
        '429': {description: Too many alarm writes or lookups from this client address; see Retry-After.}
        '500':
          description: Never sent here; listed because the contract documents it for v1.
        '502':
          description: The arrival could not be looked up (v1 does not fall back to a generic message).
          content:
            application/json:
              schema: {$ref: '#/components/schemas/ErrorWithMessages'}
  /api/v1/regions/{regionId}/alarms/{alarmToken}:
    delete:
      operationId: deleteAlarmV1
      summary: Cancel an alarm
      deprecated: true
      parameters:
        - $ref: '#/components/parameters/RegionId'
        - $ref: '#/components/parameters/AlarmToken'
      responses:
        '204': {description: Deleted; the row is gone.}
        '404': {description: No such alarm. Empty body.}
        '429': {description: Too many writes from this client address; see Retry-After.}
        '503': {description: The delete failed; nothing changed.}
  /api/v1/payment_intents:
    post:
      operationId: createPaymentIntent
      summary: Stripe donation (one-time or monthly); the body is JSON whatever its Content-Type
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: '#/components/schemas/PaymentIntentRequest'}
      responses:
        '200':
          description: Secrets for the PaymentSheet.
          content:
            application/json:
              schema:
                oneOf:
                  - $ref: '#/components/schemas/OneTimePaymentIntentResponse'
                  - $ref: '#/components/schemas/RecurringPaymentIntentResponse'
        '400': {description: The body is not a usable donation.}
        '404': {description: No Stripe key is configured; the apps hide donations.}
        '429': {description: 10 per minute per client address.}
        '500': {description: Stripe refused. Empty body.}
  /api/v2/regions/{regionId}/alarms:
    post:
      operationId: createAlarmV2
      summary: Register a departure alarm
      parameters:
        - $ref: '#/components/parameters/RegionId'
      requestBody:
        required: true
        content:
          application/x-www-form-urlencoded:
            schema: {$ref: '#/components/schemas/AlarmCreateRequestV2'}
          application/json:
            schema: {$ref: '#/components/schemas/AlarmCreateRequestV2'}
      responses:
        '201': {$ref: '#/components/responses/ResourceUrlCreated'}
        '404': {$ref: '#/components/responses/RegionNotFound'}
        '422':
          description: Invalid input, a field over its length cap, or too many alarms waiting for this device.
          content:
            application/json:
              schema: {$ref: '#/components/schemas/ErrorWithMessages'}
        '429': {description: Too many alarm writes or lookups from this client address; see Retry-After.}
  /api/v2/regions/{regionId}/alarms/{alarmToken}:
    delete:
      operationId: deleteAlarmV2
      summary: Cancel an alarm
      parameters:
        - $ref: '#/components/parameters/RegionId'
        - $ref: '#/components/parameters/AlarmToken'
      responses:
        '204': {description: Deleted; the row is gone.}
        '404': {description: No such alarm. Empty body.}
        '429': {description: Too many writes from this client address; see Retry-After.}
        '503': {description: The delete failed; nothing changed.}
  /api/v2/regions/{regionId}/live_activities:
    post:
      operationId: registerLiveActivity
      summary: Register or refresh a Live Activity (upsert on activity_id; the first URL is kept; expires 8 hours after the first registration)
      parameters:
        - $ref: '#/components/parameters/RegionId'
      requestBody:
        required: true
        content:
          application/x-www-form-urlencoded:
            schema: {$ref: '#/components/schemas/LiveActivityCreateRequest'}
          application/json:
            schema: {$ref: '#/components/schemas/LiveActivityCreateRequest'}
      responses:
        '201': {$ref: '#/components/responses/ResourceUrlCreated'}
        '404': {$ref: '#/components/responses/RegionNotFound'}
        '422':
          description: Invalid input, a field over its length cap, or too many activities for this push token.
          content:
            application/json:
              schema: {$ref: '#/components/schemas/ErrorWithMessages'}
        '429': {description: Too many writes from this client address; see Retry-After.}
  /api/v2/regions/{regionId}/live_activities/{activityToken}:
    delete:
      operationId: unregisterLiveActivity
      summary: End a Live Activity subscription (no end push)
      parameters:
        - $ref: '#/components/parameters/RegionId'
        - name: activityToken
          in: path
          required: true
          schema: {type: string}
      responses:
        '204': {description: Deleted.}
        '404': {description: No such subscription.}
        '429': {description: Too many writes from this client address; see Retry-After.}
        '503': {description: The delete failed; nothing changed.}
  /api/v2/regions/{regionId}/push_registrations:
    post:
      operationId: registerPushToken
      summary: Upsert a device push token (30 per minute per client address, shared with DELETE)
      parameters:
        - $ref: '#/components/parameters/RegionId'
      requestBody:
        required: true
        content:
          application/x-www-form-urlencoded:
            schema: {$ref: '#/components/schemas/PushRegistrationRequest'}
          application/json:
            schema: {$ref: '#/components/schemas/PushRegistrationRequest'}
      responses:
        '204': {description: Registered and committed.}
        '404': {$ref: '#/components/responses/RegionNotFound'}
        '422':
          description: Invalid input.
          content:
            application/json:
              schema: {$ref: '#/components/schemas/ErrorWithMessages'}
        '429': {description: Throttled; see Retry-After.}
        '503': {description: Storage unavailable; nothing was written.}
    delete:
      operationId: unregisterPushToken
      summary: Opt out (token in the query, a form or a JSON body)
      parameters:
        - $ref: '#/components/parameters/RegionId'
        - name: token
          in: query
          required: true
          schema: {type: string}
      responses:
        '204': {description: Deleted.}
        '404': {description: No such registration in this region. Empty body.}
        '429': {description: Throttled; shares the bucket with POST.}
  /api/v2/regions/{regionId}/ghost_bus_reports:
    post:
      operationId: createGhostBusReport
      summary: Report a ghost bus (10/hour per address, 20/day per user_identifier)
      parameters:
        - $ref: '#/components/parameters/RegionId'
      requestBody:
        required: true
        content:
          application/x-www-form-urlencoded:
            schema: {$ref: '#/components/schemas/GhostBusReportRequest'}
          application/json:
            schema: {$ref: '#/components/schemas/GhostBusReportRequest'}
      responses:
        '201':
          description: Recorded.
          content:
            application/json:
              schema: {type: object, required: [id], properties: {id: {type: string}}}
        '403': {description: A JSON body over 8 KB.}
        '404': {$ref: '#/components/responses/RegionNotFound'}
        '422':
          description: Invalid input, or already_reported.
          content:
            application/json:
              schema: {$ref: '#/components/schemas/ErrorWithMessages'}
        '429': {description: Throttled.}
  /admin/api/regions:
    get:
      operationId: adminListRegions
      summary: Regions with their agency id and time zone
      security: [{bearer: []}]
      responses:
        '200': {description: Regions.}
        '401': {description: No valid API key.}
  /admin/api/regions/{id}/alerts:
    get:
      operationId: adminListAlerts
      summary: A region's alerts
      security: [{bearer: []}]
      parameters:
        - {name: id, in: path, required: true, schema: {type: integer}}
      responses:
        '200': {description: Alerts.}
        '401': {description: No valid API key.}
    post:
      operationId: adminCreateAlert
      summary: Create a draft alert
      security: [{bearer: []}]
      parameters:
        - {name: id, in: path, required: true, schema: {type: integer}}
      responses:
        '201': {description: Created.}
        '401': {description: No valid API key.}
        '422': {description: Invalid input.}
  /admin/api/alerts/{id}/sends:
    post:
      operationId: adminSendAlert
      summary: Start or resume a push send (audience all or test)
      security: [{bearer: []}]
      parameters:
        - {name: id, in: path, required: true, schema: {type: integer}}
      responses:
        '202': {description: Started.}
        '401': {description: No valid API key.}
        '409': {description: Running in another process.}
        '422': {description: Not published, or no transport.}
webhooks:
  alarmPush:
    post:
      operationId: alarmPushPayload
      summary: The data an alarm push carries (beside aps on iOS; a JSON string under arrival_and_departure in FCM data on Android)
      requestBody:
        content:
          application/json:
            schema:
              type: object
              required: [arrival_and_departure]
              properties:
                arrival_and_departure:
                  type: object
                  required: [region_id, stop_id, trip_id, service_date, vehicle_id, stop_sequence]
                  properties:
                    region_id: {type: integer}
                    stop_id: {type: string}
                    trip_id: {type: string}
                    service_date: {$ref: '#/components/schemas/EpochMilliseconds'}
                    vehicle_id: {type: [string, "null"]}
                    stop_sequence: {type: [integer, "null"]}
      responses:
        '200': {description: Accepted by the push gateway.}
  liveActivityPush:
    post:
      operationId: liveActivityPushPayload
      summary: Live Activity update and end pushes (apns-push-type liveactivity, topic <bundle id>.push-type.liveactivity, priority 10)
      requestBody:
        content:
          application/json:
            schema:
              type: object
              required: [event, content-state, timestamp]
              properties:
                event: {type: string, enum: [update, end]}
                content-state: {$ref: '#/components/schemas/LiveActivityContentState'}
                timestamp: {type: integer}
                stale-date: {type: integer}
                dismissal-date: {type: integer}
      responses:
        '200': {description: Accepted by APNs.}
components:
  securitySchemes:
    bearer: {type: http, scheme: bearer}
  parameters:
    RegionId:
      name: regionId
      in: path
      required: true
      schema: {type: string, pattern: '^[0-9]+(-.*)?$'}
    AlarmToken:
      name: alarmToken
      in: path
      required: true
      schema: {type: string}
    IfNoneMatch:
      name: If-None-Match
      in: header
      required: false
      schema: {type: string}
      description: Entity tags (or *) of copies the client holds; a match answers 304.
    IfModifiedSince:
      name: If-Modified-Since
      in: header
      required: false
      schema: {type: string}
      description: An HTTP date; read only without If-None-Match.
  headers:
    ETag:
      description: A strong tag of this representation; changes with the content and the minute's stamp.
      schema: {type: string}
    LastModified:
      description: When the region's alerts last changed.
      schema: {type: string}
    FeedCacheControl:
      description: public, max-age=60, stale-if-error=600
      schema: {type: string}
  requestBodies:
    SurveyResponseAmend:
      required: true
      content:
        application/x-www-form-urlencoded:
          schema: {$ref: '#/components/schemas/SurveyResponseAmendRequest'}
        application/json:
          schema: {$ref: '#/components/schemas/SurveyResponseAmendRequest'}
  responses:
    FeedNotModified:
      description: The client's copy is current; no body.
      headers:
        ETag: {$ref: '#/components/headers/ETag'}
        Cache-Control: {$ref: '#/components/headers/FeedCacheControl'}
    RegionNotFound:
      description: The region is not in this sidecar's directory.
      content:
        application/json:
          schema: {$ref: '#/components/schemas/SimpleError'}
    ResourceUrlCreated:
      description: Created; url ends in a 22-character token.
      content:
        application/json:
          schema: {type: object, required: [url], properties: {url: {type: string, format: uri}}}
    SurveyResponseAmended:
      description: Amended.
      content:
        application/json:
          schema: {$ref: '#/components/schemas/SurveyResponseCreated'}
    SurveyResponseNotFound:
      description: No such response.
      content:
        application/json:
          schema: {$ref: '#/components/schemas/SimpleError'}
    SurveyResponseInvalid:
      description: Invalid input.
      content:
        application/json:
          schema: {$ref: '#/components/schemas/LegacyErrors'}
  schemas:
    SimpleError:
      type: object
      required: [error]
      properties:
        error: {type: string}
    ErrorWithMessages:
      type: object
      required: [error, messages]
      properties:
        error: {type: string}
        messages: {type: array, items: {type: string}}
    LegacyErrors:
      type: object
      required: [errors]
      properties:
        errors: {type: array, items: {type: string}}
    ApnsSandboxParam:
      type: string
      description: 1, t, true, on (any case, trimmed) mean sandbox; anything else production.
    EpochMilliseconds:
      type: integer
      format: int64
    AlarmCreateRequestBase:
      type: object
      required: [user_push_id, stop_id, trip_id, service_date]
      properties:
        user_push_id: {type: string}
        stop_id: {type: string}
        trip_id: {type: string}
        service_date: {$ref: '#/components/schemas/EpochMilliseconds'}
        vehicle_id: {type: string}
        stop_sequence: {type: integer}
        seconds_before: {type: integer, default: 600}
        operating_system: {type: string, enum: [ios, android]}
    AlarmCreateRequestV1:
      allOf:
        - $ref: '#/components/schemas/AlarmCreateRequestBase'
    AlarmCreateRequestV2:
      allOf:
        - $ref: '#/components/schemas/AlarmCreateRequestBase'
        - type: object
          required: [operating_system]
          properties:
            apns_sandbox: {$ref: '#/components/schemas/ApnsSandboxParam'}
    LiveActivityCreateRequest:
      type: object
      required: [activity_id, push_token, stop_id, route_short_name, trip_headsign]
      properties:
        activity_id: {type: string}
        push_token: {type: string}
        stop_id: {type: string}
        route_short_name: {type: string}
        trip_headsign: {type: string}
        trip_id: {type: string}
        service_date: {$ref: '#/components/schemas/EpochMilliseconds'}
        vehicle_id: {type: string}
        stop_sequence: {type: integer}
        apns_sandbox: {$ref: '#/components/schemas/ApnsSandboxParam'}
    PushRegistrationRequest:
      type: object
      required: [token, operating_system]
      properties:
        token: {type: string, maxLength: 4096}
        operating_system: {type: string, enum: [ios, android]}
        locale: {type: string}
        apns_sandbox: {$ref: '#/components/schemas/ApnsSandboxParam'}
        test_device: {type: boolean, default: false}
        description: {type: string, maxLength: 255}
    GhostBusReportRequest:
      type: object
      required: [user_identifier, trip_identifier, service_date, wait_duration_minutes]
      properties:
        user_identifier: {type: string}
        trip_identifier: {type: string}
        service_date: {$ref: '#/components/schemas/EpochMilliseconds'}
        route_identifier: {type: string}
        stop_identifier: {type: string}
        vehicle_identifier: {type: string}
        stop_sequence: {type: integer}
        predicted: {type: boolean}
        schedule_deviation_minutes: {type: integer}
        wait_duration_minutes: {type: integer, enum: [5, 10, 15, 20, 30]}
        comment: {type: string, maxLength: 1000}
        user_latitude: {type: number, minimum: -90, maximum: 90}
        user_longitude: {type: number, minimum: -180, maximum: 180}
        scheduled_arrival_at: {$ref: '#/components/schemas/EpochMilliseconds'}
        predicted_arrival_at: {$ref: '#/components/schemas/EpochMilliseconds'}
        prediction_last_updated_at: {$ref: '#/components/schemas/EpochMilliseconds'}
    SurveyResponseCreateRequest:
      type: object
      required: [survey_id, user_identifier, responses]
      properties:
        survey_id: {type: integer}
        user_identifier: {type: string}
        stop_identifier: {type: string}
        stop_latitude: {type: number}
        stop_longitude: {type: number}
        responses: {type: string, description: A JSON-array-encoded string of SurveyAnswer objects.}
    SurveyResponseAmendRequest:
      type: object
      required: [responses]
      properties:
        responses: {type: string}
    SurveyAnswer:
      type: object
      required: [question_id, answer]
      properties:
        question_id: {type: integer}
        question_type: {type: string, enum: [text, radio, checkbox, external_survey]}
        question_label: {type: string}
        answer: {type: string}
    SurveyResponseCreated:
      type: object
      required: [survey_response]
      properties:
        survey_response:
          type: object
          required: [id, user_identifier, update_path]
          properties:
            id: {type: string}
            user_identifier: {type: string}
            update_path: {type: string}
    SurveyList:
      type: object
      required: [surveys, region]
      properties:
        surveys: {type: array, items: {$ref: '#/components/schemas/Survey'}}
        region:
          type: object
          required: [id, name]
          properties:
            id: {type: integer}
            name: {type: string}
    Survey:
      type: object
      required: [id, name, questions, study]
      properties:
        id: {type: integer}
        name: {type: string}
        start_date: {type: [string, "null"], format: date-time}
        end_date: {type: [string, "null"], format: date-time}
        created_at: {type: string, format: date-time}
        updated_at: {type: string, format: date-time}
        show_on_map: {type: boolean}
        show_on_stops: {type: boolean}
        always_visible: {type: boolean}
        allows_multiple_responses: {type: boolean}
        visible_stop_list: {type: [array, "null"], items: {type: string}}
        visible_route_list: {type: [array, "null"], items: {type: string}}
        study:
          type: object
          required: [id, name]
          properties:
            id: {type: integer}
            name: {type: string}
            description: {type: [string, "null"]}
        questions: {type: array, items: {$ref: '#/components/schemas/SurveyQuestion'}}
    SurveyQuestion:
      type: object
      required: [id, position, required, content]
      properties:
        id: {type: integer}
        position: {type: integer}
        required: {type: boolean}
        content:
          type: object
          required: [type, label_text]
          properties:
            type: {type: string, enum: [text, label, radio, checkbox, external_survey]}
            label_text: {type: string}
            options: {type: array, items: {type: string}}
            url: {type: string}
            survey_provider: {type: string}
            embedded_data_fields: {type: array, items: {type: string}}
            sdk_configuration_values: {type: object}
    WeatherForecast:
      type: object
      required: [latitude, longitude, region_identifier, region_name, retrieved_at, units, today_summary, current_forecast, hourly_forecast]
      properties:
        latitude: {type: number}
        longitude: {type: number}
        region_identifier: {type: integer}
        region_name: {type: string}
        retrieved_at: {type: string, format: date-time}
        units: {type: string}
        today_summary: {type: string}
        current_forecast: {$ref: '#/components/schemas/WeatherConditions'}
        hourly_forecast: {type: array, items: {$ref: '#/components/schemas/WeatherConditions'}}
    WeatherConditions:
      type: object
      required: [icon, summary, temperature, temperature_feels_like, precip_per_hour, precip_probability, wind_speed, time]
      properties:
        icon: {type: string}
        summary: {type: string}
        temperature: {type: number}
        temperature_feels_like: {type: number}
        precip_per_hour: {type: number}
        precip_probability: {type: number, minimum: 0, maximum: 1}
        wind_speed: {type: number}
        time: {type: integer}
    VehicleMatch:
      type: object
      required: [id, name, vehicle_id]
      properties:
        id: {type: string}
        name: {type: string}
        vehicle_id: {type: string}
    PaymentIntentRequest:
      type: object
      required: [donation_amount_in_cents, email]
      properties:
        donation_amount_in_cents: {type: integer, minimum: 1}
        donation_frequency: {type: string}
        name: {type: string}
        email: {type: string, format: email}
        test_mode: {type: string, default: "0"}
    OneTimePaymentIntentResponse:
      type: object
      required: [client_secret, id]
      properties:
        client_secret: {type: string}
        id: {type: string, format: uuid}
    RecurringPaymentIntentResponse:
      type: object
      required: [client_secret, customer_id, ephemeral_key, id]
      properties:
        client_secret: {type: string}
        customer_id: {type: string}
        ephemeral_key: {type: string}
        id: {type: string, format: uuid}
    LiveActivityContentState:
      type: object
      required: [arrivals]
      properties:
        arrivals:
          type: array
          maxItems: 3
          items:
            type: object
            required: [departure_time, schedule_status, schedule_deviation, is_arrival]
            properties:
              departure_time: {type: integer}
              schedule_status: {type: string, enum: [early, on_time, delayed, unknown]}
              schedule_deviation: {type: integer}
              is_arrival: {type: boolean}
"""#
}

/// `GET /openapi.yaml`: this server's contract, as a feature.
struct OpenAPIRoutes: Feature {
    var routes: [Route] { OpenAPIDocument.routes }
}
