#!/usr/bin/env python3
"""Checks that this server's own OpenAPI description (fetched from
/openapi.yaml) contains every operation, webhook and schema of the shared
contract, with compatible shapes: the same types, enums, properties and
required sets, and every documented response status.
Usage: check_openapi_superset.py SHARED_SPEC BASE_URL"""
import sys
import urllib.request

import yaml

shared = yaml.safe_load(open(sys.argv[1]))
with urllib.request.urlopen(sys.argv[2] + "/openapi.yaml") as response:
    ours = yaml.safe_load(response.read())
problems = []


def deref(document, node):
    seen = 0
    while isinstance(node, dict) and "$ref" in node and seen < 20:
        target = document
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target[part]
        node = target
        seen += 1
    return node


def flatten(document, schema):
    """A schema with allOf merged and refs resolved (one level)."""
    schema = deref(document, schema)
    if not isinstance(schema, dict):
        return schema
    if "allOf" in schema:
        merged = {"type": "object", "properties": {}, "required": []}
        for part in schema["allOf"]:
            part = flatten(document, part)
            merged["properties"].update(part.get("properties", {}))
            merged["required"] += part.get("required", [])
        return merged
    return schema


def types(schema):
    value = schema.get("type")
    return set(value) if isinstance(value, list) else ({value} if value else set())


def compatible(where, mine, theirs, depth=0, direction="response"):
    """Responses may promise more (require a superset of keys); request
    bodies may demand less (require a subset)."""
    if depth > 12:
        return
    mine, theirs = flatten(ours, mine), flatten(shared, theirs)
    if not isinstance(theirs, dict) or not isinstance(mine, dict):
        return
    if types(theirs) and types(mine) != types(theirs):
        problems.append(f"{where}: type {sorted(types(mine))} differs from the contract's {sorted(types(theirs))}")
    if "enum" in theirs and sorted(map(str, mine.get("enum", []))) != sorted(map(str, theirs["enum"])):
        problems.append(f"{where}: enum {mine.get('enum')} differs from {theirs['enum']}")
    mine_required, their_required = set(mine.get("required", [])), set(theirs.get("required", []))
    if direction == "response" and not mine_required >= their_required:
        problems.append(f"{where}: does not require {sorted(their_required - mine_required)}, which the contract promises")
    if direction == "request" and not mine_required <= their_required:
        problems.append(f"{where}: requires {sorted(mine_required - their_required)}, which the contract does not")
    for name, sub in theirs.get("properties", {}).items():
        if name not in mine.get("properties", {}):
            problems.append(f"{where}: property {name} is missing")
        else:
            compatible(f"{where}.{name}", mine["properties"][name], sub, depth + 1, direction)
    if "items" in theirs:
        if "items" not in mine:
            problems.append(f"{where}: items are missing")
        else:
            compatible(f"{where}[]", mine["items"], theirs["items"], depth + 1, direction)
    if "oneOf" in theirs:
        if len(mine.get("oneOf", [])) != len(theirs["oneOf"]):
            problems.append(f"{where}: oneOf has {len(mine.get('oneOf', []))} choices, the contract {len(theirs['oneOf'])}")
        else:
            for index, (a, b) in enumerate(zip(mine["oneOf"], theirs["oneOf"])):
                compatible(f"{where}.oneOf[{index}]", a, b, depth + 1, direction)


operations = 0
for section in ("paths", "webhooks"):
    for path, item in shared.get(section, {}).items():
        for method, operation in item.items():
            if method not in ("get", "post", "put", "patch", "delete"):
                continue
            operations += 1
            where = f"{section} {method.upper()} {path}"
            mine = ours.get(section, {}).get(path, {}).get(method)
            if mine is None:
                problems.append(f"{where}: missing")
                continue
            for status, response in operation.get("responses", {}).items():
                response = deref(shared, response)
                if str(status) not in {str(code) for code in mine.get("responses", {})}:
                    problems.append(f"{where}: response {status} is not documented")
                    continue
                mine_response = deref(ours, mine["responses"].get(status) or mine["responses"].get(int(status)))
                for media, content in (response.get("content") or {}).items():
                    mine_content = (mine_response.get("content") or {}).get(media)
                    if mine_content is None:
                        problems.append(f"{where} {status}: no {media} content")
                    elif "schema" in content:
                        compatible(f"{where} {status} {media}", mine_content.get("schema", {}), content["schema"])
            body = deref(shared, operation.get("requestBody") or {})
            for media, content in (body.get("content") or {}).items():
                mine_body = deref(ours, mine.get("requestBody") or {})
                mine_content = (mine_body.get("content") or {}).get(media)
                if mine_content is None:
                    problems.append(f"{where}: request body {media} missing")
                elif "schema" in content:
                    compatible(f"{where} request {media}", mine_content.get("schema", {}), content["schema"], direction="request")

schemas = 0
for name, schema in shared.get("components", {}).get("schemas", {}).items():
    schemas += 1
    if name not in ours.get("components", {}).get("schemas", {}):
        problems.append(f"schema {name}: missing")
    else:
        request_side = name.endswith("Request") or name in ("AlarmCreateRequestBase", "AlarmCreateRequestV1", "AlarmCreateRequestV2",
                                                            "ApnsSandboxParam", "EpochMilliseconds", "SurveyAnswer")
        compatible(f"schema {name}", ours["components"]["schemas"][name], schema, direction="request" if request_side else "response")

for problem in problems:
    print("openapi:", problem)
print(f"openapi: {operations} operations and {schemas} schemas of the contract checked against /openapi.yaml; {len(problems)} problems")
sys.exit(1 if problems else 0)
