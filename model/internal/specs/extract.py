#!/usr/bin/env python3
"""Cuts one request schema out of an OpenAPI 3.1 document as a standalone
JSON Schema (draft 2020-12) for model/internal/specs.

    python3 model/internal/specs/extract.py OPENAPI.yaml ROOT SOURCE > schemas/NAME.json

ROOT is a component name (CreateChatCompletionRequest); SOURCE is what the
$comment cites (repository, commit, info.version). The root and every
component it reaches are kept, their $refs pointed at #/$defs; what only
documents (description, title, example, default, x-*, discriminator,
deprecated) is dropped; OpenAPI's `nullable` becomes a null type; a
component's $recursiveRef to itself (draft 2019-09) becomes a $ref; and every
object that is not one part of an allOf is closed (unevaluatedProperties:
false), so a key fsd misspells or invents fails validation instead of
passing as an extension. REFINE adds what a description states in words
but the document does not encode (a name's characters and length).
"""
import json
import sys

import yaml

DROP = {"description", "title", "example", "examples", "default", "discriminator", "deprecated"}

# Constraints the document states only in a description, as JSON Schema.
REFINE = {
    # "Must be a-z, A-Z, 0-9, or contain underscores and dashes, with a maximum length of 64."
    ("FunctionObject", "name"): {"pattern": "^[a-zA-Z0-9_-]{1,64}$"},
    ("ResponseFormatJsonSchema", "json_schema.name"): {"pattern": "^[a-zA-Z0-9_-]{1,64}$"},
    ("TextResponseFormatJsonSchema", "name"): {"pattern": "^[a-zA-Z0-9_-]{1,64}$"},
}


def main():
    path, root, source = sys.argv[1], sys.argv[2], sys.argv[3]
    doc = yaml.safe_load(open(path))
    comps = doc["components"]["schemas"]
    order, in_allof = [], set()

    def reach(node, under_allof=False):
        if isinstance(node, dict):
            ref = node.get("$ref")
            if ref:
                name = ref.rsplit("/", 1)[-1]
                if under_allof:
                    in_allof.add(name)
                if name not in order:
                    order.append(name)
                    reach(comps[name])
            for k, v in node.items():
                if k == "allOf":
                    for part in v:
                        reach(part, True)
                elif k != "$ref":
                    reach(v)
        elif isinstance(node, list):
            for v in node:
                reach(v)

    order.append(root)
    reach(comps[root])

    def clean(node, name, path="", part=False):
        """node is a schema (part: one of an allOf); returns the JSON Schema form."""
        if not isinstance(node, dict):
            return node
        out = {}
        for k, v in node.items():
            if k in DROP or k.startswith("x-") or k == "nullable":
                continue
            if k == "$ref":
                out[k] = "#/$defs/" + v.rsplit("/", 1)[-1]
            elif k == "$recursiveAnchor":
                continue  # 2019-09's self-recursion: its $recursiveRef becomes a $ref
            elif k == "$recursiveRef" and v == "#":
                out["$ref"] = "#/$defs/" + name
            elif k in ("properties", "$defs", "patternProperties"):
                out[k] = {p: clean(s, name, (path + "." + p).lstrip(".")) for p, s in v.items()}
            elif k in ("items", "additionalProperties", "not", "contains", "propertyNames", "unevaluatedProperties"):
                out[k] = clean(v, name, path) if isinstance(v, dict) else v
            elif k == "allOf":
                out[k] = [clean(s, name, path, True) for s in v]
            elif k == "oneOf" and "discriminator" in node:
                # A discriminator picks one choice by the property's value;
                # where two choices share it (an input message is both an
                # EasyInputMessage and an InputMessage), JSON Schema's oneOf
                # refuses a body that fits both, so it is an anyOf.
                out["anyOf"] = [clean(s, name, path) for s in v]
            elif k in ("anyOf", "oneOf", "prefixItems"):
                out[k] = [clean(s, name, path) for s in v]
            else:
                out[k] = v
        out.update(REFINE.get((name, path), {}))
        if node.get("nullable"):
            t = out.get("type")
            if isinstance(t, str):
                out["type"] = [t, "null"]
                if "enum" in out:
                    out["enum"] = out["enum"] + [None]
            else:
                out = {"anyOf": [out, {"type": "null"}]}
        closable = ("properties" in out or "allOf" in out) and "additionalProperties" not in out
        if closable and not part and not (path == "" and name in in_allof):
            out["unevaluatedProperties"] = False
        return out

    defs = {n: clean(comps[n], n) for n in order[1:]}
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$comment": "Cut by extract.py from " + source + " (component " + root + "): "
        "descriptions dropped, nullable as a null type, objects closed (unevaluatedProperties: false) "
        "so an unknown key fails, and a name's pattern from its description.",
    }
    schema.update(clean(comps[root], root))
    schema["$defs"] = defs
    json.dump(schema, sys.stdout, indent=1, sort_keys=True, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
