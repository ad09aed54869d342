"""The client against the OpenAPI document: a method per operation, a dataclass field per property."""

import dataclasses
import inspect
import json
import os
import re
import unittest

import aivis
from aivis import models

OPENAPI = os.environ.get("AIVIS_OPENAPI") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "core", "api", "openapi.json")


def method_name(operation_id):
    """listWebhookDeliveries -> list_webhook_deliveries, getOpenAPIDocument -> get_open_api_document."""
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", operation_id)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()


def schema_ref(ps):
    """The schema a property refers to (itself, nullable, or as an array's items) and whether as a list."""
    if "$ref" in ps:
        return ps["$ref"].rsplit("/", 1)[1], False
    for k in ("oneOf", "anyOf", "allOf"):
        refs = [o for o in ps.get(k, []) if "$ref" in o]
        if len(refs) == 1:
            return refs[0]["$ref"].rsplit("/", 1)[1], False
    t = ps.get("type")
    if t == "array" or (isinstance(t, list) and "array" in t):
        ref, _ = schema_ref(ps.get("items", {}))
        if ref:
            return ref, True
    return None, False


class OpenAPITest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(OPENAPI, encoding="utf-8") as f:
            cls.doc = json.load(f)

    def test_every_operation_has_a_method(self):
        missing = []
        for path, item in self.doc["paths"].items():
            for verb, op in item.items():
                if isinstance(op, dict) and "operationId" in op:
                    name = method_name(op["operationId"])
                    if not callable(getattr(aivis.Client, name, None)):
                        missing.append("%s (%s %s): Client.%s" % (op["operationId"], verb.upper(), path, name))
        self.assertEqual(missing, [], "operations without a method")

    def test_every_post_takes_an_idempotency_key(self):
        without = []
        for path, item in self.doc["paths"].items():
            op = item.get("post")
            if isinstance(op, dict) and "operationId" in op:
                name = method_name(op["operationId"])
                if "idempotency_key" not in inspect.signature(getattr(aivis.Client, name)).parameters:
                    without.append(name)
        self.assertEqual(without, [], "POST methods without idempotency_key")

    def test_dataclasses_match_schemas(self):
        schemas = self.doc["components"]["schemas"]
        classes = [c for c in vars(models).values() if isinstance(c, type) and issubclass(c, models.Model)
                   and c is not models.Model]
        self.assertGreater(len(classes), 20)
        for cls in classes:
            with self.subTest(cls.__name__):
                # Event is any event (AnyEvent): every event kind has these four.
                name = "VisibilityChangeEvent" if cls is models.Event else cls.__name__
                self.assertIn(name, schemas)
                want = set(schemas[name]["properties"])
                got = {f.name for f in dataclasses.fields(cls)} - {"extra"}
                self.assertEqual(got, want, "the fields of %s" % cls.__name__)
                # A property that is an object schema of the document (or
                # an array of them) is built as its class; an event's data
                # is each kind's own, a dictionary.
                for prop, ps in schemas[name]["properties"].items() if cls is not models.Event else ():
                    ref, is_list = schema_ref(ps)
                    if ref and "properties" in schemas[ref] and all(p.isidentifier() for p in schemas[ref]["properties"]):
                        self.assertEqual(models._NESTED.get(cls, {}).get(prop), (getattr(models, ref, None), is_list),
                                         "%s.%s is a %s" % (cls.__name__, prop, ref))
                self.assertIs(getattr(aivis, cls.__name__), cls)
        # The package exports the resources, not what models.py imports.
        self.assertFalse(hasattr(aivis, "Dict") or hasattr(aivis, "dataclass"))


if __name__ == "__main__":
    unittest.main()
